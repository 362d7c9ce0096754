"""A tiny character-level GPT (issue 23), lazytensor against the same model in torch, same weights
and data, one run, in a fresh process with an empty kernel cache (compiles are real).

    python benchmarks/bench_gpt.py [--steps 20] [--repeat 5] [--only train|generate|kernels] [--out benchmarks/results]

The model is examples/gpt_model.py: 2 pre-LayerNorm blocks, 4 causal attention heads written
out (q @ k^T / sqrt(head_dim), a causal mask by lt.where, softmax, @ v, heads merged by
permute(0, 2, 1, 3).reshape(B, T, C)), MLP 4x with GELU, d_model 128, context 64, untied head,
on standard library sources as characters. The torch twin has the same parameter names and takes
the lazytensor model's initial weights.

1. train: one step (forward, loss, backward, AdamW lr 1e-3, weight decay 0.01), batch 32 x 64:
   torch eager, lazytensor eager and lazytensor with the whole step under lt.jit. First, each
   trains `--steps` steps from the same weights on the same batches: the largest difference of
   their losses from torch's shows the computation is the same (the first step's time and the
   kernels compiled or loaded from disk are from there). Then the three take turns on one batch
   (bench_core's compare: 3 turns each after a pause and a warm-up step, `--repeat` steps a
   turn): median ms/step, x torch's time, and kernels launched in a step.
2. generate: 200 characters after a 1-character prompt, one at a time, greedy (argmax: every
   library writes the same text), the context growing 1..64 and then sliding: lazytensor eager,
   lazytensor with the forward under lt.jit, and (the way around new shapes that works today)
   lazytensor under lt.jit with the context padded on the right to 64 (attention is causal: the
   same logits), against torch. The first run of each gives its time, kernels compiled and loaded
   from disk, and the growth of the process's resident memory (the eager run comes first in
   this process: it compiles into the empty cache; before each first run the kernels held in
   memory are dropped, so the later ones load from disk the kernels they share with it); then
   the four take turns on warm runs: median ms a token. Runs before `train`.
3. kernels: the attention kernels alone (B 32, H 4, T 64, head 32, C 128), each against torch:
   a Linear reading the merged heads y.permute(0, 2, 1, 3).reshape(B, T, C) (forward and weight
   gradient by backward(), as in the step) and the same written out as g.T @ merged, each
   against its contiguous twin (the same values already merged in memory); the batched
   matmuls q @ k^T and p @ v (B*H = 128 matrices, heads split from (B, T, C) projections as
   the model does); the masked softmax; the whole attention forward.

"x torch" is a time over torch's (below 1: faster than torch; the issue's bars: a jitted step
<= 1.0, eager <= 1.5; a token <= 1.5 eager and <= 1.0 jitted; kernels >= torch's speed); "x
twin" is the merged-heads time over its contiguous twin's (bar: <= 2). The tables also go to
`--out`/bench_gpt.md. Torch is optional: without it its columns are empty.
"""
from __future__ import annotations

import argparse
import atexit
import gc
import math
import os
import resource
import shutil
import sys
import tempfile
import time
from typing import Callable

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
CACHE = tempfile.mkdtemp(prefix="lt-bench-gpt-")
os.environ["LT_CACHE_DIR"] = CACHE   # (before lazytensor reads it: every kernel is compiled here)
atexit.register(shutil.rmtree, CACHE, True)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "examples"))

import lazytensor as lt  # noqa: E402
import lazytensor.nn.functional as F  # noqa: E402
from lazytensor.devices import loaded_runtimes  # noqa: E402
from lazytensor.jit import MAX_CAPTURES  # noqa: E402

from bench_core import _ms, _ratio, compare, start, write_lines  # noqa: E402
from gpt_model import (GPT, Config, Corpus, fixed_window, generate, growing_context, load_text,  # noqa: E402
                       training_step)

try:
    import torch
except ImportError:
    torch = None

BATCH, LR, WEIGHT_DECAY = 32, 1e-3, 0.01
GENERATED = 200


# ---- the torch twin ---------------------------------------------------------------------------------

