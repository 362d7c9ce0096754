"""Quickstart: lazy tensors, one fused kernel, compiled once and cached.

Run: python examples/quickstart.py
"""
import numpy as np

import lazytensor as lt

a_np = np.random.default_rng(0).random(1 << 20).astype(np.float32)
a = lt.asarray(a_np)
b = lt.ones(1 << 20)
c = (a * b + 1.0).exp().sum()          # nothing has run yet: this only recorded a graph
print("lazytensor:", c.numpy())        # one fused kernel compiles and runs
print("numpy:     ", np.exp(a_np * 1.0 + 1.0).sum())
print(lt.stats())

# a softmax over rows: at most three kernels, each compiled once and cached (memory and disk)
x = lt.randn(4, 5, seed=1)
e = (x - x.max(axis=-1, keepdims=True)).exp()
p = e / e.sum(axis=-1, keepdims=True)
print(p.numpy().sum(axis=-1))          # each row sums to 1
print(lt.stats())
