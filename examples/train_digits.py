"""Train a small CNN on scikit-learn's handwritten digits (8x8 images, bundled with the package:
no download) and print its test accuracy.

    pip install -e ".[examples]"
    python examples/train_digits.py [--epochs 15] [--device cpu]
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from tqdm import tqdm

import lazytensor as lt
import lazytensor.nn.functional as F
from lazytensor import nn


class DigitNet(nn.Module):
    """conv 1->32 (3x3, same size) -> relu -> 2x2 max pool -> linear 512->64 -> relu -> linear 64->10."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 32, 3, padding=1)
        self.hidden = nn.Linear(32 * 4 * 4, 64)
        self.out = nn.Linear(64, 10)

    def forward(self, x: lt.Tensor) -> lt.Tensor:
        x = F.max_pool2d(F.relu(self.conv(x)), 2)       # (N, 32, 4, 4)
        return self.out(F.relu(self.hidden(x.reshape(x.shape[0], -1))))


def load_data(seed: int):
    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)[:, None]   # (1797, 1, 8, 8) in [0, 1]
    return train_test_split(images, digits.target.astype(np.int64), test_size=0.2, random_state=seed,
                            stratify=digits.target)


def accuracy(model: nn.Module, images: np.ndarray, labels: np.ndarray, device: str) -> float:
    model.eval()
    with lt.no_grad():
        predicted = model(lt.asarray(images, device=device)).argmax(axis=1).numpy()
    model.train()
    return float((predicted == labels).mean())


def train(epochs: int = 15, batch_size: int = 64, lr: float = 1e-2, seed: int = 0, device: str = "cpu",
          quiet: bool = False) -> float:
    lt.manual_seed(seed)
    rng = np.random.default_rng(seed)
    x_train, x_test, y_train, y_test = load_data(seed)
    model = DigitNet().to(device)
    optimizer = lt.optim.Adam(model.parameters(), lr=lr)

    @lt.jit   # recorded on its first calls, then its kernels are replayed (no Python graph building)
    def train_step(images: lt.Tensor, labels: lt.Tensor) -> lt.Tensor:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
        return loss

    start = time.perf_counter()
    for epoch in range(epochs):
        order = rng.permutation(len(x_train))
        # full batches only: one batch shape, so every step after the first reuses its kernels
        batches = [order[i:i + batch_size] for i in range(0, len(order) - batch_size + 1, batch_size)]
        progress = tqdm(batches, desc=f"epoch {epoch + 1:2d}/{epochs}", disable=quiet, leave=False)
        total = 0.0
        for step, batch in enumerate(progress, 1):
            loss = train_step(lt.asarray(x_train[batch], device=device), lt.asarray(y_train[batch], device=device))
            total += loss.item()
            progress.set_postfix(loss=f"{total / step:.4f}")
        if not quiet:
            tqdm.write(f"epoch {epoch + 1:2d}/{epochs}  loss {total / len(batches):.4f}  "
                       f"test accuracy {accuracy(model, x_test, y_test, device):.2%}")
    test_accuracy = accuracy(model, x_test, y_test, device)
    if not quiet:
        print(f"test accuracy {test_accuracy:.2%} after {epochs} epochs in {time.perf_counter() - start:.1f} s "
              f"({lt.stats()['kernels_compiled']} kernels compiled)")
    return test_accuracy


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    train(args.epochs, args.batch_size, args.lr, args.seed, args.device)
