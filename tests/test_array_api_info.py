"""The Array API's data-type functions (finfo, iinfo, result_type, can_cast, isdtype) and the
inspection namespace, against numpy and the reference implementation array-api-strict (pinned to
standard version 2023.12) on every dtype and every pair of dtypes. array-api-strict has no
float16, so float16 is checked against numpy only. Where the standard leaves a mixed-kind case to
the implementation (array-api-strict raises TypeError), lazytensor answers as numpy 2 does."""
import doctest
import itertools
import types

import numpy as np
import pytest

import lazytensor as lt
from conftest import DTYPES
from lazytensor import info

xp = pytest.importorskip("array_api_strict")

KIND_NAMES = ["bool", "signed integer", "unsigned integer", "integral", "real floating", "complex floating",
              "numeric"]
FLOATS = [d for d in DTYPES if d.is_float]
INTEGERS = [d for d in DTYPES if d.is_integer]
PAIRS = list(itertools.product(DTYPES, DTYPES))


@pytest.fixture(autouse=True)
def standard_2023_12():
    with xp.ArrayAPIStrictFlags(api_version="2023.12"):
        yield


def strict(dtype):
    """array-api-strict's dtype of the same name (None for float16, which it does not have)."""
    return getattr(xp, dtype.name, None)


def strict_outcome(fn, *args, **kwargs):
    """What array-api-strict's `fn` returns, or the exception class it raises."""
    try:
        return fn(*args, **kwargs)
    except Exception as error:  # noqa: BLE001 - the class is the answer
        return type(error)


def name(dtype) -> str:
    return dtype.name


# ---- finfo / iinfo --------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOATS, ids=name)
def test_finfo_matches_numpy_and_strict(dtype):
    got = info.finfo(dtype)
    want = np.finfo(dtype.np)
    assert got.dtype is dtype
    assert got.bits == want.bits == 8 * dtype.itemsize
    for field in ("eps", "max", "min", "smallest_normal"):
        value = getattr(got, field)
        assert type(value) is float, f"finfo({dtype.name}).{field} should be a Python float"
        assert value == float(getattr(want, field)), field
    if strict(dtype) is not None:
        reference = xp.finfo(strict(dtype))
        assert (got.bits, got.eps, got.max, got.min, got.smallest_normal) == (
            reference.bits, reference.eps, reference.max, reference.min, reference.smallest_normal)
        assert str(reference.dtype) == f"array_api_strict.{dtype.name}"


@pytest.mark.parametrize("dtype", INTEGERS, ids=name)
def test_iinfo_matches_numpy_and_strict(dtype):
    got = info.iinfo(dtype)
    want = np.iinfo(dtype.np)
    assert got.dtype is dtype
    assert (got.bits, got.min, got.max) == (want.bits, int(want.min), int(want.max))
    assert type(got.min) is int and type(got.max) is int
    reference = xp.iinfo(strict(dtype))
    assert (got.bits, got.min, got.max) == (reference.bits, reference.min, reference.max)


@pytest.mark.parametrize("dtype", FLOATS + INTEGERS, ids=name)
def test_finfo_iinfo_accept_every_spelling_of_a_dtype(dtype):
    function = info.finfo if dtype.is_float else info.iinfo
    tensor = lt.zeros(3, dtype=dtype)
    answers = {function(like) for like in (dtype, dtype.np, dtype.np.type, dtype.name, tensor)}
    assert answers == {function(dtype)}


@pytest.mark.parametrize("dtype", DTYPES, ids=name)
def test_finfo_iinfo_wrong_kind_raise_as_strict_does(dtype):
    for function, right_kind in ((info.finfo, dtype.is_float), (info.iinfo, dtype.is_integer)):
        if right_kind:
            continue
        with pytest.raises(TypeError, match=dtype.name):
            function(dtype)
        with pytest.raises(TypeError):
            function(lt.zeros(2, dtype=dtype))
        if strict(dtype) is not None:
            reference = strict_outcome(getattr(xp, function.__name__), strict(dtype))
            assert isinstance(reference, type) and issubclass(reference, Exception)
            with pytest.raises(reference):
                function(dtype)
        numpy_function = getattr(np, function.__name__)
        with pytest.raises(strict_outcome(numpy_function, dtype.np)):
            function(dtype)


@pytest.mark.parametrize("bad", [None, 1.5, 3, "not_a_dtype", [1.0]], ids=repr)
def test_finfo_iinfo_reject_what_is_not_a_dtype(bad):
    for function in (info.finfo, info.iinfo):
        with pytest.raises(TypeError):
            function(bad)
        assert strict_outcome(getattr(xp, function.__name__), bad) is TypeError


# ---- result_type ------------------------------------------------------------------------------------