if torch is not None:
    class TorchAttention(torch.nn.Module):
        def __init__(self, config: Config):
            super().__init__()
            self.n_heads = config.n_heads
            self.query, self.key, self.value, self.proj = (torch.nn.Linear(config.d_model, config.d_model)
                                                           for _ in range(4))
            self.register_buffer("causal", torch.ones(config.context, config.context, dtype=torch.bool).tril(),
                                 persistent=False)

        def forward(self, x):
            B, T, C = x.shape
            H, D = self.n_heads, C // self.n_heads
            q, k, v = (f(x).reshape(B, T, H, D).permute(0, 2, 1, 3) for f in (self.query, self.key, self.value))
            scores = (q @ k.transpose(-2, -1) / math.sqrt(D)).masked_fill(~self.causal[:T, :T], float("-inf"))
            y = torch.softmax(scores, dim=-1) @ v
            return self.proj(y.permute(0, 2, 1, 3).reshape(B, T, C))

    class TorchBlock(torch.nn.Module):
        def __init__(self, config: Config):
            super().__init__()
            self.ln1, self.ln2 = torch.nn.LayerNorm(config.d_model), torch.nn.LayerNorm(config.d_model)
            self.attn = TorchAttention(config)
            self.fc = torch.nn.Linear(config.d_model, 4 * config.d_model)
            self.fc_proj = torch.nn.Linear(4 * config.d_model, config.d_model)

        def forward(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.fc_proj(torch.nn.functional.gelu(self.fc(self.ln2(x))))

    class TorchGPT(torch.nn.Module):
        def __init__(self, config: Config):
            super().__init__()
            self.config = config
            self.token = torch.nn.Embedding(config.vocab_size, config.d_model)
            self.position = torch.nn.Embedding(config.context, config.d_model)
            self.blocks = torch.nn.ModuleList([TorchBlock(config) for _ in range(config.n_layers)])
            self.ln_f = torch.nn.LayerNorm(config.d_model)
            self.head = torch.nn.Linear(config.d_model, config.vocab_size)

        def forward(self, idx):
            x = self.token(idx) + self.position.weight[:idx.shape[1]]
            for block in self.blocks:
                x = block(x)
            return self.head(self.ln_f(x))


def torch_twin(weights: dict[str, np.ndarray], config: Config):
    model = TorchGPT(config)
    params = dict(model.named_parameters())
    assert set(params) == set(weights), set(params) ^ set(weights)
    with torch.no_grad():
        for name, p in params.items():
            p.copy_(torch.from_numpy(weights[name]))
    return model


def lt_model(weights: dict[str, np.ndarray], config: Config) -> GPT:
    model = GPT(config)
    model.load_state_dict({**{k: v.numpy() for k, v in model.state_dict().items()}, **weights})
    return model


def initial_weights(config: Config) -> dict[str, np.ndarray]:
    lt.manual_seed(0)
    return {name: p.numpy().copy() for name, p in GPT(config).named_parameters()}


def rss_mb() -> float:
    """This process's resident memory now (MB)."""
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024   # (the peak: Linux reports KB)


def stat(key: str) -> float:
    return lt.stats()[key]


def forget_compiled() -> None:
    """Drop the kernels and plans held in memory (as bench_tune.py does, and also the kernels by
    name and the binaries): the next run finds only the disk cache, so each kernel it needs
    counts once, as compiled or as loaded from disk."""
    for rt in loaded_runtimes():
        for held in (rt.plans, rt.by_expression, rt.loaded, rt.cache.memory):
            held.clear()


def kernels_since(before: dict[str, float]) -> str:
    """Kernels compiled + loaded from the disk cache since `before` (lt.stats())."""
    return f"{stat('kernels_compiled') - before['kernels_compiled']} + {stat('disk_cache_hits') - before['disk_cache_hits']}"


def table(title: str, header: list[str], rows: list[list[str]], notes: list[str]) -> list[str]:
    """A markdown table with its notes below it, printed; returns its lines."""
    lines = [f"### {title}", "", "| " + " | ".join(header) + " |",
             "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows] + [""] + [f"- {note}" for note in notes] + [""]
    print("\n".join(lines), flush=True)
    return lines


# ---- 1. a training step -----------------------------------------------------------------------------

def lt_stepper(model: GPT, jit: bool) -> Callable[[np.ndarray, np.ndarray], float]:
    step = training_step(model, lt.optim.AdamW(model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY))
    run = lt.jit(step) if jit else step
    return lambda x, y: run(lt.asarray(x), lt.asarray(y)).item()


def torch_stepper(model) -> Callable[[np.ndarray, np.ndarray], float]:
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)

    def step(x: np.ndarray, y: np.ndarray) -> float:
        optimizer.zero_grad()
        logits = model(torch.from_numpy(x))
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), torch.from_numpy(y).reshape(-1))
        loss.backward()
        optimizer.step()
        return loss.item()
    return step


