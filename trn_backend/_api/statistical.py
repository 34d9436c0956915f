"""Statistical functions of the standard: reductions and cumulative sums and products.

Every reduction moves the reduced axes to the end and flattens them into one (torch's reductions differ in
which accept several axes; one path serves all, and ``axis=()`` becomes a reduction over a length-1 axis, the
identity). sum and mean first try a fast path: torch's own reduction over the axes as given, where its dtype
rules are the standard's (``_fast_reduce``). Accumulation dtypes follow the standard: signed integers sum in
int64, unsigned ones in uint64 (wrapping modulo 2**64 on the int64 bits), bool in the default integer dtype.
mean, std and var promote integer and boolean input to the default floating dtype (the standard's required
result dtype for integer input, as in NumPy); std and var of complex input give the real dtype of matching
precision, as NumPy does.
"""

from __future__ import annotations

import builtins
import math
import numbers
from collections.abc import Callable, Sequence

import torch

from .. import _dtypes
from .._helpers import NeuronArray, normalize_axes, normalize_axis, tensor, wrap
from .sorting import order_key

__all__ = ["cumulative_prod", "cumulative_sum", "max", "mean", "min", "prod", "std", "sum", "var"]

Tensor = torch.Tensor
Axis = int | Sequence[int] | None


def reduce_axes(t: Tensor, axis: Axis, keepdims: bool, func: str, op: Callable[[Tensor], Tensor]) -> Tensor:
    """Apply ``op`` (a reduction over the last dimension) to ``t`` with ``axis`` flattened last."""
    axes = normalize_axes(axis, t.dim(), func)
    kept = [d for d in range(t.dim()) if d not in axes]
    reduced = math.prod(t.shape[d] for d in axes)
    flat = t.permute(kept + list(axes)).reshape([t.shape[d] for d in kept] + [reduced])
    out = op(flat)
    if keepdims:
        out = out.reshape([1 if d in axes else n for d, n in enumerate(t.shape)])
    return out


def _accumulation_dtype(x_dtype: torch.dtype, dtype: object, func: str) -> torch.dtype:
    """The result dtype of sum, prod and the cumulative functions: ``dtype`` if given, else the standard's
    default (integers widen to 64 bits keeping their signedness, bool counts in the default integer dtype)."""
    if dtype is not None:
        return _dtypes.to_dtype(dtype, f"{func}(dtype=...)")
    if x_dtype is _dtypes.bool or x_dtype in _dtypes.SIGNED_INT:
        return _dtypes.default_int()
    if x_dtype in _dtypes.UNSIGNED_INT:
        return _dtypes.uint64
    return x_dtype


def _accumulator_tensor(t: Tensor, target: torch.dtype) -> Tensor:
    """``t`` cast to ``target`` in a dtype torch accumulates in; bool accumulates as int64, and restoring
    the result to bool then reads it as logical or (sums) and logical and (products), as NumPy does."""
    c = _dtypes.compute(_dtypes.cast(t, target))
    return c.to(torch.int64) if c.dtype is _dtypes.bool else c


def _to_floating(t: Tensor) -> Tensor:
    return t if t.dtype in _dtypes.FLOATING else _dtypes.cast(t, _dtypes.default_float(t.device))


def _sum_or_prod(
    x: NeuronArray, axis: Axis, dtype: object, keepdims: bool, func: str, op: Callable[..., Tensor]
) -> NeuronArray:
    t = tensor(x, func)
    target = _accumulation_dtype(t.dtype, dtype, func)
    c = _accumulator_tensor(t, target)
    out = reduce_axes(c, axis, keepdims, func, lambda f: op(f, dim=-1, dtype=c.dtype))
    return wrap(_dtypes.restore(out, target))


# Fast paths: where torch's own reduction, given the axes as they are, is the standard's, a call skips the
# flattening of reduce_axes (which copies when the reduced axes are not the last ones).

# dtypes whose torch.sum without a dtype argument accumulates in the standard's accumulation dtype: their own
# for floating ones, int64 (the default integer dtype) for signed integers and bool
_SUM_NATIVE = frozenset(_dtypes.FLOATING + _dtypes.SIGNED_INT + (_dtypes.bool,))
_GENERAL = object()  # an axis argument the general path handles