def test_result_type_of_every_pair_matches_numpy_and_strict():
    mixed_kind_pairs = []
    for a, b in PAIRS:
        got = info.result_type(a, b)
        assert isinstance(got, lt.DType)
        assert got == np.result_type(a.np, b.np), (a, b)
        if strict(a) is None or strict(b) is None:
            continue
        reference = strict_outcome(xp.result_type, strict(a), strict(b))
        if reference is TypeError:
            mixed_kind_pairs.append((a, b))
        else:
            assert str(reference) == f"array_api_strict.{got.name}", (a, b)
    # The standard leaves exactly these pairs open: bool with a number, integer with float, and
    # a signed integer with uint64 (no integer dtype holds both).
    def category(dtype):
        return "integer" if dtype.is_integer else dtype.kind
    open_pairs = [(a, b) for a, b in PAIRS if strict(a) is not None and strict(b) is not None
                  and (category(a) != category(b) or {a.kind, b.kind} == {"i", "u"} and lt.uint64 in (a, b))]
    assert mixed_kind_pairs == open_pairs


def test_result_type_of_every_triple_matches_numpy():
    for a, b, c in itertools.product(DTYPES, repeat=3):
        assert info.result_type(a, b, c) == np.result_type(a.np, b.np, c.np), (a, b, c)


def test_result_type_single_dtype_is_itself():
    for dtype in DTYPES:
        assert info.result_type(dtype) is dtype
        if strict(dtype) is not None:
            assert str(xp.result_type(strict(dtype))) == f"array_api_strict.{dtype.name}"


def test_result_type_counts_tensors_by_dtype():
    tensors = {dtype: lt.zeros(2, dtype=dtype) for dtype in DTYPES}
    for a, b in PAIRS:
        assert info.result_type(tensors[a], tensors[b]) is info.result_type(a, b)
        assert info.result_type(tensors[a], b) is info.result_type(a, b)


def test_result_type_is_what_lazytensor_operations_give():
    tensors = {dtype: lt.zeros(2, dtype=dtype) for dtype in DTYPES}
    for a, b in PAIRS:
        assert (tensors[a] + tensors[b]).dtype is info.result_type(a, b), (a, b)
    for dtype, scalar in itertools.product(DTYPES, (True, 1, 1.0)):
        assert (tensors[dtype] + scalar).dtype is info.result_type(dtype, scalar), (dtype, scalar)


@pytest.mark.parametrize("scalar", [True, 1, -7, 1.0, 1000], ids=repr)
def test_result_type_python_scalars_are_weak(scalar):
    for dtype in DTYPES:
        got = info.result_type(dtype, scalar)
        assert got == np.result_type(dtype.np, scalar), (dtype, scalar)
        # Weak: a scalar of the dtype's own kind or a lower one (bool < int < float) never
        # changes the dtype, whatever its value.
        if {bool: 0, int: 1, float: 2}[type(scalar)] <= {"b": 0, "i": 1, "u": 1, "f": 2}[dtype.kind]:
            assert got is dtype
    # The standard's 2024.12 revision (which added scalars) gives the same answer wherever it
    # defines one; it raises for the mixed kinds it leaves open and for out-of-range ints.
    with xp.ArrayAPIStrictFlags(api_version="2024.12"):
        for dtype in DTYPES:
            if strict(dtype) is None:
                continue
            reference = strict_outcome(xp.result_type, strict(dtype), scalar)
            if not isinstance(reference, type):
                assert str(reference) == f"array_api_strict.{info.result_type(dtype, scalar).name}"


def test_result_type_numpy_scalars_are_strong():
    assert info.result_type(lt.float32, np.float64(1.0)) is lt.float64
    assert info.result_type(lt.int8, np.int32(1)) is lt.int32


def test_result_type_needs_an_operand():
    with pytest.raises(ValueError):
        info.result_type()


@pytest.mark.parametrize("args, want", [((1,), lt.int64), ((1, 2.0), lt.float32), ((True, 1), lt.int64),
                                        ((False,), lt.bool), ((1j, 2.0, True), lt.complex64)], ids=repr)
def test_result_type_of_python_scalars_alone_is_the_default_of_their_kind(args, want):
    """The standard leaves it open (array-api-strict refuses); numpy and PyTorch give their
    default type of the highest kind, and SciPy relies on it (result_type(0, 1.0))."""
    assert info.result_type(*args) is want


@pytest.mark.parametrize("bad", [None, "not_a_dtype", [1]], ids=repr)
def test_result_type_rejects_bad_operands(bad):
    with pytest.raises(TypeError):
        info.result_type(lt.int8, bad)
    assert strict_outcome(xp.result_type, xp.int8, bad) is TypeError


# ---- can_cast ---------------------------------------------------------------------------------------

