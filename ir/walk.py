"""Recursive definitions run without recursion: graphs and expressions get deep.

A walk over a graph or an expression is most readable as a recursive function, but Python's
stack holds ~1,000 frames, and raising the limit past what the C stack holds turns a
RecursionError into a crash. `recurse` runs the recursive definition on an explicit stack
instead: the definition is a generator that yields each sub-problem it needs and receives its
result, exactly where a recursive call would be.

    def depth(node):                    # recursive:  1 + max(depth(s) for s in node.src)
        best = 0
        for s in node.src:
            best = max(best, (yield s))
        return 1 + best

    recurse(depth, root)
"""
from __future__ import annotations

from typing import Any, Callable, Generator, Hashable, Optional

Definition = Callable[[Any], Generator[Hashable, Any, Any]]


def recurse(define: Definition, key: Hashable, memo: Optional[dict] = None) -> Any:
    """The result of the recursive definition `define` for `key`. `define(key)` is a generator:
    it yields the key of each sub-result it needs, is sent that result, and returns its own.
    Each key is computed once: results are kept in `memo` (pass one dict to share results
    between calls), and sub-results are computed in the order they are asked for, as a recursive
    function would compute them."""
    memo = {} if memo is None else memo
    if key in memo:
        return memo[key]
    stack = [(key, define(key))]
    value: Any = None
    while stack:
        current, steps = stack[-1]
        try:
            wanted = steps.send(value)
        except StopIteration as done:
            stack.pop()
            value = memo[current] = done.value
            continue
        if wanted in memo:
            value = memo[wanted]
        else:
            stack.append((wanted, define(wanted)))
            value = None
    return value