def _torch_dims(axis: Axis, ndim: int, func: str) -> object:
    """``axis`` as torch's ``dim`` argument (None: every axis), or _GENERAL for the empty tuple of axes, which
    torch reads as every axis and the standard as none. Bad axes raise as in the general path."""
    if axis is None or (type(axis) is int and -ndim <= axis < ndim):
        return axis
    if type(axis) is tuple and axis:
        # distinct ints in range pass as they are, checked in a plain loop: this runs between reductions of
        # large arrays, which leave the caches cold, so every object it touches costs (normalize_axes, 1-2 us)
        seen = 0
        for a in axis:
            if type(a) is not int or not -ndim <= a < ndim or seen >> (a % ndim) & 1:
                break
            seen |= 1 << (a % ndim)
        else:
            return axis
    dims = normalize_axes(axis, ndim, func)
    return dims if dims else _GENERAL


def _fast_reduce(
    x: object, axis: Axis, keepdims: bool, func: str, op: Callable[..., Tensor], dtypes: frozenset[torch.dtype]
) -> NeuronArray | None:
    """``op`` (torch.sum or torch.mean) on a plain array of one of ``dtypes``; None where the general path must
    run (a registered subclass, sharded arrays, keeps its own)."""
    if type(x) is not NeuronArray or x._t.dtype not in dtypes:
        return None
    t = x._t
    if axis is None and not keepdims:
        return wrap(op(t))
    dims = _torch_dims(axis, t.dim(), func)
    return None if dims is _GENERAL else wrap(op(t, dim=dims, keepdim=builtins.bool(keepdims)))


def sum(
    x: NeuronArray,
    /,
    *,
    axis: Axis = None,
    dtype: _dtypes.DType | None = None,  # noqa: A001
    keepdims: bool = False,
) -> NeuronArray:
    """Sum over ``axis`` (all axes by default) in the standard's accumulation dtype; the empty sum is 0."""
    if dtype is None:
        out = _fast_reduce(x, axis, keepdims, "sum", torch.sum, _SUM_NATIVE)
        if out is not None:
            return out
    return _sum_or_prod(x, axis, dtype, keepdims, "sum", torch.sum)


def prod(
    x: NeuronArray, /, *, axis: Axis = None, dtype: _dtypes.DType | None = None, keepdims: bool = False
) -> NeuronArray:
    """Product over ``axis`` (all axes by default) in the standard's accumulation dtype; empty product 1."""
    return _sum_or_prod(x, axis, dtype, keepdims, "prod", torch.prod)


def _extreme(x: NeuronArray, axis: Axis, keepdims: bool, func: str, op: Callable[..., Tensor]) -> NeuronArray:
    """max/min in the ordered domain (uint64 compares with its sign bit flipped); NaN propagates."""
    t = tensor(x, func)

    def reduce(f: Tensor) -> Tensor:
        if f.shape[-1] == 0:
            raise ValueError(
                f"{func}(): zero-size reduction over axis={axis} of an array of shape "
                f"{tuple(t.shape)}; the {func}imum of no elements is undefined"
            )
        return op(f, dim=-1)

    out = reduce_axes(order_key(t, func), axis, keepdims, func, reduce)
    return wrap(_dtypes.unordered(out, t.dtype))


def max(x: NeuronArray, /, *, axis: Axis = None, keepdims: bool = False) -> NeuronArray:  # noqa: A001
    """Maximum over ``axis``; NaN propagates; an empty reduction is a ValueError (there is no identity)."""
    return _extreme(x, axis, keepdims, "max", torch.amax)


def min(x: NeuronArray, /, *, axis: Axis = None, keepdims: bool = False) -> NeuronArray:  # noqa: A001
    """Minimum over ``axis``; NaN propagates; an empty reduction is a ValueError (there is no identity)."""
    return _extreme(x, axis, keepdims, "min", torch.amin)


_MEAN_NATIVE = frozenset(_dtypes.FLOATING)


def mean(x: NeuronArray, /, *, axis: Axis = None, keepdims: bool = False) -> NeuronArray:
    """Arithmetic mean over ``axis`` (real or complex); integers give the default float; empty gives NaN."""
    out = _fast_reduce(x, axis, keepdims, "mean", torch.mean, _MEAN_NATIVE)
    if out is not None:
        return out
    t = _to_floating(tensor(x, "mean"))
    return wrap(reduce_axes(t, axis, keepdims, "mean", lambda f: torch.mean(f, dim=-1)))