def test_can_cast_every_pair_matches_numpy_safe_casting_and_strict():
    for a, b in PAIRS:
        got = info.can_cast(a, b)
        assert type(got) is bool
        assert got == np.can_cast(a.np, b.np, casting="safe"), (a, b)
        assert info.can_cast(lt.zeros(1, dtype=a), b) == got
        if strict(a) is None or strict(b) is None:
            continue
        reference = xp.can_cast(strict(a), strict(b))
        if reference != got:
            # array-api-strict only allows casts within a kind; lazytensor also allows the safe
            # mixed-kind casts (bool -> number, small integer -> wider float), as numpy does.
            assert reference is False and a.kind != b.kind, (a, b)
        if a.kind == b.kind or {a.kind, b.kind} == {"i", "u"}:
            assert got == reference, (a, b)


def test_can_cast_to_self_and_down_casts():
    for dtype in DTYPES:
        assert info.can_cast(dtype, dtype)
    assert not info.can_cast(lt.float64, lt.float32)
    assert not info.can_cast(lt.int8, lt.uint64)
    assert not info.can_cast(lt.float16, lt.int64)


@pytest.mark.parametrize("from_, to", [(1, lt.int64), (None, lt.int64), (lt.int8, None), (lt.int8, "not_a_dtype")],
                         ids=repr)
def test_can_cast_rejects_bad_arguments(from_, to):
    with pytest.raises(TypeError):
        info.can_cast(from_, to)
    strict_args = [strict(x) if isinstance(x, lt.DType) else x for x in (from_, to)]
    assert strict_outcome(xp.can_cast, *strict_args) is TypeError


def test_can_cast_to_a_tensor_is_a_type_error():
    with pytest.raises(TypeError, match="dtype"):
        info.can_cast(lt.int8, lt.zeros(1, dtype=lt.int64))
    assert strict_outcome(xp.can_cast, xp.int8, xp.zeros(1, dtype=xp.int64)) is TypeError


# ---- isdtype ----------------------------------------------------------------------------------------

KINDS = KIND_NAMES + DTYPES + [("bool", "real floating"), ("signed integer", lt.uint8), (), (lt.float16, lt.float64)]


@pytest.mark.parametrize("dtype", DTYPES, ids=name)
def test_isdtype_every_kind_matches_numpy_and_strict(dtype):
    for kind in KINDS:
        got = info.isdtype(dtype, kind)
        assert type(got) is bool
        numpy_kind = tuple(k.np if isinstance(k, lt.DType) else k for k in kind) if isinstance(kind, tuple) else (
            kind.np if isinstance(kind, lt.DType) else kind)
        assert got == np.isdtype(dtype.np, numpy_kind), (dtype, kind)
        assert info.isdtype(dtype.np, kind) == got and info.isdtype(dtype.np.type, kind) == got
        kinds_in_strict = kind if isinstance(kind, tuple) else (kind,)
        if strict(dtype) is None or any(isinstance(k, lt.DType) and strict(k) is None for k in kinds_in_strict):
            continue
        strict_kind = tuple(strict(k) if isinstance(k, lt.DType) else k for k in kind) if isinstance(kind, tuple) else (
            strict(kind) if isinstance(kind, lt.DType) else kind)
        assert got == xp.isdtype(strict(dtype), strict_kind), (dtype, kind)


def test_isdtype_kinds_partition_the_dtypes():
    for dtype in DTYPES:
        kinds = ("bool", "signed integer", "unsigned integer", "real floating", "complex floating")
        assert sum(info.isdtype(dtype, k) for k in kinds) == 1
        assert info.isdtype(dtype, "numeric") == (not dtype.is_bool)


@pytest.mark.parametrize("kind", ["foo", "integer", ("real floating", "floating"), 1, None, ["integral"],
                                  (("integral",),), 1.5], ids=repr)
def test_isdtype_bad_kind_raises_as_strict_does(kind):
    reference = strict_outcome(xp.isdtype, xp.int8, kind)
    assert isinstance(reference, type) and reference in (TypeError, ValueError)
    with pytest.raises(reference) as raised:
        info.isdtype(lt.int8, kind)
    assert type(raised.value) is reference


@pytest.mark.parametrize("dtype", ["int8", None, int, 3, lt.zeros(1)], ids=repr)
def test_isdtype_needs_a_dtype(dtype):
    strict_dtype = xp.zeros(1) if isinstance(dtype, lt.Tensor) else dtype
    assert strict_outcome(xp.isdtype, strict_dtype, "integral") is TypeError
    with pytest.raises(TypeError):
        info.isdtype(dtype, "integral")


# ---- the inspection namespace -----------------------------------------------------------------------

