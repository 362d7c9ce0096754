"""Operators written as index formulas with lt.compute (TVM's tensor expressions), checked
against numpy and timed next to the built-in ops; the matmul also with a schedule written by
hand (lt.schedule).

    python examples/tensor_expressions.py

A formula is lazy like every other op: elementwise producers inline into it and consumers fuse
with it, so a blur with its scaling before and its clamp after is one kernel.
"""
from __future__ import annotations

import time

import numpy as np

import lazytensor as lt


def matmul(a: lt.Tensor, b: lt.Tensor) -> lt.Tensor:
    """c[i, j] = sum over k of a[i, k] * b[k, j]."""
    k = lt.reduce_axis(a.shape[1], "k")
    return lt.compute((a.shape[0], b.shape[1]), lambda i, j: lt.sum(a[i, k] * b[k, j], axis=k))


def schedule_by_hand(c: lt.Tensor) -> lt.KernelSchedule:
    """A BLAS-style schedule for the matmul formula `c` (not realized yet): tiles of 4 rows x 16
    columns kept in registers while k runs, each block of 16 columns of b packed once and the
    column blocks in parallel. It then compiles every matmul formula of these shapes (reset()
    undoes it)."""
    s = lt.schedule(c)              # axes: i0, i1 (the output), i2 (size 1: the reduced one's place)
    io, ii = s.split("i0", 4)
    jo, ji = s.split("i1", 16)
    s.reorder(jo, io, "i2", ii, ji)
    s.parallel(jo)
    s.cache_write(ii)               # the 4 x 16 tile in registers...
    s.cache_read(1, jo)             # ...b's 16 columns packed once per column block
    s.unroll(ii, 4)
    s.vectorize(ji, min(s.lanes, 16))   # vectors of a register's worth of columns,
    s.unroll(ji, max(1, 16 // s.lanes))  # as many as make the 16 (all unrolled: registers)
    return s


def conv2d(x: lt.Tensor, w: lt.Tensor, stride: int = 1, padding: int = 1) -> lt.Tensor:
    """A 2-D convolution (N, C, H, W) x (F, C, KH, KW), with stride and zero padding."""
    n, c, h, wd = x.shape
    f, _, kh, kw = w.shape
    xp = x.pad(((0, 0), (0, 0), (padding, padding), (padding, padding)))
    oh, ow = (h + 2 * padding - kh) // stride + 1, (wd + 2 * padding - kw) // stride + 1
    rc, ry, rx = lt.reduce_axis(c, "rc"), lt.reduce_axis(kh, "ry"), lt.reduce_axis(kw, "rx")
    return lt.compute((n, f, oh, ow), lambda b, o, y, x_: lt.sum(
        xp[b, rc, y * stride + ry, x_ * stride + rx] * w[o, rc, ry, rx], axis=(rc, ry, rx)))


def softmax(s: lt.Tensor) -> lt.Tensor:
    """Rows of s to probabilities, in three stages (one kernel on the CPU, as lt.nn.functional's)."""
    rows, cols = s.shape
    r, r2 = lt.reduce_axis(cols), lt.reduce_axis(cols)
    top = lt.compute((rows,), lambda i: lt.max(s[i, r], axis=r))
    e = lt.compute((rows, cols), lambda i, j: lt.exp(s[i, j] - top[i]))
    total = lt.compute((rows,), lambda i: lt.sum(e[i, r2], axis=r2))
    return lt.compute((rows, cols), lambda i, j: e[i, j] / total[i])


def blur_clamped(x: lt.Tensor) -> lt.Tensor:
    """A 3x3 box blur of 0.5 * x + 1 (zero borders), clamped at 0.5 from below: one kernel."""
    h, w = x.shape
    xp = (x * 0.5 + 1.0).pad(((1, 1), (1, 1)))
    box = lt.compute((h, w), lambda i, j: (xp[i, j] + xp[i, j + 1] + xp[i, j + 2] + xp[i + 1, j] + xp[i + 1, j + 1]
                                           + xp[i + 1, j + 2] + xp[i + 2, j] + xp[i + 2, j + 1] + xp[i + 2, j + 2]) / 9)
    return lt.maximum(box, 0.5)


def numpy_blur_clamped(x: np.ndarray) -> np.ndarray:
    xp = np.pad(x * 0.5 + 1.0, 1)
    h, w = x.shape
    box = sum(xp[i:i + h, j:j + w] for i in range(3) for j in range(3)) / 9
    return np.maximum(box, 0.5)


def best_ms(f, runs: int = 5) -> float:
    f()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return min(times) * 1e3


def main() -> None:
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((512, 384)).astype(np.float32), rng.standard_normal((384, 256)).astype(np.float32)
    a, b = lt.asarray(A), lt.asarray(B)
    np.testing.assert_allclose(matmul(a, b).numpy(), A @ B, rtol=1e-4, atol=1e-4)
    default_ms = best_ms(lambda: matmul(a, b).realize())
    c = matmul(a, b)
    s = schedule_by_hand(c)
    np.testing.assert_allclose(c.numpy(), A @ B, rtol=1e-4, atol=1e-4)
    hand_ms = best_ms(lambda: matmul(a, b).realize())
    s.reset()
    print(f"matmul 512x384 @ 384x256: lt.compute {default_ms:.2f} ms, with the hand schedule {hand_ms:.2f} ms, "
          f"a @ b {best_ms(lambda: (a @ b).realize()):.2f} ms")

    X = rng.standard_normal((2, 8, 32, 32)).astype(np.float32)
    W = (rng.standard_normal((16, 8, 3, 3)) * 0.1).astype(np.float32)
    x, w = lt.asarray(X), lt.asarray(W)
    built_in = lt.nn.functional.conv2d(x, w, stride=2, padding=1)
    np.testing.assert_allclose(conv2d(x, w, stride=2).numpy(), built_in.numpy(), rtol=1e-4, atol=1e-5)
    print(f"conv2d stride 2: lt.compute {best_ms(lambda: conv2d(x, w, stride=2).realize()):.2f} ms, "
          f"lt.nn.functional.conv2d {best_ms(lambda: lt.nn.functional.conv2d(x, w, stride=2, padding=1).realize()):.2f} ms")

    S = rng.standard_normal((1024, 1000)).astype(np.float32)
    s = lt.asarray(S)
    want = np.exp(S - S.max(1, keepdims=True))
    np.testing.assert_allclose(softmax(s).numpy(), want / want.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)
    print(f"softmax 1024x1000: lt.compute {best_ms(lambda: softmax(s).realize()):.2f} ms, "
          f"lt.nn.functional.softmax {best_ms(lambda: lt.nn.functional.softmax(s, dim=1).realize()):.2f} ms")

    P = rng.standard_normal((1024, 1024)).astype(np.float32)
    p = lt.asarray(P)
    np.testing.assert_allclose(blur_clamped(p).numpy(), numpy_blur_clamped(P), rtol=1e-5, atol=1e-6)
    print(f"blur + clamp 1024x1024: lt.compute {best_ms(lambda: blur_clamped(p).realize()):.2f} ms, "
          f"numpy {best_ms(lambda: numpy_blur_clamped(P)):.2f} ms")
    print("all agree with numpy / the built-in ops")


if __name__ == "__main__":
    main()