def _spread(
    x: NeuronArray, axis: Axis, correction: float, keepdims: bool, func: str, op: Callable[..., Tensor]
) -> NeuronArray:
    """var/std with divisor M - correction; NaN where that divisor is not positive (the standard's rule)."""
    t = _to_floating(tensor(x, func))
    if isinstance(correction, bool) or not isinstance(correction, numbers.Real):
        raise TypeError(f"{func}(): correction must be an int or a float, got {type(correction).__name__}")

    def reduce(f: Tensor) -> Tensor:
        if f.shape[-1] - correction <= 0 or f.numel() == 0:  # (torch warns on empty input)
            return torch.full(f.shape[:-1], math.nan, dtype=_dtypes.real_of(f.dtype), device=f.device)
        return op(f, dim=-1, correction=correction)

    return wrap(reduce_axes(t, axis, keepdims, func, reduce))


def var(x: NeuronArray, /, *, axis: Axis = None, correction: int | float = 0.0, keepdims: bool = False) -> NeuronArray:
    """Variance over ``axis`` with divisor M - correction; NaN when M - correction <= 0."""
    return _spread(x, axis, correction, keepdims, "var", torch.var)


def std(x: NeuronArray, /, *, axis: Axis = None, correction: int | float = 0.0, keepdims: bool = False) -> NeuronArray:
    """Standard deviation over ``axis`` with divisor M - correction; NaN when M - correction <= 0."""
    return _spread(x, axis, correction, keepdims, "std", torch.std)


def _cumulative(
    x: NeuronArray,
    axis: int | None,
    dtype: object,
    include_initial: bool,
    func: str,
    op: Callable[..., Tensor],
    identity: int,
) -> NeuronArray:
    t = tensor(x, func)
    if t.dim() == 0:
        t = t.reshape(1)  # unspecified by the standard; NumPy treats a 0-d array as one element
    if axis is None:
        if t.dim() > 1:
            raise ValueError(
                f"{func}(): axis is required for an array of {t.dim()} dimensions (shape {tuple(t.shape)})"
            )
        axis = 0
    dim = normalize_axis(axis, t.dim(), func)
    target = _accumulation_dtype(t.dtype, dtype, func)
    c = _accumulator_tensor(t, target)
    out = op(c, dim=dim, dtype=c.dtype)
    if op is torch.cumprod and c.is_complex():
        out = _complex_products_as_numpy(c, out, dim)
    if include_initial:
        shape = list(c.shape)
        shape[dim] = 1
        out = torch.cat([torch.full(shape, identity, dtype=c.dtype, device=c.device), out], dim=dim)
    return wrap(_dtypes.restore(out, target))


def _complex_products_as_numpy(c: Tensor, out: Tensor, dim: int) -> Tensor:
    """Running complex products where they meet an infinity or NaN, recomputed as NumPy's: the first element
    as it is, then each product by the textbook formula (ac - bd) + (ad + bc)j, where torch's kernel differs
    (0+inf j times anything is NaN+NaN j there). Only the slices with a non-finite product are redone."""
    moved, done = c.movedim(dim, -1), out.movedim(dim, -1)
    bad = ~torch.isfinite(done).all(dim=-1)
    if not bool(bad.any()):
        return out
    src = moved[bad]
    re, im = src.real, src.imag
    pr, pi = re[..., 0], im[..., 0]
    parts_r, parts_i = [pr], [pi]
    for k in range(1, src.shape[-1]):  # sequential, as NumPy's accumulate; only over the non-finite slices
        br, bi = re[..., k], im[..., k]
        pr, pi = pr * br - pi * bi, pr * bi + pi * br
        parts_r.append(pr)
        parts_i.append(pi)
    redone = torch.complex(torch.stack(parts_r, dim=-1), torch.stack(parts_i, dim=-1))
    done = done.clone()
    done[bad] = redone
    return done.movedim(-1, dim)


def cumulative_sum(
    x: NeuronArray, /, *, axis: int | None = None, dtype: _dtypes.DType | None = None, include_initial: bool = False
) -> NeuronArray:
    """Running sum along ``axis`` (required for ndim > 1); include_initial prepends the empty sum 0."""
    return _cumulative(x, axis, dtype, include_initial, "cumulative_sum", torch.cumsum, 0)


def cumulative_prod(
    x: NeuronArray, /, *, axis: int | None = None, dtype: _dtypes.DType | None = None, include_initial: bool = False
) -> NeuronArray:
    """Running product along ``axis`` (required for ndim > 1); include_initial prepends the identity 1."""
    return _cumulative(x, axis, dtype, include_initial, "cumulative_prod", torch.cumprod, 1)
