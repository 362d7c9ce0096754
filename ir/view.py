"""Views: how a tensor's index maps to memory, so movement ops never copy.

A `View` is (shape, strides, offset, mask): element `i` of the view lives at
`offset + sum(i[d] * strides[d])` in its buffer, and is valid only where
`mask[d][0] <= i[d] < mask[d][1]` for every axis (outside, it reads as zero: that is how PAD works).
Permute, expand (stride 0), shrink with steps, flip (negative stride) and pad are always a single
view. A reshape merges into the strides when it can (numpy's no-copy reshape rule); when it
cannot, a `ViewStack` pushes a new contiguous view on top that indexes the one below through its
row-major linear index.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Optional

from . import loop
from .loop import Expr

Shape = tuple[int, ...]
Mask = Optional[tuple[tuple[int, int], ...]]


def contiguous_strides(shape: Shape) -> tuple[int, ...]:
    strides, acc = [], 1
    for size in reversed(shape):
        strides.append(acc if size != 1 else 0)  # size-1 axes get stride 0: they never move
        acc *= size
    return tuple(reversed(strides))


@dataclass(frozen=True)
class View:
    shape: Shape
    strides: tuple[int, ...]
    offset: int = 0
    mask: Mask = None

    @staticmethod
    def contiguous(shape: Shape) -> "View":
        return View(tuple(shape), contiguous_strides(tuple(shape)))

    def _with(self, shape, strides, offset, mask) -> "View":
        shape, strides = tuple(shape), tuple(strides)
        strides = tuple(0 if size == 1 else st for size, st in zip(shape, strides))
        if mask is not None:
            mask = tuple(mask)
            if all(lo == 0 and hi == size for (lo, hi), size in zip(mask, shape)):
                mask = None
        return View(shape, strides, offset, mask)

    def permute(self, order: tuple[int, ...]) -> "View":
        mask = None if self.mask is None else [self.mask[a] for a in order]
        return self._with([self.shape[a] for a in order], [self.strides[a] for a in order], self.offset, mask)

    def expand(self, shape: Shape) -> "View":
        strides = [st if old == new else 0 for old, new, st in zip(self.shape, shape, self.strides)]
        mask = None
        if self.mask is not None:
            mask = [m if old == new else ((0, new) if m[1] > m[0] else (0, 0))
                    for m, old, new in zip(self.mask, self.shape, shape)]
        return self._with(shape, strides, self.offset, mask)

    def shrink(self, slices: tuple[tuple[int, int, int], ...]) -> "View":
        """Keep indices start, start+step, ... < stop (or > stop for negative step) per axis."""
        shape, strides, mask, offset = [], [], [], self.offset
        for axis, (start, stop, step) in enumerate(slices):
            size = max(0, -(-(stop - start) // step)) if step > 0 else max(0, -(-(start - stop) // -step))
            offset += start * self.strides[axis] if size else 0
            shape.append(size)
            strides.append(self.strides[axis] * step)
            lo, hi = self.mask[axis] if self.mask is not None else (0, self.shape[axis])
            mask.append(_remap_mask(lo, hi, start, step, size))
        return self._with(shape, strides, offset, mask)

    def pad(self, pads: tuple[tuple[int, int], ...]) -> "View":
        shape, mask, offset = [], [], self.offset
        for axis, (before, after) in enumerate(pads):
            size = self.shape[axis]
            lo, hi = self.mask[axis] if self.mask is not None else (0, size)
            shape.append(size + before + after)
            mask.append((lo + before, hi + before))
            offset -= before * self.strides[axis]
        return self._with(shape, self.strides, offset, mask)

    def flip(self, axes: tuple[int, ...]) -> "View":
        slices = tuple((n - 1, -1, -1) if a in axes else (0, n, 1) for a, n in enumerate(self.shape))
        return self.shrink(slices)

    def reshape(self, shape: Shape) -> Optional["View"]:
        """The same data seen with `shape` as one view, or None when that needs a new view."""
        shape = tuple(shape)
        if shape == self.shape:
            return self
        if 0 in shape or 0 in self.shape:
            return View.contiguous(shape)
        if self.mask is not None:
            return None
        strides = _reshape_strides(self.shape, self.strides, shape)
        return None if strides is None else self._with(shape, strides, self.offset, None)

    def index(self, idxs: list[Expr]) -> tuple[Expr, Expr | None]:
        """(memory index, validity or None) of element `idxs` (int64 loop-IR expressions)."""
        checks = [] if self.mask is None else [_unit_check(d, len(self.shape), lo, hi) for d, (lo, hi) in
                                               enumerate(self.mask)]
        return _affine(idxs, self.strides, self.offset), _validity(idxs, _needed(checks, self.shape))


def _remap_mask(lo: int, hi: int, start: int, step: int, size: int) -> tuple[int, int]:
    """The valid range [lo, hi) of old indices seen through new index j -> start + j*step."""
    if size == 0:
        return (0, 0)
    if step > 0:
        first = max(0, -(-(lo - start) // step))
        last = min(size, -(-(hi - start) // step))
    else:
        first = max(0, -(-(start - (hi - 1)) // -step))
        last = min(size, (start - lo) // -step + 1)
    return (first, max(first, last))


def _reshape_strides(old_shape: Shape, old_strides, new_shape: Shape):
    """numpy's no-copy reshape: strides for new_shape over the same memory, or None."""
    old = [(n, st) for n, st in zip(old_shape, old_strides) if n != 1]
    new_strides = [0] * len(new_shape)
    oi = 0
    ni = 0
    while ni < len(new_shape):
        if new_shape[ni] == 1:
            ni += 1
            continue
        if oi >= len(old):
            return None
        # grow a group of new axes and a group of old axes until they cover the same size
        nj, oj = ni + 1, oi + 1
        new_size, old_size = new_shape[ni], old[oi][0]
        while new_size != old_size:
            if new_size < old_size:
                if nj >= len(new_shape):
                    return None
                new_size *= new_shape[nj]
                nj += 1
            else:
                if oj >= len(old):
                    return None
                old_size *= old[oj][0]
                oj += 1
        for k in range(oi, oj - 1):  # the old group must be one contiguous run
            if old[k][1] != old[k + 1][0] * old[k + 1][1]:
                return None
        stride = old[oj - 1][1]
        for k in range(nj - 1, ni - 1, -1):
            new_strides[k] = stride if new_shape[k] != 1 else 0
            stride *= new_shape[k]
        ni, oi = nj, oj
    return new_strides if oi == len(old) else None


