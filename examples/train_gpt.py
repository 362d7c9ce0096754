"""Train a tiny character-level GPT on Python's own standard library sources (no download), print
its validation loss as it goes and a sample of the Python it writes at the end.

    pip install -e ".[examples]"                     # (tqdm, for the progress bar: optional)
    python examples/train_gpt.py [--steps 500] [--device cpu] [--seed 0]
    python examples/train_gpt.py --steps 5           # a quick check: a few steps, a short sample

The model (examples/gpt_model.py): 2 pre-LayerNorm transformer blocks, 4 causal attention heads
written out, MLP 4x with GELU, d_model 128, context 64; batches of 32 windows; AdamW. The
training step runs under lt.jit (recorded on its first calls, then its kernels are replayed).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import lazytensor as lt
from gpt_model import GPT, Config, Corpus, fixed_window, generate, load_text, loss_of, training_step

try:
    from tqdm import tqdm
except ImportError:   # (the `examples` extra: without it, no progress bar)
    tqdm = None


def train(steps: int = 500, device: str = "cpu", seed: int = 0, batch_size: int = 32, lr: float = 1e-3,
          eval_every: int = 100, sample_length: int = 200, quiet: bool = False) -> tuple[float, str]:
    """Train for `steps` steps; returns the final validation loss and the sample."""
    say = (tqdm.write if tqdm is not None else print) if not quiet else (lambda *_: None)
    lt.manual_seed(seed)
    rng = np.random.default_rng(seed)
    corpus = Corpus(load_text())
    config = Config(corpus.vocab_size)
    model = GPT(config).to(device)
    optimizer = lt.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    say(f"{len(corpus.train):,} characters to train on, {len(corpus.val):,} to validate, "
        f"a vocabulary of {corpus.vocab_size}; {sum(p.size for p in model.parameters()):,} parameters")

    train_step = lt.jit(training_step(model, optimizer))

    @lt.jit
    def val_loss(x: lt.Tensor, y: lt.Tensor) -> lt.Tensor:
        return loss_of(model(x), y)

    val_rng = np.random.default_rng(seed + 1)   # the same validation windows every time
    val_batches = [corpus.batch(val_rng, batch_size, config.context, "val") for _ in range(4)]

    def validate() -> float:
        with lt.no_grad():
            return float(np.mean([val_loss(lt.asarray(x, device=device), lt.asarray(y, device=device)).item()
                                  for x, y in val_batches]))

    start = time.perf_counter()
    steps_range = range(1, steps + 1)
    progress = tqdm(steps_range, desc="training", disable=quiet) if tqdm is not None else steps_range
    for step in progress:
        x, y = corpus.batch(rng, batch_size, config.context)
        loss = train_step(lt.asarray(x, device=device), lt.asarray(y, device=device)).item()
        if tqdm is not None:
            progress.set_postfix(loss=f"{loss:.3f}")
        if step % eval_every == 0 and step != steps:
            say(f"step {step:5d}  train loss {loss:.4f}  validation loss {validate():.4f}")
    loss = validate()
    seconds = time.perf_counter() - start
    say(f"step {steps:5d}  validation loss {loss:.4f}  ({seconds:.1f} s, {seconds / max(steps, 1) * 1e3:.0f} ms a "
        f"step with validation; {lt.stats()['kernels_compiled']} kernels compiled)")

    # one input shape for every length (the context padded on the right: attention is causal),
    # so generating compiles one forward pass
    prompt = corpus.encode("def ")
    sample = corpus.decode(prompt + generate(fixed_window(model, device), prompt, sample_length,
                                             rng=np.random.default_rng(seed), temperature=0.8))
    say(f"sample ({sample_length} characters after {corpus.decode(prompt)!r}, temperature 0.8):\n{sample}")
    return loss, sample


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--eval-every", type=int, default=100, help="steps between validation losses")
    parser.add_argument("--sample-length", type=int, default=200, help="characters to generate at the end")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    train(args.steps, args.device, args.seed, args.batch_size, args.lr, args.eval_every, args.sample_length)
