"""A tiny character-level GPT in lazytensor, and its data: the model of examples/train_gpt.py and
benchmarks/bench_gpt.py (issue 23).

Pre-LayerNorm transformer blocks, causal attention written out head by head (q, k, v
projections, q @ k^T / sqrt(head_dim), a causal mask, softmax, @ v, the heads merged back with
permute + reshape, an output projection), an MLP 4x wide with GELU, a final LayerNorm and a
linear head, on learned token and position embeddings. Parameter names follow nanoGPT's layout, so
a torch twin with the same attribute names takes its weights one to one.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

import lazytensor as lt
import lazytensor.nn.functional as F
from lazytensor import nn


@dataclass(frozen=True)
class Config:
    vocab_size: int
    context: int = 64
    d_model: int = 128
    n_heads: int = 4
    n_layers: int = 2


class CausalSelfAttention(nn.Module):
    def __init__(self, config: Config):
        super().__init__()
        self.n_heads = config.n_heads
        self.query = nn.Linear(config.d_model, config.d_model)
        self.key = nn.Linear(config.d_model, config.d_model)
        self.value = nn.Linear(config.d_model, config.d_model)
        self.proj = nn.Linear(config.d_model, config.d_model)
        # True where a position may attend (itself and the ones before it)
        self.register_buffer("causal", lt.asarray(np.tril(np.ones((config.context, config.context), bool))))

    def forward(self, x: lt.Tensor) -> lt.Tensor:
        B, T, C = x.shape
        H, D = self.n_heads, C // self.n_heads
        q = self.query(x).reshape(B, T, H, D).permute(0, 2, 1, 3)      # (B, H, T, D)
        k = self.key(x).reshape(B, T, H, D).permute(0, 2, 1, 3)
        v = self.value(x).reshape(B, T, H, D).permute(0, 2, 1, 3)
        scores = q @ k.permute(0, 1, 3, 2) / math.sqrt(D)               # (B, H, T, T)
        scores = lt.where(self.causal[:T, :T], scores, float("-inf"))
        y = F.softmax(scores, dim=-1) @ v                                # (B, H, T, D)
        return self.proj(y.permute(0, 2, 1, 3).reshape(B, T, C))         # heads merged


class Block(nn.Module):
    def __init__(self, config: Config):
        super().__init__()
        self.ln1 = nn.LayerNorm(config.d_model)
        self.attn = CausalSelfAttention(config)
        self.ln2 = nn.LayerNorm(config.d_model)
        self.fc = nn.Linear(config.d_model, 4 * config.d_model)
        self.fc_proj = nn.Linear(4 * config.d_model, config.d_model)

    def forward(self, x: lt.Tensor) -> lt.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.fc_proj(F.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    """logits (B, T, vocab_size) of the next character at each position of idx (B, T), T <= context."""

    def __init__(self, config: Config):
        super().__init__()
        self.config = config
        self.token = nn.Embedding(config.vocab_size, config.d_model)
        self.position = nn.Embedding(config.context, config.d_model)
        self.blocks = nn.ModuleList([Block(config) for _ in range(config.n_layers)])
        self.ln_f = nn.LayerNorm(config.d_model)
        self.head = nn.Linear(config.d_model, config.vocab_size)

    def forward(self, idx: lt.Tensor) -> lt.Tensor:
        T = idx.shape[1]
        x = self.token(idx) + self.position.weight[:T]
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


def loss_of(logits: lt.Tensor, targets: lt.Tensor) -> lt.Tensor:
    """Mean cross-entropy of logits (B, T, V) against the next characters (B, T)."""
    B, T, V = logits.shape
    return F.cross_entropy(logits.reshape(B * T, V), targets.reshape(B * T))


def training_step(model: GPT, optimizer: lt.optim.Optimizer) -> Callable[[lt.Tensor, lt.Tensor], lt.Tensor]:
    """step(x, y): one step of `optimizer` on the loss of `model` (returned), for lt.jit or not."""
    def step(x: lt.Tensor, y: lt.Tensor) -> lt.Tensor:
        optimizer.zero_grad()
        loss = loss_of(model(x), y)
        loss.backward()
        optimizer.step()
        return loss
    return step


# ---- data ---------------------------------------------------------------------------------------

# Standard library sources, read in this order (those a Python install lacks are skipped): ~350 KB
STDLIB_FILES = ("textwrap.py", "string.py", "heapq.py", "bisect.py", "fractions.py", "statistics.py",
                "functools.py", "collections/__init__.py", "random.py", "calendar.py", "shlex.py", "pprint.py",
                "json/encoder.py", "json/decoder.py")


def load_text() -> str:
    """Python source that ships with Python: the STDLIB_FILES (or, where an install strips its
    .py files, lazytensor's own sources), tabs as 4 spaces, other characters than printable ASCII
    and newlines dropped (a vocabulary of < 100 characters)."""
    stdlib = os.path.dirname(os.__file__)
    paths = [os.path.join(stdlib, name) for name in STDLIB_FILES if os.path.exists(os.path.join(stdlib, name))]
    if not paths:
        package = os.path.dirname(lt.__file__)
        paths = sorted(os.path.join(package, name) for name in os.listdir(package) if name.endswith(".py"))
    text = "".join(open(path, encoding="utf-8", errors="replace").read() for path in paths)
    text = text.replace("\t", "    ")
    return "".join(ch for ch in text if ch == "\n" or " " <= ch <= "~")


class Corpus:
    """The text as character ids, split 90/10 into training and validation."""

    def __init__(self, text: str):
        self.chars = sorted(set(text))
        self.index = {ch: i for i, ch in enumerate(self.chars)}
        data = np.array([self.index[ch] for ch in text], dtype=np.int64)
        cut = int(len(data) * 0.9)
        self.train, self.val = data[:cut], data[cut:]

    @property
    def vocab_size(self) -> int:
        return len(self.chars)

    def encode(self, text: str) -> list[int]:
        return [self.index[ch] for ch in text]

    def decode(self, ids) -> str:
        return "".join(self.chars[i] for i in ids)

    def batch(self, rng: np.random.Generator, batch_size: int, context: int,
              split: str = "train") -> tuple[np.ndarray, np.ndarray]:
        """Random windows: inputs (batch_size, context) and the characters that follow each."""
        data = self.train if split == "train" else self.val
        starts = rng.integers(0, len(data) - context - 1, batch_size)
        windows = np.stack([data[s:s + context + 1] for s in starts])
        return windows[:, :-1], windows[:, 1:]


# ---- generation ---------------------------------------------------------------------------------

def generate(next_logits: Callable[[list[int]], np.ndarray], prompt: list[int], n: int,
             rng: Optional[np.random.Generator] = None, temperature: float = 1.0) -> list[int]:
    """`n` characters after `prompt`, one at a time: next_logits(context ids) gives the logits of
    the character after them (the context is the last `context` ids: it grows, then slides).
    Greedy (argmax) without `rng`, sampled at `temperature` with it."""
    ids = list(prompt)
    for _ in range(n):
        logits = np.asarray(next_logits(ids), dtype=np.float64)
        if rng is None:
            ids.append(int(logits.argmax()))
        else:
            p = np.exp((logits - logits.max()) / temperature)
            ids.append(int(rng.choice(len(p), p=p / p.sum())))
    return ids[len(prompt):]


def growing_context(model: GPT, device: str = "cpu", jit: bool = False) -> Callable[[list[int]], np.ndarray]:
    """next_logits for generate(): the model on the last `context` ids as they are (a new shape
    at each length until the context is full); the model's forward under lt.jit with jit=True."""
    context = model.config.context
    # (jitted: the whole forward, its last row read after it; lt.jit refuses a function that
    # returns a view of a tensor it made)
    run = lt.jit(model) if jit else model

    def next_logits(ids: list[int]) -> np.ndarray:
        with lt.no_grad():
            return run(lt.asarray(np.array([ids[-context:]], dtype=np.int64), device=device))[0, -1].numpy()
    return next_logits


def fixed_window(model: GPT, device: str = "cpu", jit: bool = True) -> Callable[[list[int]], np.ndarray]:
    """next_logits for generate() with one input shape: the ids padded on the right to the full
    context. Attention is causal, so what follows a position never changes its logits: the
    result is the growing context's, and one set of kernels (one lt.jit capture) serves every
    length."""
    context = model.config.context
    run = lt.jit(model) if jit else model

    def next_logits(ids: list[int]) -> np.ndarray:
        window = ids[-context:]
        padded = np.zeros((1, context), dtype=np.int64)
        padded[0, :len(window)] = window
        with lt.no_grad():
            logits = run(lt.asarray(padded, device=device))
        return logits.numpy()[0, len(window) - 1]
    return next_logits
