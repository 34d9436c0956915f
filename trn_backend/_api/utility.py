"""Utility functions of the standard: all, any and diff.

all/any read every dtype by its truth value (non-zero; NaN and infinities are true; complex is true when
either component is non-zero). diff subtracts neighbours with ``subtract`` (unsigned types wrap, complex parts
subtract separately); on booleans it is exclusive or (``x[i+1] != x[i]``), as in NumPy. prepend/append promote
with x by the standard's rules (the standard leaves mixed dtypes to the implementation).
"""

from __future__ import annotations

import builtins
import functools

import torch

from .. import _dtypes
from .._helpers import NeuronArray, check_same_device, normalize_axis, tensor, wrap
from .elementwise import not_equal, subtract
from .searching import truth
from .statistical import Axis, reduce_axes

__all__ = ["all", "any", "diff"]

Tensor = torch.Tensor


def all(x: NeuronArray, /, *, axis: Axis = None, keepdims: bool = False) -> NeuronArray:  # noqa: A001
    """Logical AND of the truth values over ``axis``; True for an empty reduction."""
    nz = truth(tensor(x, "all"))
    return wrap(reduce_axes(nz, axis, keepdims, "all", lambda f: torch.all(f, dim=-1)))


def any(x: NeuronArray, /, *, axis: Axis = None, keepdims: bool = False) -> NeuronArray:  # noqa: A001
    """Logical OR of the truth values over ``axis``; False for an empty reduction."""
    nz = truth(tensor(x, "any"))
    return wrap(reduce_axes(nz, axis, keepdims, "any", lambda f: torch.any(f, dim=-1)))


def diff(
    x: NeuronArray,
    /,
    *,
    axis: int = -1,
    n: int = 1,
    prepend: NeuronArray | None = None,
    append: NeuronArray | None = None,
) -> NeuronArray:
    """n-th forward difference along ``axis`` of x joined with prepend and append (the axis shrinks by n)."""
    t = tensor(x, "diff")
    if t.dim() == 0:
        raise ValueError("diff(): x must have at least one dimension, got a 0-dimensional array")
    dim = normalize_axis(axis, t.dim(), "diff")
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"diff(): n must be an int, got {type(n).__name__}")
    if n < 0:
        raise ValueError(f"diff(): n must be non-negative, got {n}")
    parts = [t]
    if prepend is not None:
        parts.insert(0, _edge(prepend, t, dim, "prepend"))
    if append is not None:
        parts.append(_edge(append, t, dim, "append"))
    dtype = functools.reduce(_dtypes.promote, [p.dtype for p in parts])
    c = torch.cat([_dtypes.cast(p, dtype) for p in parts], dim=dim)
    step = not_equal if dtype is _dtypes.bool else subtract
    for _ in range(n):
        length = c.shape[dim]
        if length == 0:
            break
        c = step(wrap(c.narrow(dim, 1, length - 1)), wrap(c.narrow(dim, 0, length - 1)))._t
    return wrap(c)


def _edge(v: object, t: Tensor, dim: int, arg: str) -> Tensor:
    """A prepend/append tensor: x's device, and x's shape except along the difference axis."""
    p = tensor(v, "diff", arg)
    check_same_device((t, p), "diff", f"x and {arg}")
    if p.dim() != t.dim() or builtins.any(p.shape[d] != t.shape[d] for d in range(t.dim()) if d != dim):
        raise ValueError(
            f"diff(): {arg} must have x's shape {tuple(t.shape)} except along axis {dim}, got {tuple(p.shape)}"
        )
    return p