@dataclass(frozen=True)
class ViewStack:
    """Views composed bottom-up: views[0] indexes the buffer, views[-1] has the tensor's shape."""
    views: tuple[View, ...]

    @staticmethod
    def contiguous(shape: Shape) -> "ViewStack":
        return ViewStack((View.contiguous(shape),))

    @property
    def shape(self) -> Shape:
        return self.views[-1].shape

    def _top(self, view: View) -> "ViewStack":
        return ViewStack(self.views[:-1] + (view,))

    def reshape(self, shape: Shape) -> "ViewStack":
        merged = self.views[-1].reshape(shape)
        if merged is not None:
            return self._top(merged)
        return ViewStack(self.views + (View.contiguous(shape),))

    def permute(self, order) -> "ViewStack":
        return self._top(self.views[-1].permute(tuple(order)))

    def expand(self, shape) -> "ViewStack":
        return self._top(self.views[-1].expand(tuple(shape)))

    def shrink(self, slices) -> "ViewStack":
        return self._top(self.views[-1].shrink(tuple(slices)))

    def pad(self, pads) -> "ViewStack":
        return self._top(self.views[-1].pad(tuple(pads)))

    def flip(self, axes) -> "ViewStack":
        return self._top(self.views[-1].flip(tuple(axes)))

    @functools.cached_property
    def affine(self) -> Optional[tuple[tuple[int, ...], int, tuple["Check", ...]]]:
        """The whole stack as one affine map where it is one: (strides, offset, checks), element
        i at offset + sum(i[d] * strides[d]), valid where every check (coefs, const, lo, hi) has
        lo <= const + sum(i[d] * coefs[d]) < hi (a None bound always holds). None where a view
        below sees the index wrap.

        Each view below reads the row-major position p of the view above, one digit per axis:
        p % m and p // m for size m. With p = c0 + sum(c[d] * i[d]) and each c = q*m + r
        (0 <= r < m), the digit is r0 + sum(r[d] * i[d]) and the rest q0 + sum(q[d] * i[d]) --
        affine again -- wherever that digit cannot reach m over the whole index range. Sliding
        windows (conv, pooling) are such stacks: x[o*s + k*d] built from repeat, cut and reshape."""
        top = self.views[-1]
        sizes = top.shape
        coefs, const = list(top.strides), top.offset
        checks = [] if top.mask is None else [_unit_check(d, len(sizes), lo, hi) for d, (lo, hi) in
                                              enumerate(top.mask)]
        for view in reversed(self.views[:-1]):
            digits = []
            for m in reversed(view.shape):
                q0, r0 = divmod(const, m)
                rs = [c % m for c in coefs]
                if r0 + sum(r * (n - 1) for r, n in zip(rs, sizes)) >= m:
                    return None
                digits.append((rs, r0))
                coefs, const = [c // m for c in coefs], q0
            digits.reverse()
            coefs = [sum(st * rs[d] for st, (rs, _) in zip(view.strides, digits)) for d in range(len(sizes))]
            const = view.offset + sum(st * r0 for st, (_, r0) in zip(view.strides, digits))
            if view.mask is not None:
                checks += [(tuple(rs), r0, lo, hi) for (rs, r0), (lo, hi) in zip(digits, view.mask)]
        return tuple(coefs), const, tuple(_needed(checks, sizes))

    def reads_like(self, other: "ViewStack") -> bool:
        """Whether the two stacks read the same elements at every index: one shape and one
        affine map (the strides of size-1 axes, never multiplied by more than 0, aside)."""
        if self.shape != other.shape or self.affine is None or other.affine is None:
            return False
        (mine, const, checks), (theirs, other_const, other_checks) = self.affine, other.affine
        big = [d for d, n in enumerate(self.shape) if n != 1]
        return [mine[d] for d in big] == [theirs[d] for d in big] and (const, checks) == (other_const, other_checks)

    def index(self, idxs: list[Expr]) -> tuple[Expr, Expr | None]:
        """(memory index, validity or None) of element `idxs` of the top view."""
        if len(self.views) > 1 and self.affine is not None:
            strides, offset, checks = self.affine
            return _affine(idxs, strides, offset), _validity(idxs, checks)
        index, valid = self.views[-1].index(idxs)
        for view in reversed(self.views[:-1]):
            # the index so far is a row-major position in `view`'s shape: unflatten it
            idxs = []
            for size in reversed(view.shape):
                idxs.append(loop.imod(index, size))
                index = loop.idiv(index, size)
            idxs.reverse()
            index, inner_valid = view.index(idxs)
            valid = loop.logical_and(valid, inner_valid)
        return index, valid


def _affine(idxs: list[Expr], coefs: tuple[int, ...], const: int) -> Expr:
    expr: Expr = loop.const(const)
    for i, c in zip(idxs, coefs):
        expr = loop.add(expr, loop.mul(i, loop.const(c)))
    return expr


# A bounds check (coefs, const, lo, hi): lo <= const + sum(coefs[d] * i[d]) < hi, where a None
# bound always holds.
Check = tuple[tuple[int, ...], int, Optional[int], Optional[int]]


def _unit_check(axis: int, ndim: int, lo: int, hi: int) -> Check:
    return tuple(1 if d == axis else 0 for d in range(ndim)), 0, lo, hi


def _needed(checks: list[Check], shape: Shape) -> list[Check]:
    """The checks with each bound that can fail over the index range of `shape` (others None),
    without the checks that always hold."""
    kept = []
    for coefs, const, lo, hi in checks:
        low = const + sum(min(0, c * (n - 1)) for c, n in zip(coefs, shape))
        high = const + sum(max(0, c * (n - 1)) for c, n in zip(coefs, shape))
        lo, hi = (lo if lo > low else None), (hi if hi <= high else None)
        if lo is not None or hi is not None:
            kept.append((coefs, const, lo, hi))
    return kept


def _validity(idxs: list[Expr], checks: list[Check] | tuple[Check, ...]) -> Expr | None:
    valid = None
    for coefs, const, lo, hi in checks:
        value = _affine(idxs, coefs, const)
        if lo is not None:
            valid = loop.logical_and(valid, loop.less(loop.const(lo - 1), value))
        if hi is not None:
            valid = loop.logical_and(valid, loop.less(value, loop.const(hi)))
    return valid