def bench_train(corpus: Corpus, config: Config, steps: int, repeat: int) -> list[str]:
    weights = initial_weights(config)
    steppers = {"torch eager": torch_stepper(torch_twin(weights, config)) if torch is not None else None,
                "lazytensor eager": lt_stepper(lt_model(weights, config), jit=False),
                "lazytensor lt.jit": lt_stepper(lt_model(weights, config), jit=True)}
    steppers = {name: s for name, s in steppers.items() if s is not None}
    rng = np.random.default_rng(1)
    batches = [corpus.batch(rng, BATCH, config.context) for _ in range(max(steps, 1))]
    losses, first, compiled = {}, {}, {}
    for name, step in steppers.items():
        forget_compiled()
        before = lt.stats()
        began = time.perf_counter()
        losses[name] = [step(*batches[0])]
        first[name] = time.perf_counter() - began
        losses[name] += [step(x, y) for x, y in batches[1:]]
        compiled[name] = kernels_since(before)
        print(f"{name}: {steps} steps, losses {losses[name][0]:.4f} -> {losses[name][-1]:.4f}", flush=True)
    x, y = batches[0]
    launched = {}
    for name, step in steppers.items():
        if name.startswith("lazytensor"):
            before = stat("kernels_launched")
            step(x, y)
            launched[name] = stat("kernels_launched") - before
    times = compare({name: (lambda step=step: step(x, y)) for name, step in steppers.items()}, repeat)

    reference = times.get("torch eager")
    rows = [[name, _ms(seconds), _ratio(seconds, reference), f"{first[name]:.2f}",
             compiled[name] if name in launched else "", str(launched.get(name, ""))]
            for name, seconds in times.items()]
    notes = [f"{name}: losses of {steps} steps from the same weights and batches differ from torch's by at most "
             f"{np.max(np.abs(np.array(losses[name]) - np.array(losses['torch eager']))):.2e} (first "
             f"{losses[name][0]:.6f}, last {losses[name][-1]:.6f})"
             for name in losses if name != "torch eager" and "torch eager" in losses]
    notes += [f"median of 3 turns of {repeat} steps on one batch, each turn after a pause and a warm-up step",
              "kernels held in memory are dropped before each library's first step: the first lazytensor one "
              "compiles into an empty cache, the next loads what they share from disk"]
    return table(f"one training step (forward, loss, backward, AdamW), batch {BATCH} x {config.context}, "
                 f"vocabulary {config.vocab_size}",
                 ["", "ms / step", "x torch", "first step (s)", f"kernels compiled + from disk in {steps} steps",
                  "kernels launched / step"], rows, notes)


# ---- 2. generation ---------------------------------------------------------------------------------

def torch_next_logits(model) -> Callable[[list[int]], np.ndarray]:
    context = model.config.context

    def next_logits(ids: list[int]) -> np.ndarray:
        with torch.no_grad():
            return model(torch.tensor([ids[-context:]]))[0, -1].numpy()
    return next_logits


