"""The import structure (docs/architecture.md, "The layers"): read from the source, not imported.

- ir/ imports nothing of the other layers; scheduler/ and backends/ import ir/ only (and
  themselves); the front end (lazytensor/) sits on all three.
- Inside the library, imports are relative: no module imports the `lazytensor` package itself.
- No import cycle: module-level imports form a DAG (the front end's layers: the tensor core,
  then the op families, then the namespace, then the adapters over it).
- Imports inside functions only for the optional backends (lazytensor.backends.*), which need
  drivers a machine may lack.
"""
import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
# directory -> the package name it is installed as (pyproject.toml maps ir/, scheduler/ and
# backends/ into lazytensor)
PACKAGES = {"lazytensor": "lazytensor", "ir": "lazytensor.ir", "scheduler": "lazytensor.scheduler",
            "backends": "lazytensor.backends"}
LAYER_OF = {"lazytensor.ir": "ir", "lazytensor.scheduler": "scheduler", "lazytensor.backends": "backends"}
MAY_IMPORT = {"ir": {"ir"}, "scheduler": {"ir", "scheduler"}, "backends": {"ir", "backends"},
              "front": {"ir", "scheduler", "backends", "front"}}


def _modules() -> dict[str, pathlib.Path]:
    found = {}
    for directory, package in PACKAGES.items():
        for path in sorted((ROOT / directory).rglob("*.py")):
            parts = list(path.relative_to(ROOT / directory).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join([package, *parts])] = path
    return found


MODULES = _modules()


def _layer(module: str) -> str:
    for prefix, layer in LAYER_OF.items():
        if module == prefix or module.startswith(prefix + "."):
            return layer
    return "front"


def _is_package(module: str) -> bool:
    return MODULES[module].name == "__init__.py"


def _resolve(module: str, node: ast.ImportFrom) -> list[str]:
    """The library's modules that `from ... import ...` in `module` imports."""
    package = module if _is_package(module) else module.rpartition(".")[0]
    base = package
    for _ in range(node.level - 1):
        base = base.rpartition(".")[0]
    if node.level == 0:
        base = node.module or ""
    elif node.module:
        base = f"{base}.{node.module}"
    targets = [f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in MODULES]
    return targets or ([base] if base in MODULES else [])


def _imports(module: str):
    """(target module, line, whether at module level) for each import of the library's modules;
    imports under `if TYPE_CHECKING:` are for annotations only and left out."""
    tree = ast.parse(MODULES[module].read_text())
    stack = [(node, True) for node in tree.body]
    while stack:
        node, top = stack.pop()
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "lazytensor" or alias.name.startswith("lazytensor."):
                    yield alias.name, node.lineno, top
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and not (node.module or "").startswith("lazytensor"):
                continue
            for target in _resolve(module, node) or [node.module]:
                yield target, node.lineno, top
        inner = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef))
        stack.extend((child, top and not inner) for child in ast.iter_child_nodes(node))


IMPORTS = {module: list(_imports(module)) for module in MODULES}


def test_the_modules_are_found():
    assert {"lazytensor.tensor", "lazytensor.ir.graph", "lazytensor.scheduler.fusion",
            "lazytensor.backends.cpu.render"} <= MODULES.keys()


def test_no_module_imports_the_package_itself():
    found = [f"{module}:{line}" for module, imports in IMPORTS.items() for target, line, _ in imports
             if target == "lazytensor"]
    assert not found, f"import the module you need relatively, not the package: {found}"


def test_layers_import_downwards():
    wrong = [f"{module}:{line} imports {target}" for module, imports in IMPORTS.items()
             for target, line, _ in imports if _layer(target) not in MAY_IMPORT[_layer(module)]]
    assert not wrong, wrong


def test_in_function_imports_only_for_optional_backends():
    inner = [f"{module}:{line} imports {target}" for module, imports in IMPORTS.items()
             for target, line, top in imports
             if not top and _layer(module) == "front" and _layer(target) != "backends"]
    assert not inner, f"import at module level (the layers run one way, so no cycle needs hiding): {inner}"


def _ancestors(module: str) -> list[str]:
    """The packages whose __init__ runs first when `module` is imported (not the root: its
    __init__ is the entry point that imports everything)."""
    parts = module.split(".")
    return [".".join(parts[:n]) for n in range(2, len(parts)) if ".".join(parts[:n]) in MODULES]


def test_no_import_cycle():
    # (a package's own modules import each other while its __init__ runs: no edge to it)
    edges = {module: sorted({t for target, _, top in imports if top and target in MODULES
                             for t in [target, *_ancestors(target)]
                             if t != module and t not in _ancestors(module)})
             for module, imports in IMPORTS.items() if module != "lazytensor"}
    state: dict[str, int] = {}   # 1: on the current path, 2: done
    for start in edges:
        if state.get(start):
            continue
        path, stack = [start], [iter(edges[start])]
        state[start] = 1
        while stack:
            target = next(stack[-1], None)
            if target is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(target) == 1:
                cycle = path[path.index(target):] + [target]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            elif not state.get(target) and target in edges:
                state[target] = 1
                path.append(target)
                stack.append(iter(edges[target]))