def test_info_capabilities_devices_and_defaults():
    namespace = info.__array_namespace_info__()
    assert isinstance(namespace, info.Info)
    reference = xp.__array_namespace_info__()
    capabilities = namespace.capabilities()
    assert set(reference.capabilities()) <= set(capabilities)
    assert capabilities == {"boolean indexing": False, "data-dependent shapes": False, "max dimensions": 64}
    assert namespace.default_device() == "cpu"
    assert namespace.devices() == lt.devices()
    assert namespace.default_device() in namespace.devices()
    defaults = namespace.default_dtypes()
    assert set(defaults) == set(reference.default_dtypes())
    assert defaults == {"real floating": lt.float32, "integral": lt.int64, "indexing": lt.int64,
                        "complex floating": lt.complex64}
    assert namespace.default_dtypes(device="cpu") == defaults
    # The defaults are what creation functions actually pick.
    assert lt.asarray([1.0]).dtype is defaults["real floating"]
    assert lt.asarray([1]).dtype is defaults["integral"]


def test_info_dtypes_all_and_by_kind():
    namespace = info.__array_namespace_info__()
    reference = xp.__array_namespace_info__()
    everything = namespace.dtypes()
    every = DTYPES + [lt.complex64, lt.complex128]
    # float16 is no standard dtype: usable (an extra dtype), but not listed
    standard = [d for d in every if d is not lt.float16]
    assert everything == {d.name: d for d in standard}
    assert set(everything) == set(reference.dtypes())
    for kind in KIND_NAMES + [("bool", "unsigned integer"), ()]:
        got = namespace.dtypes(kind=kind)
        assert got == {d.name: d for d in standard if info.isdtype(d, kind)}, kind
        assert set(got) == set(reference.dtypes(kind=kind)), kind
    assert namespace.dtypes(kind="complex floating") == {"complex64": lt.complex64, "complex128": lt.complex128}
    assert namespace.dtypes(device="cpu", kind="real floating") == {"float32": lt.float32, "float64": lt.float64}
    assert info.isdtype(lt.float16, "real floating") and lt.ones(2, dtype=lt.float16).dtype is lt.float16


@pytest.mark.parametrize("kind", ["foo", 1, lt.int8, ("bool", "foo")], ids=repr)
def test_info_dtypes_bad_kind_raises_as_strict_does(kind):
    strict_kind = strict(kind) if isinstance(kind, lt.DType) else kind
    reference = strict_outcome(xp.__array_namespace_info__().dtypes, **{"kind": strict_kind})
    assert reference is ValueError
    with pytest.raises(ValueError):
        info.__array_namespace_info__().dtypes(kind=kind)


def test_info_unknown_device_is_a_value_error():
    namespace = info.__array_namespace_info__()
    with pytest.raises(ValueError, match="not available"):
        namespace.dtypes(device="tpu:7")
    with pytest.raises(ValueError, match="not available"):
        namespace.default_dtypes(device="tpu:7")


def test_info_arguments_are_keyword_only_as_in_strict():
    namespace = info.__array_namespace_info__()
    assert strict_outcome(xp.__array_namespace_info__().dtypes, None, "bool") is TypeError
    with pytest.raises(TypeError):
        namespace.dtypes(None, "bool")
    with pytest.raises(TypeError):
        namespace.default_dtypes("cpu")


# ---- the module as a whole --------------------------------------------------------------------------

def test_version_and_all():
    assert info.__array_api_version__ == "2025.12" == lt.__array_api_version__
    assert set(info.__all__) == {"__array_api_version__", "finfo", "iinfo", "result_type", "can_cast", "isdtype",
                                 "Info", "__array_namespace_info__"}
    for exported in info.__all__:
        assert hasattr(info, exported), exported


def test_docstring_examples_run():
    """Every public function carries a docstring with an example, and the example is right."""
    namespace = types.SimpleNamespace(**{n: getattr(lt, n) for n in dir(lt) if not n.startswith("__")})
    for exported in info.__all__:
        setattr(namespace, exported, getattr(info, exported))
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    examples = 0
    for test in finder.find(info, globs={"lt": namespace}):
        examples += len(test.examples)
        runner.run(test)
    for exported in info.__all__:
        if not exported.startswith("__array_api"):
            assert ">>>" in (getattr(info, exported).__doc__ or ""), exported
    assert examples >= 12
    assert runner.failures == 0, f"{runner.failures} docstring examples failed (see the output above)"


def test_exported_from_lazytensor_once_wired():
    if not hasattr(lt, "finfo"):
        pytest.skip("lazytensor/__init__.py does not export lazytensor.info yet")
    for exported in info.__all__:
        assert getattr(lt, exported) is getattr(info, exported), exported
        assert exported in lt.__all__, exported
    assert lt.asarray([1]).__array_namespace__().isdtype(lt.int8, "integral")