def bench_generate(corpus: Corpus, config: Config, repeat: int) -> list[str]:
    weights = initial_weights(config)
    model = lt_model(weights, config)
    prompt = corpus.encode("d")
    runs = {"lazytensor eager": growing_context(model),
            "lazytensor lt.jit": growing_context(model, jit=True),
            "lazytensor lt.jit, padded to 64": fixed_window(model)}
    if torch is not None:
        runs = {"torch eager": torch_next_logits(torch_twin(weights, config)), **runs}
    cold, texts = {}, {}
    start_rss = rss_mb()
    for name, next_logits in runs.items():
        forget_compiled()
        before = lt.stats()
        rss = rss_mb()
        began = time.perf_counter()
        texts[name] = generate(next_logits, prompt, GENERATED)
        seconds = time.perf_counter() - began
        gc.collect()
        cold[name] = (seconds, kernels_since(before), stat("jit_captures") - before["jit_captures"], rss_mb() - rss)
        print(f"{name}: first run {seconds:.2f} s, kernels compiled + from disk {cold[name][1]}, "
              f"RSS {cold[name][3]:+.0f} MB", flush=True)
    captures = stat("jit_captures")
    times = compare({name: (lambda f=f: generate(f, prompt, GENERATED)) for name, f in runs.items()}, max(1, repeat // 3))
    captures = stat("jit_captures") - captures
    gc.collect()
    reference = times.get("torch eager")
    rows = [[name, f"{cold[name][0]:.2f}", cold[name][1] if name != "torch eager" else "",
             str(cold[name][2]) if "jit" in name else "", f"{cold[name][3]:+.0f}",
             f"{times[name] / GENERATED * 1e3:.2f}", _ratio(times[name], reference)]
            for name in runs]
    reference_text = texts.get("torch eager", texts["lazytensor eager"])
    same = [name for name in texts if texts[name] == reference_text]
    notes = [f"the same text as {'torch' if torch is not None else 'lazytensor eager'}: {', '.join(same)} (the text: "
             f"{corpus.decode(prompt + reference_text)[:40]!r}...)",
             f"the process's resident memory: {rss_mb() - start_rss:+.0f} MB over this section (warm runs included); "
             "kernels held in memory are dropped before each first run: the eager one compiles into an empty cache, "
             "the jitted ones after it load the kernels they share from disk",
             f"warm: median of 3 turns of {max(1, repeat // 3)} runs, each turn after a pause and a warm-up run; "
             f"lt.jit captured {captures} times during them (lt.jit keeps {MAX_CAPTURES} "
             "signatures a function)"]
    return table(f"generation: {GENERATED} characters after a 1-character prompt, greedy, context growing to "
                 f"{config.context} then sliding",
                 ["", "first run (s)", "kernels compiled + from disk", "lt.jit captures", "RSS growth (MB)",
                  "warm ms / token", "x torch"], rows, notes)


# ---- 3. kernels alone --------------------------------------------------------------------------------

def bench_kernels(repeat: int) -> list[str]:
    B, H, T, D = 32, 4, 64, 32
    C = H * D
    rng = np.random.default_rng(2)
    arrays = {name: rng.standard_normal(shape).astype(np.float32) for name, shape in (
        ("y", (B, H, T, D)), ("g", (B, T, C)), ("w", (C, C)), ("q", (B, T, C)), ("k", (B, T, C)),
        ("v", (B, T, C)), ("scores", (B, H, T, T)))}
    arrays["merged"] = np.ascontiguousarray(arrays["y"].transpose(0, 2, 1, 3).reshape(B, T, C))
    mask = np.tril(np.ones((T, T), bool))
    L = {name: lt.asarray(a) for name, a in arrays.items()}
    lmask = lt.asarray(mask)
    w_param = lt.nn.Parameter(L["w"])
    lt_split = {name: L[name].reshape(B, T, H, D).permute(0, 2, 1, 3) for name in "qkv"}

    def lt_linear_grad(x: lt.Tensor) -> None:
        w_param.grad = None
        F.linear(x, w_param).backward(L["g"])
        w_param.grad.realize()

    def lt_softmax(scores: lt.Tensor) -> lt.Tensor:
        return F.softmax(lt.where(lmask, scores, float("-inf")), dim=-1)

    def lt_attention() -> None:
        q, k, v = (lt_split[n] for n in "qkv")
        (lt_softmax(q @ k.permute(0, 1, 3, 2) / math.sqrt(D)) @ v).realize()

    merged_view = L["y"].permute(0, 2, 1, 3).reshape(B, T, C)
    g2 = L["g"].reshape(B * T, C)
    cases = [   # name, lazytensor, its contiguous twin or None, torch's
        ("merge heads: Linear(y.permute(0, 2, 1, 3).reshape(B, T, C)), forward + weight gradient by backward()",
         lambda: lt_linear_grad(merged_view), lambda: lt_linear_grad(L["merged"]), "linear"),
        ("merge heads written out: g.T @ y.permute(0, 2, 1, 3).reshape(B*T, C)",
         lambda: (g2.T @ merged_view.reshape(B * T, C)).realize(),
         lambda: (g2.T @ L["merged"].reshape(B * T, C)).realize(), "gT"),
        ("q @ k^T, 128 batches of 64x64x32 (heads split from (B, T, C))",
         lambda: (lt_split["q"] @ lt_split["k"].permute(0, 1, 3, 2)).realize(), None, "qk"),
        ("p @ v, 128 batches of 64x64 @ 64x32", lambda: (L["scores"] @ lt_split["v"]).realize(), None, "pv"),
        ("masked softmax, (32, 4, 64, 64)", lambda: lt_softmax(L["scores"]).realize(), None, "softmax"),
        ("attention forward: softmax(mask(q @ k^T / sqrt(32))) @ v", lt_attention, None, "attention"),
    ]
    torch_fns = torch_kernels(arrays, mask, (B, H, T, D)) if torch is not None else {}
    rows = []
    for name, ours, twin, key in cases:
        medians = compare({"lt": ours, "twin": twin, "torch": torch_fns.get(key)}, repeat)
        t_lt, t_twin, t_torch = (medians.get(k) for k in ("lt", "twin", "torch"))
        rows.append([name, _ms(t_lt), _ms(t_twin), _ratio(t_lt, t_twin), _ms(t_torch), _ratio(t_lt, t_torch)])
        print(f"{name}: {_ms(t_lt)}", flush=True)
    return table("attention kernels alone: B 32, H 4, T 64, head 32, C 128",
                 ["", "lazytensor", "contiguous twin", "x twin", "torch", "x torch"], rows,
                 [f"median of 3 turns of {repeat} runs, each turn after a pause and a warm-up run"])


def torch_kernels(arrays: dict[str, np.ndarray], mask: np.ndarray, shape: tuple[int, ...]) -> dict[str, Callable]:
    B, H, T, D = shape
    C = H * D
    t = {name: torch.from_numpy(a) for name, a in arrays.items()}
    w = t["w"].clone().requires_grad_()
    split = {name: t[name].reshape(B, T, H, D).permute(0, 2, 1, 3) for name in "qkv"}
    tmask = torch.from_numpy(mask)

    def linear_grad() -> None:
        w.grad = None
        torch.nn.functional.linear(t["y"].permute(0, 2, 1, 3).reshape(B, T, C), w).backward(t["g"])

    def softmax(scores):
        return torch.softmax(scores.masked_fill(~tmask, float("-inf")), dim=-1)
    return {"linear": linear_grad,
            "gT": lambda: t["g"].reshape(B * T, C).T @ t["y"].permute(0, 2, 1, 3).reshape(B * T, C),
            "qk": lambda: split["q"] @ split["k"].transpose(-2, -1),
            "pv": lambda: t["scores"] @ split["v"],
            "softmax": lambda: softmax(t["scores"]),
            "attention": lambda: softmax(split["q"] @ split["k"].transpose(-2, -1) / math.sqrt(D)) @ split["v"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20, help="training steps whose losses are compared with torch's")
    parser.add_argument("--repeat", type=int, default=5, help="runs per turn (3 turns each)")
    parser.add_argument("--only", choices=["train", "generate", "kernels"], help="run one section")
    parser.add_argument("--out", default="benchmarks/results", help="folder for bench_gpt.md")
    args = parser.parse_args()
    _, _, said = start(args.repeat)
    corpus = Corpus(load_text())
    config = Config(corpus.vocab_size)
    lines = ["# bench_gpt", "", f"{said}; torch {torch.__version__ if torch else 'not installed'} on "
             f"{torch.get_num_threads() if torch else '-'} threads; {len(corpus.train) + len(corpus.val):,} "
             "characters of standard library source", ""]
    print("\n".join(lines), flush=True)
    if args.only in (None, "generate"):   # (first: its cold run compiles into the empty cache)
        lines += bench_generate(corpus, config, args.repeat)
    if args.only in (None, "train"):
        lines += bench_train(corpus, config, args.steps, args.repeat)
    if args.only in (None, "kernels"):
        lines += bench_kernels(args.repeat)
    lines.append("(\"x torch\": the time over torch's, below 1 is faster than torch; \"x twin\": over the contiguous "
                 "twin's)")
    write_lines(args.out, "bench_gpt.md", lines)


if __name__ == "__main__":
    main()
