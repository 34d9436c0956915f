"""NumPy functions on NeuronArray, each a few lines on the namespace (registered in the dispatch table).

Parameter names are NumPy's, so the dispatcher binds calls by name. Where NumPy's semantics differ from the
standard's (axis=None flattens, split sections, unique's flags, norm's ord/axis, einsum's interleaved form), the
NumPy meaning is implemented here. Integer input of floating-point functions (linalg, fft, norm) computes in the
device's default float: float64 as in NumPy, float32 on Neuron.
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import functools
import inspect
import itertools
import math
import operator
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import opt_einsum
import torch

import trn_backend as xp

from .. import _device, _dtypes, _precision
from .._helpers import NeuronArray, check_broadcastable, float_to_int, normalize_axes, normalize_axis
from ._registry import (
    TABLE,
    Binder,
    as_array,
    as_arrays,
    can_cast,
    device_of,
    implements,
    numpy_dtype,
    qualname,
    to_dtype,
    write_out,
)

A = NeuronArray
Shape = tuple[int, ...]

# Every namespace function is looked up at call time (``xp.<name>``), so this module imports while the
# namespace is still growing.


def _lookup(path: str) -> Callable[..., Any]:
    obj: Any = xp
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _direct(np_func: Callable[..., Any], path: str, arrays: str) -> None:
    """Register ``trn_backend.<path>`` for a NumPy function with the standard's own signature (NumPy's
    array-API-style additions): same parameter names and meaning, ``out=`` handled by the dispatcher. The
    positional parameters are declared positional-only, so the dispatcher passes them on by position: the
    namespace function may take them no other way."""
    signature = inspect.signature(np_func)

    def impl(*args: Any, **kwargs: Any) -> Any:
        return _lookup(path)(*args, **kwargs)

    positional = inspect.Parameter.POSITIONAL_OR_KEYWORD
    impl.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[p.replace(kind=inspect.Parameter.POSITIONAL_ONLY) if p.kind is positional else p
                    for p in signature.parameters.values() if p.name != "out"])
    impl.__name__ = np_func.__name__
    impl.__doc__ = f"{qualname(np_func)} as trn_backend.{path}: the same signature and semantics."
    implements(np_func, arrays=arrays)(impl)


def _cast(x: A, dtype: Any, casting: str, func: str) -> A:
    """``x`` as ``dtype`` if NumPy's ``casting`` rule allows it, else TypeError."""
    if not can_cast(x._t.dtype, dtype, casting):
        raise TypeError(f"{func}(): cannot cast {_dtypes.name(x.dtype)} to {_dtypes.name(dtype)} under "
                        f"casting={casting!r}")
    return xp.astype(x, dtype, copy=False)


def _cast_all(arrays: Sequence[A], dtype: Any, casting: str, func: str) -> list[A]:
    return list(arrays) if dtype is None else [_cast(x, dtype, casting, func) for x in arrays]


def _floating(x: A) -> A:
    """Integer and boolean input of a floating-point function computes in the default float."""
    return x if x._t.dtype in _dtypes.FLOATING else xp.astype(x, _dtypes.default_float(x.device))


def _complex(x: A) -> A:
    """Real input of a complex-input transform promotes to the matching complex dtype, as NumPy allows."""
    if x._t.dtype in _dtypes.COMPLEX_FLOAT:
        return x
    x = _floating(x)
    return xp.astype(x, _dtypes.complex_of(x._t.dtype))


def _flat(x: A) -> A:
    return xp.reshape(x, (-1,))


def _flattened(x: A) -> A:
    """``x`` flattened, as an operand only (a 1-d ``x`` itself: a reshape costs microseconds)."""
    return x if x.ndim == 1 else _flat(x)


def _to_end(a: A, axis1: int, axis2: int) -> A:
    """``a`` with ``axis1`` and ``axis2`` moved last, where the standard's matrix functions look."""
    return xp.moveaxis(a, (axis1, axis2), (-2, -1))


def _shape(shape: int | Sequence[int]) -> Shape:
    return (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(d) for d in shape)


def _axis_arg(axis: Any) -> Any:
    """NumPy takes lists where the namespace takes tuples of axes."""
    return axis if axis is None or isinstance(axis, (int, np.integer)) else tuple(axis)


# ---------------------------------------------------------------- contractions (the engine)

def _einsum_operands(operands: Sequence[Any]) -> tuple[str, list[Any]]:
    """Subscripts and operands of either einsum form: ``("ij,jk", a, b)`` or ``(a, [0, 1], b, [1, 2])``."""
    if operands and isinstance(operands[0], str):
        return operands[0], list(operands[1:])
    subscripts, ops = opt_einsum.parser.convert_interleaved_input(operands)
    return subscripts, list(ops)


def _optimize(optimize: Any) -> Any:
    """NumPy's ``optimize=True`` means opt_einsum's greedy path; everything else opt_einsum takes as is."""
    return "greedy" if optimize is True else optimize


@implements(np.einsum)
def einsum(*operands: Any, out: Any = None, optimize: Any = False, dtype: Any = None, casting: str = "safe",
           precision: str | None = None, target_forward_error: float | None = None) -> A:
    """numpy.einsum on the contraction engine: every product is a kernel call under ``precision`` (else the
    active ``trn_backend.precision`` context); ``optimize`` takes NumPy's values and opt_einsum's optimizers.
    ``casting`` (NumPy's default 'safe') rules both the cast of the operands to ``dtype`` and the write into
    ``out``."""
    subscripts, ops = _einsum_operands(operands)
    ops = _cast_all(as_arrays(ops, device_of(ops)), dtype, casting, "numpy.einsum")
    with _out_rounding(ops, out, precision, target_forward_error) as target_forward_error:
        result = xp.einsum(subscripts, *ops, optimize=_optimize(optimize), precision=precision,
                           target_forward_error=target_forward_error)
    return result if out is None else write_out(result, out, "numpy.einsum", casting=casting)


@contextlib.contextmanager
def _out_rounding(ops: list[Any], out: Any, precision: str | None, target_forward_error: float | None):
    """A target in force holds for what lands in ``out``: where out's dtype is narrower than the result's, the
    write rounds once more (unit u of out's dtype), so the expression runs under (1 + t) / (1 + u) - 1, which
    composes with that rounding to t (forward or relative alike). Yields the per-call forward target to pass."""
    forward, relative = _precision.targets(precision, target_forward_error)
    target = forward if forward is not None else relative
    u_out = _narrowing_unit(ops, out) if target is not None else 0.0
    if not u_out:
        yield target_forward_error
        return
    tighter = (1 + target) / (1 + u_out) - 1
    if not tighter > 0:
        raise _precision.PrecisionError(
            f"the target {target:g} is below the rounding of the result into out= of dtype "
            f"{_dtypes.name(out.dtype)} ({u_out:.3g}); pass out= of the result's dtype", "numpy.einsum")
    if target_forward_error is not None:
        yield tighter
        return
    with _precision.precision(**{"target_forward_error" if forward is not None else "target_relative_error":
                                 tighter}) as checks:
        yield None
    _precision.replay(checks or ())  # the checks belong to the enclosing block's report too


def _narrowing_unit(ops: list[Any], out: Any) -> float:
    """The unit roundoff of out's dtype where writing the einsum's result into it rounds (a narrower float
    dtype), else 0."""
    if not isinstance(out, NeuronArray) or not (out._t.dtype.is_floating_point or out._t.dtype.is_complex):
        return 0.0
    result = functools.reduce(_dtypes.promote, [o._t.dtype for o in ops if isinstance(o, NeuronArray)])
    if not (result.is_floating_point or result.is_complex):
        return 0.0
    eps_out, eps_result = (torch.finfo(d.to_real() if d.is_complex else d).eps for d in (out._t.dtype, result))
    return eps_out / 2 if eps_out > eps_result else 0.0


@implements(np.einsum_path)
def einsum_path(*operands: Any, optimize: Any = "greedy") -> tuple[list[Any], str]:
    """numpy.einsum_path answered by opt_einsum: NumPy's ``["einsum_path", *steps]`` (which np.einsum's
    ``optimize=`` accepts back) and opt_einsum's report."""
    subscripts, ops = _einsum_operands(operands)
    if isinstance(optimize, (list, tuple)) and optimize and optimize[0] == "einsum_path":
        optimize = list(optimize[1:])
    shapes = [tuple(o.shape) if hasattr(o, "shape") else np.shape(o) for o in ops]
    path, info = opt_einsum.contract_path(subscripts, *shapes, shapes=True, optimize=_optimize(optimize))
    return ["einsum_path", *path], str(info)


@implements(np.tensordot, arrays="a b")
def tensordot(a: A, b: A, axes: Any = 2) -> A:
    """numpy.tensordot on the engine."""
    return xp.tensordot(a, b, axes=axes)


@implements(np.dot, arrays="a b")
def dot(a: A, b: A) -> A:
    """numpy.dot: a product for 0-d operands, else the last axis of a with the second-to-last of b."""
    if a.ndim == 0 or b.ndim == 0:
        return xp.multiply(a, b)
    return xp.tensordot(a, b, axes=((a.ndim - 1,), (builtins.max(b.ndim - 2, 0),)))


@implements(np.vdot, arrays="a b")
def vdot(a: A, b: A) -> A:
    """numpy.vdot: the conjugated dot product of the flattened arrays."""
    if a.size != b.size:
        raise ValueError(f"numpy.vdot(): a has {a.size} elements but b has {b.size}; they must be equal")
    return xp.vecdot(_flat(a), _flat(b))


@implements(np.inner, arrays="a b")
def inner(a: A, b: A) -> A:
    """numpy.inner: the last axes of a and b contracted (a product for 0-d operands)."""
    if a.ndim == 0 or b.ndim == 0:
        return xp.multiply(a, b)
    return xp.tensordot(a, b, axes=((-1,), (-1,)))


@implements(np.outer, arrays="a b")
def outer(a: A, b: A) -> A:
    """numpy.outer: every element of flattened a times every element of flattened b."""
    return xp.multiply(xp.reshape(a, (-1, 1)), xp.reshape(b, (1, -1)))


@implements(np.kron, arrays="a b")
def kron(a: A, b: A) -> A:
    """numpy.kron: the Kronecker product, ranks aligned at the right."""
    nd = builtins.max(a.ndim, b.ndim)
    sa, sb = (1,) * (nd - a.ndim) + a.shape, (1,) * (nd - b.ndim) + b.shape
    spread_a = xp.reshape(a, tuple(d for s in sa for d in (s, 1)))
    spread_b = xp.reshape(b, tuple(d for s in sb for d in (1, s)))
    return xp.reshape(xp.multiply(spread_a, spread_b), tuple(i * j for i, j in zip(sa, sb, strict=True)))


@implements(np.trace, arrays="a")
def trace(a: A, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None) -> A:
    """numpy.trace: sums of diagonals over any two axes (booleans sum as int64, as in NumPy)."""
    if a._t.dtype is _dtypes.bool and dtype is None:
        a = xp.astype(a, _dtypes.int64)
    return xp.linalg.trace(_to_end(a, axis1, axis2), offset=offset, dtype=dtype)


@implements(np.diagonal, arrays="a")
def diagonal(a: A, offset: int = 0, axis1: int = 0, axis2: int = 1) -> A:
    """numpy.diagonal: the diagonal over any two axes, appended as the last axis."""
    return xp.linalg.diagonal(_to_end(a, axis1, axis2), offset=offset)


# ---------------------------------------------------------------- shapes and joins

@implements(np.transpose, arrays="a")
def transpose(a: A, axes: Sequence[int] | None = None) -> A:
    """numpy.transpose (also numpy.permute_dims): reversed axes by default."""
    order = reversed(range(a.ndim)) if axes is None else axes
    return xp.permute_dims(a, tuple(normalize_axis(i, a.ndim, "numpy.transpose") for i in order))


@implements(np.moveaxis, arrays="a")
def moveaxis(a: A, source: int | Sequence[int], destination: int | Sequence[int]) -> A:
    """numpy.moveaxis."""
    return xp.moveaxis(a, source, destination)


@implements(np.swapaxes, arrays="a")
def swapaxes(a: A, axis1: int, axis2: int) -> A:
    """numpy.swapaxes."""
    order = list(range(a.ndim))
    i, j = (normalize_axis(k, a.ndim, "numpy.swapaxes") for k in (axis1, axis2))
    order[i], order[j] = j, i
    return xp.permute_dims(a, tuple(order))


@implements(np.reshape, arrays="a")
def reshape(a: A, shape: int | Sequence[int], copy: bool | None = None) -> A:
    """numpy.reshape (C order)."""
    return xp.reshape(a, _shape(shape), copy=copy)


@implements(np.ravel, arrays="a")
def ravel(a: A) -> A:
    """numpy.ravel (C order)."""
    return _flat(a)


@implements(np.concatenate, sequences="arrays")
def concatenate(arrays: Sequence[A], axis: int | None = 0, dtype: Any = None, casting: str = "same_kind") -> A:
    """numpy.concatenate (also numpy.concat); axis=None joins the flattened arrays."""
    return xp.concat(_cast_all(arrays, dtype, casting, "numpy.concatenate"), axis=axis)


@implements(np.stack, sequences="arrays")
def stack(arrays: Sequence[A], axis: int = 0, dtype: Any = None, casting: str = "same_kind") -> A:
    """numpy.stack."""
    return xp.stack(_cast_all(arrays, dtype, casting, "numpy.stack"), axis=axis)


def _at_least(x: A, ndim: int) -> A:
    """NumPy's atleast_Nd: 0-d -> (1,..), 1-d (N,) -> (1, N[, 1]), 2-d (M, N) -> (M, N, 1)."""
    if x.ndim >= ndim:
        return x
    if ndim == 3:
        return xp.reshape(x, {0: (1, 1, 1), 1: (1, x.size, 1), 2: (*x.shape, 1)}[x.ndim])
    return xp.reshape(x, (1,) * (ndim - x.ndim) + x.shape)


def _at_least_all(arys: Sequence[A], ndim: int) -> A | tuple[A, ...]:
    out = tuple(_at_least(x, ndim) for x in arys)
    return out[0] if len(out) == 1 else out


@implements(np.atleast_1d, arrays="arys")
def atleast_1d(*arys: A) -> A | tuple[A, ...]:
    """numpy.atleast_1d."""
    return _at_least_all(arys, 1)


@implements(np.atleast_2d, arrays="arys")
def atleast_2d(*arys: A) -> A | tuple[A, ...]:
    """numpy.atleast_2d."""
    return _at_least_all(arys, 2)


@implements(np.atleast_3d, arrays="arys")
def atleast_3d(*arys: A) -> A | tuple[A, ...]:
    """numpy.atleast_3d."""
    return _at_least_all(arys, 3)


@implements(np.vstack, sequences="tup")
def vstack(tup: Sequence[A], dtype: Any = None, casting: str = "same_kind") -> A:
    """numpy.vstack: 1-d arrays become rows."""
    return xp.concat([_at_least(x, 2) for x in _cast_all(tup, dtype, casting, "numpy.vstack")], axis=0)


@implements(np.hstack, sequences="tup")
def hstack(tup: Sequence[A], dtype: Any = None, casting: str = "same_kind") -> A:
    """numpy.hstack: along axis 1, or axis 0 for 1-d arrays."""
    arrays = [_at_least(x, 1) for x in _cast_all(tup, dtype, casting, "numpy.hstack")]
    return xp.concat(arrays, axis=0 if arrays and arrays[0].ndim == 1 else 1)


@implements(np.dstack, sequences="tup")
def dstack(tup: Sequence[A]) -> A:
    """numpy.dstack: along the third axis."""
    return xp.concat([_at_least(x, 3) for x in tup], axis=2)


@implements(np.column_stack, sequences="tup")
def column_stack(tup: Sequence[A]) -> A:
    """numpy.column_stack: 1-d arrays become columns."""
    return xp.concat([xp.reshape(x, (-1, 1)) if x.ndim < 2 else x for x in tup], axis=1)


def _split(ary: A, indices_or_sections: Any, axis: int, func: str, *, equal: bool) -> list[A]:
    axis = normalize_axis(axis, ary.ndim, func)
    n = ary.shape[axis]
    if isinstance(indices_or_sections, (int, np.integer)) and not isinstance(indices_or_sections, bool):
        sections = int(indices_or_sections)
        if sections <= 0:
            raise ValueError(f"{func}(): the number of sections must be positive, got {sections}")
        if equal and n % sections:
            raise ValueError(f"{func}(): an axis of length {n} does not split into {sections} equal sections "
                             "(numpy.array_split allows unequal ones)")
        size, extra = divmod(n, sections)
        bounds = [i * size + builtins.min(i, extra) for i in range(sections + 1)]
    else:
        bounds = [0, *(int(i) for i in indices_or_sections), n]
    lead = (slice(None),) * axis
    return [ary[lead + (slice(lo, hi),)] for lo, hi in itertools.pairwise(bounds)]


@implements(np.split, arrays="ary")
def split(ary: A, indices_or_sections: Any, axis: int = 0) -> list[A]:
    """numpy.split: N equal sections, or cuts at the given indices."""
    return _split(ary, indices_or_sections, axis, "numpy.split", equal=True)


@implements(np.array_split, arrays="ary")
def array_split(ary: A, indices_or_sections: Any, axis: int = 0) -> list[A]:
    """numpy.array_split: like split, the first n % N sections one longer."""
    return _split(ary, indices_or_sections, axis, "numpy.array_split", equal=False)


def _split_at_least(ary: A, indices_or_sections: Any, ndim: int, axis: int, func: str) -> list[A]:
    if ary.ndim < ndim:
        raise ValueError(f"{func}() needs an array of at least {ndim} dimensions, got shape {ary.shape}")
    return _split(ary, indices_or_sections, axis, func, equal=True)


@implements(np.hsplit, arrays="ary")
def hsplit(ary: A, indices_or_sections: Any) -> list[A]:
    """numpy.hsplit: along axis 1 (axis 0 for 1-d arrays)."""
    return _split_at_least(ary, indices_or_sections, 1, 1 if ary.ndim > 1 else 0, "numpy.hsplit")


@implements(np.vsplit, arrays="ary")
def vsplit(ary: A, indices_or_sections: Any) -> list[A]:
    """numpy.vsplit: along axis 0."""
    return _split_at_least(ary, indices_or_sections, 2, 0, "numpy.vsplit")


@implements(np.dsplit, arrays="ary")
def dsplit(ary: A, indices_or_sections: Any) -> list[A]:
    """numpy.dsplit: along axis 2."""
    return _split_at_least(ary, indices_or_sections, 3, 2, "numpy.dsplit")


@implements(np.squeeze, arrays="a")
def squeeze(a: A, axis: int | Sequence[int] | None = None) -> A:
    """numpy.squeeze: every length-1 axis by default."""
    axes = tuple(i for i, d in enumerate(a.shape) if d == 1) if axis is None else axis
    return xp.squeeze(a, axis=axes)


@implements(np.expand_dims, arrays="a")
def expand_dims(a: A, axis: int | Sequence[int]) -> A:
    """numpy.expand_dims (one axis or several)."""
    return xp.expand_dims(a, axis=_axis_arg(axis))


@implements(np.broadcast_to, arrays="array")
def broadcast_to(array: A, shape: int | Sequence[int]) -> A:
    """numpy.broadcast_to."""
    return xp.broadcast_to(array, _shape(shape))


@implements(np.broadcast_arrays, arrays="args")
def broadcast_arrays(*args: A) -> tuple[A, ...]:
    """numpy.broadcast_arrays."""
    return tuple(xp.broadcast_arrays(*args))


@implements(np.flip, arrays="m")
def flip(m: A, axis: int | Sequence[int] | None = None) -> A:
    """numpy.flip."""
    return xp.flip(m, axis=_axis_arg(axis))


@implements(np.roll, arrays="a")
def roll(a: A, shift: int | Sequence[int], axis: int | Sequence[int] | None = None) -> A:
    """numpy.roll."""
    return xp.roll(a, shift=_axis_arg(shift), axis=_axis_arg(axis))


@implements(np.tile, arrays="A")
def tile(A: A, reps: int | Sequence[int]) -> A:
    """numpy.tile."""
    return xp.tile(A, _shape(reps))


@implements(np.repeat, arrays="a repeats", weak="repeats")
def repeat(a: A, repeats: int | A, axis: int | None = None) -> A:
    """numpy.repeat."""
    return xp.repeat(a, repeats, axis=axis)


@implements(np.tril, arrays="m")
def tril(m: A, k: int = 0) -> A:
    """numpy.tril (a 1-d m is read as the square matrix of its rows, as in NumPy)."""
    return xp.tril(_square_if_vector(m), k=k)


@implements(np.triu, arrays="m")
def triu(m: A, k: int = 0) -> A:
    """numpy.triu (a 1-d m is read as the square matrix of its rows, as in NumPy)."""
    return xp.triu(_square_if_vector(m), k=k)


def _square_if_vector(m: A) -> A:
    return xp.broadcast_to(m, (m.shape[0], m.shape[0])) if m.ndim == 1 else m


@implements(np.meshgrid, arrays="xi")
def meshgrid(*xi: A, copy: bool = True, indexing: str = "xy") -> tuple[A, ...]:
    """numpy.meshgrid (dense; copy=False gives broadcast views)."""
    grids = xp.meshgrid(*xi, indexing=indexing)
    return tuple(xp.asarray(g, copy=True) for g in grids) if copy else tuple(grids)


@implements(np.shape, arrays="a")
def shape(a: A) -> Shape:
    """numpy.shape (a tuple of ints, as in NumPy)."""
    return a.shape


@implements(np.ndim, arrays="a")
def ndim(a: A) -> int:
    """numpy.ndim."""
    return a.ndim


@implements(np.size, arrays="a")
def size(a: A, axis: int | None = None) -> int:
    """numpy.size: of the array, or of one axis."""
    return a.size if axis is None else a.shape[normalize_axis(axis, a.ndim, "numpy.size")]


# ---------------------------------------------------------------- indexing and searching

def _truth(x: A) -> A:
    """NumPy takes any array as a condition: its elements' truth values."""
    return x if x._t.dtype is _dtypes.bool else xp.astype(x, _dtypes.bool)


@implements(np.where, arrays="condition x y", weak="x y")
def where(condition: A, x: Any = None, y: Any = None) -> A | tuple[A, ...]:
    """numpy.where: choose from x and y, or with the condition alone, numpy.nonzero of it."""
    if x is None and y is None:
        return nonzero(condition)
    if x is None or y is None:
        raise ValueError("numpy.where(): give both x and y, or neither")
    if not isinstance(x, A) and not isinstance(y, A):
        # two Python scalars: NumPy types each by its value alone (1 is int64, 2.0 float64), as arrays
        x, y = as_array(x, condition.device), as_array(y, condition.device)
    return xp.where(_truth(condition), x, y)


@implements(np.nonzero, arrays="a")
def nonzero(a: A) -> tuple[A, ...]:
    """numpy.nonzero: one index array per axis."""
    return tuple(xp.nonzero(a))


@implements(np.flatnonzero, arrays="a")
def flatnonzero(a: A) -> A:
    """numpy.flatnonzero: indices of the nonzero elements of the flattened array."""
    return xp.nonzero(_flat(a))[0]


@implements(np.count_nonzero, arrays="a")
def count_nonzero(a: A, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> A:
    """numpy.count_nonzero (a 0-d array where NumPy gives an int for axis=None: it stays on the device)."""
    return xp.count_nonzero(a, axis=axis, keepdims=keepdims)


@implements(np.searchsorted, arrays="a v sorter", weak="v")
def searchsorted(a: A, v: Any, side: str = "left", sorter: A | None = None) -> A:
    """numpy.searchsorted."""
    return xp.searchsorted(a, v, side=side, sorter=sorter)


@implements(np.take, arrays="a indices")
def take(a: A, indices: A, axis: int | None = None) -> A:
    """numpy.take: indices of any shape, which replaces the taken axis (the flattened array for axis=None)."""
    if axis is None:
        a, axis = _flat(a), 0
    axis = normalize_axis(axis, a.ndim, "numpy.take")
    taken = xp.take(a, _flat(indices), axis=axis)
    return xp.reshape(taken, a.shape[:axis] + indices.shape + a.shape[axis + 1:])


@implements(np.take_along_axis, arrays="arr indices")
def take_along_axis(arr: A, indices: A, axis: int | None = -1) -> A:
    """numpy.take_along_axis (axis=None on the flattened array)."""
    if axis is None:
        arr, axis = _flat(arr), 0
    return xp.take_along_axis(arr, indices, axis=axis)


@implements(np.isin, arrays="element test_elements")
def isin(element: A, test_elements: A, assume_unique: bool = False, invert: bool = False,
         kind: str | None = None) -> A:
    """numpy.isin (assume_unique and kind are performance hints; the answer does not depend on them)."""
    return xp.isin(element, test_elements, invert=invert)


def _check_kind(kind: str | None, stable: bool | None, func: str) -> None:
    if kind not in (None, "quicksort", "mergesort", "heapsort", "stable"):
        raise ValueError(f"{func}(): unknown kind={kind!r}; use 'quicksort', 'mergesort', 'heapsort' or 'stable'")
    if kind is not None and stable is not None:
        raise ValueError(f"{func}(): give kind= or stable=, not both")


@implements(np.sort, arrays="a")
def sort(a: A, axis: int | None = -1, kind: str | None = None, stable: bool | None = None) -> A:
    """numpy.sort (always stable, which every kind allows; axis=None sorts the flattened array)."""
    _check_kind(kind, stable, "numpy.sort")
    if axis is None:
        a, axis = _flat(a), -1
    return xp.sort(a, axis=axis, stable=True)


@implements(np.argsort, arrays="a")
def argsort(a: A, axis: int | None = -1, kind: str | None = None, stable: bool | None = None) -> A:
    """numpy.argsort (always stable, which every kind allows; axis=None on the flattened array)."""
    _check_kind(kind, stable, "numpy.argsort")
    if axis is None:
        a, axis = _flat(a), -1
    return xp.argsort(a, axis=axis, stable=True)


def _run_starts(s: A, equal_nan: bool) -> A:
    """Mask of the first element of each run of equal values in the sorted 1-d ``s``."""
    if s.shape[0] == 0:
        return xp.zeros((0,), dtype=_dtypes.bool, device=s.device)
    new = xp.not_equal(s[1:], s[:-1])
    if equal_nan and s._t.dtype in _dtypes.FLOATING:
        new = xp.logical_and(new, xp.logical_not(xp.logical_and(xp.isnan(s[1:]), xp.isnan(s[:-1]))))
    return xp.concat([xp.ones((1,), dtype=_dtypes.bool, device=s.device), new])


@implements(np.unique, arrays="ar")
def unique(ar: A, return_index: bool = False, return_inverse: bool = False, return_counts: bool = False,
           equal_nan: bool = True, sorted: bool = True) -> A | tuple[A, ...]:
    """numpy.unique of the flattened array, sorted (which sorted=False allows), NaNs merged under equal_nan;
    the inverse has the input's shape, as in NumPy 2."""
    flat = _flat(ar)
    order = xp.argsort(flat, stable=True)  # stable: each run starts at the value's first occurrence
    starts = _run_starts(xp.take(flat, order), equal_nan)
    values = xp.take(flat, order)[starts]
    extras = []
    if return_index:
        extras.append(order[starts])
    if return_inverse:
        group = xp.cumulative_sum(starts, dtype=_dtypes.int64) - 1
        extras.append(xp.reshape(xp.take(group, xp.argsort(order)), ar.shape))
    if return_counts:
        first = xp.nonzero(starts)[0]
        extras.append(xp.diff(first, append=xp.asarray([flat.size], device=ar.device)))
    return (values, *extras) if extras else values


for _name in ("unique_values", "unique_counts", "unique_inverse", "unique_all"):
    _direct(getattr(np, _name), _name, arrays="x")


# ---------------------------------------------------------------- reductions

def _reduced_shape(a: A, axis: Any, keepdims: bool, func: str) -> Shape:
    axes = normalize_axes(axis, a.ndim, func)
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(a.shape))
    return tuple(d for i, d in enumerate(a.shape) if i not in axes)


@implements(np.sum, arrays="a")
def sum(a: A, axis: Any = None, dtype: Any = None, keepdims: bool = False, initial: Any = None) -> A:
    """numpy.sum (integers accumulate in int64/uint64, as in NumPy and the standard)."""
    r = xp.sum(a, axis=axis, dtype=dtype, keepdims=keepdims)
    return r if initial is None else xp.add(r, initial)


@implements(np.prod, arrays="a")
def prod(a: A, axis: Any = None, dtype: Any = None, keepdims: bool = False, initial: Any = None) -> A:
    """numpy.prod (integers accumulate in int64/uint64)."""
    r = xp.prod(a, axis=axis, dtype=dtype, keepdims=keepdims)
    return r if initial is None else xp.multiply(r, initial)


def _extreme(which: str, a: A, axis: Any, keepdims: bool, initial: Any) -> A:
    """max/min with NumPy's ``initial``: combined with the result, and the value of an empty reduction."""
    func = f"numpy.{which}"
    if initial is None:
        return getattr(xp, which)(a, axis=axis, keepdims=keepdims)
    shape = _reduced_shape(a, axis, keepdims, func)
    if a._t.dtype is _dtypes.bool:  # NumPy casts initial to bool; max is any, min is all
        initial = builtins.bool(initial)
    if a.size == 0:
        return xp.full(shape, initial, dtype=a.dtype, device=a.device)
    if a._t.dtype is _dtypes.bool:
        combine = xp.logical_or if which == "max" else xp.logical_and
        return combine(getattr(xp, which)(a, axis=axis, keepdims=keepdims), initial)
    combine = xp.maximum if which == "max" else xp.minimum
    return combine(getattr(xp, which)(a, axis=axis, keepdims=keepdims), initial)


@implements(np.max, np.amax, arrays="a")
def max(a: A, axis: Any = None, keepdims: bool = False, initial: Any = None) -> A:
    """numpy.max / numpy.amax (NaN propagates)."""
    return _extreme("max", a, axis, keepdims, initial)


@implements(np.min, np.amin, arrays="a")
def min(a: A, axis: Any = None, keepdims: bool = False, initial: Any = None) -> A:
    """numpy.min / numpy.amin (NaN propagates)."""
    return _extreme("min", a, axis, keepdims, initial)


@implements(np.ptp, arrays="a")
def ptp(a: A, axis: Any = None, keepdims: bool = False) -> A:
    """numpy.ptp: max minus min."""
    return xp.subtract(xp.max(a, axis=axis, keepdims=keepdims), xp.min(a, axis=axis, keepdims=keepdims))


@implements(np.argmax, arrays="a")
def argmax(a: A, axis: int | None = None, keepdims: bool = False) -> A:
    """numpy.argmax (the first NaN counts as the maximum)."""
    return xp.argmax(a, axis=axis, keepdims=keepdims)


@implements(np.argmin, arrays="a")
def argmin(a: A, axis: int | None = None, keepdims: bool = False) -> A:
    """numpy.argmin (the first NaN counts as the minimum)."""
    return xp.argmin(a, axis=axis, keepdims=keepdims)


@implements(np.mean, arrays="a")
def mean(a: A, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> A:
    """numpy.mean (integers average in the default float, float32, where NumPy uses float64)."""
    return xp.mean(a if dtype is None else xp.astype(a, dtype), axis=axis, keepdims=keepdims)


def _moment(which: str, a: A, axis: Any, dtype: Any, ddof: float, keepdims: bool, correction: Any) -> A:
    if correction is not None and ddof != 0:
        raise ValueError(f"numpy.{which}(): give ddof= or correction=, not both")
    a = a if dtype is None else xp.astype(a, dtype)
    return getattr(xp, which)(a, axis=axis, correction=ddof if correction is None else correction,
                              keepdims=keepdims)


@implements(np.var, arrays="a")
def var(a: A, axis: Any = None, dtype: Any = None, ddof: float = 0, keepdims: bool = False,
        correction: Any = None) -> A:
    """numpy.var (ddof or correction)."""
    return _moment("var", a, axis, dtype, ddof, keepdims, correction)


@implements(np.std, arrays="a")
def std(a: A, axis: Any = None, dtype: Any = None, ddof: float = 0, keepdims: bool = False,
        correction: Any = None) -> A:
    """numpy.std (ddof or correction)."""
    return _moment("std", a, axis, dtype, ddof, keepdims, correction)


@implements(np.cumsum, arrays="a")
def cumsum(a: A, axis: int | None = None, dtype: Any = None) -> A:
    """numpy.cumsum (axis=None on the flattened array)."""
    if axis is None:
        a, axis = _flattened(a), 0
    return xp.cumulative_sum(a, axis=axis, dtype=dtype)


@implements(np.cumprod, arrays="a")
def cumprod(a: A, axis: int | None = None, dtype: Any = None) -> A:
    """numpy.cumprod (axis=None on the flattened array)."""
    if axis is None:
        a, axis = _flattened(a), 0
    return xp.cumulative_prod(a, axis=axis, dtype=dtype)


_direct(np.cumulative_sum, "cumulative_sum", arrays="x")
_direct(np.cumulative_prod, "cumulative_prod", arrays="x")


@implements(np.all, arrays="a")
def all(a: A, axis: Any = None, keepdims: bool = False) -> A:
    """numpy.all."""
    return xp.all(a, axis=axis, keepdims=keepdims)


@implements(np.any, arrays="a")
def any(a: A, axis: Any = None, keepdims: bool = False) -> A:
    """numpy.any."""
    return xp.any(a, axis=axis, keepdims=keepdims)


@implements(np.diff, arrays="a prepend append")
def diff(a: A, n: int = 1, axis: int = -1, prepend: A | None = None, append: A | None = None) -> A:
    """numpy.diff; a 0-d prepend or append is repeated along the axis, as in NumPy."""
    axis = normalize_axis(axis, a.ndim, "numpy.diff")
    edge = tuple(1 if i == axis else d for i, d in enumerate(a.shape))
    prepend, append = (v if v is None or v.ndim else xp.broadcast_to(v, edge) for v in (prepend, append))
    return xp.diff(a, axis=axis, n=n, prepend=prepend, append=append)


# ---------------------------------------------------------------- element-wise functions that are not ufuncs

@implements(np.clip, arrays="a a_min a_max min max", weak="a_min a_max min max")
def clip(a: A, a_min: Any = None, a_max: Any = None, min: Any = None, max: Any = None) -> A:
    """numpy.clip: the bounds promote with a (NumPy 2: an int array clipped at 0.5 becomes floating)."""
    if (a_min is not None and min is not None) or (a_max is not None and max is not None):
        raise ValueError("numpy.clip(): give a_min/a_max or min/max, not both spellings of one bound")
    lo, hi = (a_min if min is None else min), (a_max if max is None else max)
    bounds = [b for b in (lo, hi) if b is not None]
    dtype = xp.result_type(a, *bounds)
    lo, hi = (b if b is None or not isinstance(b, A) else xp.astype(b, dtype) for b in (lo, hi))
    return xp.clip(a if a.dtype == dtype else xp.astype(a, dtype), lo, hi)


@implements(np.round, np.around, arrays="a")
def round(a: A, decimals: int = 0) -> A:
    """numpy.round: half to even at ``decimals`` places. Floats scale, round and unscale as NumPy does;
    integers round exactly to tens, hundreds, ... for negative decimals (NumPy's float64 detour is exact only
    below 2**53), and a result beyond the dtype wraps modulo 2**bits, as integer multiplication does."""
    decimals = operator.index(decimals)  # as a Python int: NumPy refuses 10 ** -np.int64(2)
    if decimals == 0 or (decimals > 0 and a._t.dtype not in _dtypes.FLOATING):
        return xp.round(a) if a._t.dtype in _dtypes.FLOATING else xp.asarray(a, copy=True)
    if a._t.dtype in _dtypes.FLOATING:
        scale = 10.0 ** abs(decimals)
        if decimals > 0:
            return xp.divide(xp.round(xp.multiply(a, scale)), scale)
        return xp.multiply(xp.round(xp.divide(a, scale)), scale)
    return _round_integer(a, 10 ** -decimals)


def _round_integer(a: A, step: int) -> A:
    """Integers rounded half to even to a multiple of ``step`` (10, 100, ...), exactly. The magnitude rounds in
    uint64, which holds every |x| and every step up to 10**19 (no intermediate overflows: r > step - r is the
    test, not 2 * r > step); half to even is symmetric, so the sign comes back after, and the result wraps back
    into a's dtype."""
    u64 = _dtypes.uint64
    if step > _dtypes.int_range(u64)[1]:  # 10**20 and up: every |x| < 2**64 is under half a step, so 0
        return xp.zeros_like(a)
    negative = xp.less(a, 0)
    bits = xp.astype(a, u64)  # a negative x as its two's complement, so negating it gives |x|
    magnitude = xp.where(negative, xp.negative(bits), bits)
    q, r = xp.floor_divide(magnitude, step), xp.remainder(magnitude, step)
    rest = xp.subtract(step, r)
    up = xp.logical_or(xp.greater(r, rest), xp.logical_and(xp.equal(r, rest), xp.equal(xp.remainder(q, 2), 1)))
    rounded = xp.multiply(xp.add(q, xp.astype(up, u64)), step)
    return xp.astype(xp.where(negative, xp.negative(rounded), rounded), a.dtype)


def _close_operands(a: Any, b: Any, func: str) -> tuple[Any, Any]:
    """a and b in their common floating dtype (NumPy's: integers compare as float64); their shapes must
    broadcast."""
    if isinstance(b, A) and a.shape != b.shape:
        check_broadcastable(a.shape, b.shape, func)
    dtype = _dtypes.to_dtype(xp.result_type(a, b))
    dtype = dtype if dtype in _dtypes.FLOATING else _dtypes.float64
    return xp.astype(a, dtype, copy=False), xp.asarray(b, dtype=dtype, device=a.device)


@implements(np.isclose, arrays="a b", weak="b")
def isclose(a: A, b: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> A:
    """numpy.isclose: |a - b| <= atol + rtol * |b| where b is finite; equal values (infinities) always."""
    return _isclose(a, b, rtol, atol, equal_nan, "numpy.isclose")


def _isclose(a: A, b: Any, rtol: float, atol: float, equal_nan: bool, func: str) -> A:
    a, b = _close_operands(a, b, func)
    close = xp.less_equal(xp.abs(xp.subtract(a, b)), xp.add(atol, xp.multiply(rtol, xp.abs(b))))
    result = xp.logical_or(xp.logical_and(close, xp.isfinite(b)), xp.equal(a, b))
    if equal_nan:
        result = xp.logical_or(result, xp.logical_and(xp.isnan(a), xp.isnan(b)))
    return result


@implements(np.allclose, arrays="a b", weak="b")
def allclose(a: A, b: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    """numpy.allclose (a Python bool, as in NumPy)."""
    return builtins.bool(xp.all(_isclose(a, b, rtol, atol, equal_nan, "numpy.allclose")))


@implements(np.array_equal, arrays="a1 a2")
def array_equal(a1: A, a2: A, equal_nan: bool = False) -> bool:
    """numpy.array_equal (a Python bool): same shape and elements, NaNs equal under equal_nan."""
    if a1.shape != a2.shape:
        return False
    same = xp.equal(a1, a2)
    if equal_nan and _dtypes.to_dtype(xp.result_type(a1, a2)) in _dtypes.FLOATING:
        same = xp.logical_or(same, xp.logical_and(xp.isnan(a1), xp.isnan(a2)))
    return builtins.bool(xp.all(same))


@implements(np.real, arrays="val")
def real(val: A) -> A:
    """numpy.real (a real array is its own real part)."""
    return xp.real(val) if val._t.dtype in _dtypes.COMPLEX_FLOAT else val


@implements(np.imag, arrays="val")
def imag(val: A) -> A:
    """numpy.imag (zeros for a real array)."""
    return xp.imag(val) if val._t.dtype in _dtypes.COMPLEX_FLOAT else xp.zeros_like(val)


# ---------------------------------------------------------------- creation from a prototype

def _like(fill: str, a: A, dtype: Any, shape: Any, device: Any, *fill_value: Any, order: str = "K") -> A:
    """``fill`` (zeros, ones, empty, full) shaped like ``a``: the namespace's ``<fill>_like``, unless ``shape``
    is given. NeuronArrays are C-ordered, which orders K, A and C all give."""
    _check_order(order, f"numpy.{fill}_like")
    if shape is None:
        return getattr(xp, f"{fill}_like")(a, *fill_value, dtype=dtype, device=device)
    dtype = a.dtype if dtype is None else dtype
    device = a.device if device is None else device
    return getattr(xp, fill)(_shape(shape), *fill_value, dtype=dtype, device=device)


@implements(np.zeros_like, arrays="a")
def zeros_like(a: A, dtype: Any = None, order: str = "K", shape: Any = None, device: Any = None) -> A:
    """numpy.zeros_like (on a's device unless device= says otherwise)."""
    return _like("zeros", a, dtype, shape, device, order=order)


@implements(np.ones_like, arrays="a")
def ones_like(a: A, dtype: Any = None, order: str = "K", shape: Any = None, device: Any = None) -> A:
    """numpy.ones_like."""
    return _like("ones", a, dtype, shape, device, order=order)


@implements(np.empty_like, arrays="prototype")
def empty_like(prototype: A, dtype: Any = None, order: str = "K", shape: Any = None, device: Any = None) -> A:
    """numpy.empty_like."""
    return _like("empty", prototype, dtype, shape, device, order=order)


@implements(np.full_like, arrays="a")
def full_like(a: A, fill_value: Any, dtype: Any = None, order: str = "K", shape: Any = None,
              device: Any = None) -> A:
    """numpy.full_like: the value is cast to the result's dtype as NumPy casts it (1.9 fills an int array with 1).
    A Python int must fit the dtype (OverflowError, as in NumPy); a float into an integer dtype is truncated, and
    NaN or a float beyond the dtype is refused (NumPy stores an undefined value there)."""
    target = a._t.dtype if dtype is None else to_dtype(dtype, "numpy.full_like")
    if isinstance(fill_value, (float, np.floating)) and target in _dtypes.INTEGER:
        fill_value = float_to_int(float(fill_value), target, "numpy.full_like()")
    # a Python int (or bool) goes as it is: the namespace range-checks it against the dtype
    if not isinstance(fill_value, (A, builtins.bool, int)):
        # a 0-d array on the result's device: cast to the result's dtype, not refused
        fill_value = xp.asarray(np.asarray(fill_value), device=a.device if device is None else device)
    return _like("full", a, dtype, shape, device, fill_value, order=order)


@implements(np.copy, arrays="a")
def copy(a: A) -> A:
    """numpy.copy: a new array on the same device."""
    return xp.asarray(a, copy=True)


@implements(np.astype, arrays="x")
def astype(x: A, dtype: Any, /, *, copy: bool = True, device: Any = None) -> A:
    """numpy.astype: NumPy's unsafe cast, so complex to real keeps the real part with a ComplexWarning (the
    namespace's astype refuses that, as the standard asks)."""
    return xp.astype(real_part_if_narrowing(x, dtype), dtype, copy=copy, device=device)


def real_part_if_narrowing(x: A, dtype: Any) -> A:
    """x, or its real part with NumPy's ComplexWarning where ``dtype`` is real and x complex."""
    if x._t.dtype in _dtypes.COMPLEX_FLOAT and _dtypes.to_dtype(dtype) not in _dtypes.COMPLEX_FLOAT:
        warnings.warn("Casting complex values to real discards the imaginary part", np.exceptions.ComplexWarning,
                      stacklevel=4)
        return xp.real(x)
    return x


# ---------------------------------------------------------------- linalg

def _hermitian_lower(a: A, uplo: str, func: str) -> A:
    """The matrix whose lower triangle holds the Hermitian matrix NumPy reads from ``UPLO``."""
    if uplo not in ("L", "U"):
        raise ValueError(f"{func}(): UPLO must be 'L' or 'U', got {uplo!r}")
    a = _floating(a)
    return a if uplo == "L" else xp.conj(xp.matrix_transpose(a))


@implements(np.linalg.norm, arrays="x")
def norm(x: A, ord: Any = None, axis: Any = None, keepdims: bool = False) -> A:
    """numpy.linalg.norm: a vector norm over one axis, a matrix norm over two, the 2-norm of the flattened
    array for ord=None and axis=None."""
    x = _floating(x)
    if axis is None:
        if ord is None:
            return xp.linalg.vector_norm(x, keepdims=keepdims)
        if x.ndim not in (1, 2):
            raise ValueError(f"numpy.linalg.norm(): ord={ord!r} needs a 1-d or 2-d array or axis=, got shape "
                             f"{x.shape}")
        axis = tuple(range(x.ndim))
    axes = normalize_axes(axis, x.ndim, "numpy.linalg.norm")
    if len(axes) == 1:
        if isinstance(ord, str):
            raise ValueError(f"numpy.linalg.norm(): ord={ord!r} is a matrix norm; vectors take numbers")
        return xp.linalg.vector_norm(x, axis=axes, ord=2 if ord is None else ord, keepdims=keepdims)
    if len(axes) != 2:
        raise ValueError(f"numpy.linalg.norm(): axis must name one or two axes, got {axis!r}")
    m = xp.linalg.matrix_norm(xp.moveaxis(x, axes, (-2, -1)), ord="fro" if ord is None else ord)
    return xp.expand_dims(m, axis=tuple(sorted(axes))) if keepdims else m


@implements(np.linalg.solve, arrays="a b")
def solve(a: A, b: A) -> A:
    """numpy.linalg.solve (b is a vector only when 1-d, as in NumPy 2)."""
    return xp.linalg.solve(_floating(a), _floating(b))


@implements(np.linalg.inv, arrays="a")
def inv(a: A) -> A:
    """numpy.linalg.inv."""
    return xp.linalg.inv(_floating(a))


@implements(np.linalg.det, arrays="a")
def det(a: A) -> A:
    """numpy.linalg.det."""
    return xp.linalg.det(_floating(a))


@implements(np.linalg.slogdet, arrays="a")
def slogdet(a: A) -> Any:
    """numpy.linalg.slogdet: (sign, logabsdet)."""
    return xp.linalg.slogdet(_floating(a))


@implements(np.linalg.eigh, arrays="a")
def eigh(a: A, UPLO: str = "L") -> Any:
    """numpy.linalg.eigh from the triangle UPLO names."""
    return xp.linalg.eigh(_hermitian_lower(a, UPLO, "numpy.linalg.eigh"))


@implements(np.linalg.eigvalsh, arrays="a")
def eigvalsh(a: A, UPLO: str = "L") -> A:
    """numpy.linalg.eigvalsh from the triangle UPLO names."""
    return xp.linalg.eigvalsh(_hermitian_lower(a, UPLO, "numpy.linalg.eigvalsh"))


@implements(np.linalg.svd, arrays="a")
def svd(a: A, full_matrices: bool = True, compute_uv: bool = True) -> Any:
    """numpy.linalg.svd (the singular values alone for compute_uv=False)."""
    a = _floating(a)
    return xp.linalg.svd(a, full_matrices=full_matrices) if compute_uv else xp.linalg.svdvals(a)


@implements(np.linalg.qr, arrays="a")
def qr(a: A, mode: str = "reduced") -> Any:
    """numpy.linalg.qr for modes 'reduced', 'complete' and 'r' (R alone)."""
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"numpy.linalg.qr(): mode={mode!r} is not supported on NeuronArray; use 'reduced', "
                         "'complete' or 'r'")
    result = xp.linalg.qr(_floating(a), mode="reduced" if mode == "r" else mode)
    return result.R if mode == "r" else result


@implements(np.linalg.cholesky, arrays="a")
def cholesky(a: A, upper: bool = False) -> A:
    """numpy.linalg.cholesky."""
    return xp.linalg.cholesky(_floating(a), upper=upper)


@implements(np.linalg.matrix_rank, arrays="A tol rtol", weak="tol rtol")
def matrix_rank(A: A, tol: Any = None, hermitian: bool = False, rtol: Any = None) -> A:
    """numpy.linalg.matrix_rank: singular values above tol (absolute) or rtol times the largest; hermitian
    is a hint (a Hermitian matrix's singular values are its eigenvalues' magnitudes)."""
    A = _floating(A)
    if tol is not None and rtol is not None:
        raise ValueError("numpy.linalg.matrix_rank(): give tol= or rtol=, not both")
    if A.ndim < 2:
        return xp.astype(xp.any(A), _dtypes.int64)
    if tol is not None:
        return xp.count_nonzero(xp.greater(xp.linalg.svdvals(A), tol), axis=-1)
    return xp.linalg.matrix_rank(A, rtol=rtol)


@implements(np.linalg.pinv, arrays="a rcond rtol", weak="rcond rtol")
def pinv(a: A, rcond: Any = None, hermitian: bool = False, rtol: Any = np._NoValue) -> A:
    """numpy.linalg.pinv with NumPy's cutoff (1e-15 relative unless rcond or rtol is given); hermitian is a
    hint that does not change the result."""
    if rcond is not None and rtol is not np._NoValue:
        raise ValueError("numpy.linalg.pinv(): give rcond= or rtol=, not both")
    if rcond is None:
        rcond = 1e-15 if rtol is np._NoValue else rtol
    return xp.linalg.pinv(_floating(a), rtol=rcond)


@implements(np.linalg.matrix_power, arrays="a")
def matrix_power(a: A, n: int) -> A:
    """numpy.linalg.matrix_power."""
    return xp.linalg.matrix_power(a, n)


for _np_func, _path, _arrays in (
    (np.linalg.matmul, "matmul", "x1 x2"), (np.linalg.tensordot, "tensordot", "x1 x2"),
    (np.linalg.vecdot, "vecdot", "x1 x2"), (np.linalg.outer, "linalg.outer", "x1 x2"),
    (np.linalg.cross, "linalg.cross", "x1 x2"), (np.linalg.matrix_transpose, "matrix_transpose", "x"),
    (np.matrix_transpose, "matrix_transpose", "x"), (np.linalg.trace, "linalg.trace", "x"),
    (np.linalg.diagonal, "linalg.diagonal", "x"), (np.linalg.vector_norm, "linalg.vector_norm", "x"),
    (np.linalg.matrix_norm, "linalg.matrix_norm", "x"), (np.linalg.svdvals, "linalg.svdvals", "x"),
):
    _direct(_np_func, _path, arrays=_arrays)


# ---------------------------------------------------------------- fft

def _norm(norm: str | None) -> str:
    return "backward" if norm is None else norm


# the input each transform takes: complex (real input promotes, as NumPy allows) or real
_FFT_INPUT: dict[str, Callable[[A], A]] = {
    "fft": _complex, "ifft": _complex, "irfft": _complex, "hfft": _complex, "rfft": _floating,
    "ihfft": _floating, "fftn": _complex, "ifftn": _complex, "irfftn": _complex, "rfftn": _floating,
}


def _fft_1d(name: str) -> Callable[..., A]:
    def impl(a: A, n: int | None = None, axis: int = -1, norm: str | None = None) -> A:
        return getattr(xp.fft, name)(_FFT_INPUT[name](a), n=n, axis=axis, norm=_norm(norm))
    impl.__name__ = name
    impl.__doc__ = f"numpy.fft.{name} (norm=None is 'backward'; integers transform in the default float)."
    return impl


def _fft_nd(name: str, default_axes: tuple[int, ...] | None) -> Callable[..., A]:
    """An n-d transform; the 2-d ones are the same with axes (-2, -1) by default."""
    base = name.replace("2", "n")

    def impl(a: A, s: Sequence[int] | None = None, axes: Sequence[int] | None = default_axes,
             norm: str | None = None) -> A:
        return getattr(xp.fft, base)(_FFT_INPUT[base](a), s=s, axes=axes, norm=_norm(norm))
    impl.__name__ = name
    impl.__doc__ = f"numpy.fft.{name} (norm=None is 'backward'; integers transform in the default float)."
    return impl


for _name in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft"):
    implements(getattr(np.fft, _name), arrays="a")(_fft_1d(_name))
for _name in ("fftn", "ifftn", "rfftn", "irfftn"):
    implements(getattr(np.fft, _name), arrays="a")(_fft_nd(_name, None))
    implements(getattr(np.fft, _name.replace("n", "2")), arrays="a")(_fft_nd(_name.replace("n", "2"), (-2, -1)))


@implements(np.fft.fftshift, arrays="x")
def fftshift(x: A, axes: int | Sequence[int] | None = None) -> A:
    """numpy.fft.fftshift."""
    return xp.fft.fftshift(x, axes=axes)


@implements(np.fft.ifftshift, arrays="x")
def ifftshift(x: A, axes: int | Sequence[int] | None = None) -> A:
    """numpy.fft.ifftshift."""
    return xp.fft.ifftshift(x, axes=axes)


# ---------------------------------------------------------------- creation with like= (NEP 35)
# NumPy hands ``np.zeros(3, like=x)`` to x's __array_function__ without ``like``; NeuronArray puts ``like=x`` back
# (for the functions in LIKE), so each implementation here knows the array whose device the result lands on.
# Dtypes are NumPy's, inferred as NumPy does, except that NumPy's default float64 (no dtype given) is the
# device's default float: float32 on a Neuron device, which has no float64.

LIKE: set[Callable[..., Any]] = set()


def _creation(*np_funcs: Callable[..., Any], dtypes: str = "dtype") -> Callable[[Callable[..., Any]], Any]:
    """Register a creation function reached through ``like=`` (and list it in LIKE)."""
    LIKE.update(np_funcs)
    return implements(*np_funcs, dtypes=dtypes)


def _target_device(like: A, device: Any, func: str) -> torch.device:
    """``device`` if given, else like's."""
    return like.device if device is None else _device.normalize(device, f"{func}() device")


def _default_dtype(numpy_default: torch.dtype, device: torch.device) -> torch.dtype:
    """The dtype a call without ``dtype=`` gets: NumPy's, its float64 and complex128 the device's defaults."""
    if numpy_default is _dtypes.float64:
        return _dtypes.default_float(device)
    if numpy_default is _dtypes.complex128:
        return _dtypes.default_complex(device)
    return numpy_default


def _from_host(a: np.ndarray, device: torch.device, dtype_given: bool, copy: bool | None = None) -> A:
    """The NumPy array ``a`` on ``device`` (its memory shared on the CPU where copy allows); NumPy's default
    floats become the device's where no dtype was given."""
    source = xp.asarray(a, device=device, copy=copy)
    target = source._t.dtype if dtype_given else _default_dtype(source._t.dtype, device)
    return source if target is source._t.dtype else xp.astype(source, target)


def _numpy_dtype(dtype: torch.dtype | None) -> np.dtype | None:
    return None if dtype is None else numpy_dtype(dtype)


def _asks_for_dtype(dtype: Any) -> bool:
    """Whether a dtype argument names a dtype: NumPy's Python-level creation functions pass on their default
    along with like= (None, or the type float for eye, tri, fromfunction and the text readers)."""
    return dtype is not None and dtype is not float


def _dtype_or_default(dtype: Any, device: torch.device, func: str) -> torch.dtype:
    """A dtype argument of a function whose NumPy default is float64: the device's default float unless it
    names a dtype."""
    return to_dtype(dtype, func) if _asks_for_dtype(dtype) else _default_dtype(_dtypes.float64, device)


def _filled(fill: str, shape: Any, dtype: torch.dtype | None, like: A, device: Any) -> A:
    """The namespace's empty, zeros or ones, in NumPy's default float unless a dtype is given."""
    dev = _target_device(like, device, f"numpy.{fill}")
    dtype = _default_dtype(_dtypes.float64, dev) if dtype is None else dtype
    return getattr(xp, fill)(_shape(shape), dtype=dtype, device=dev)


@_creation(np.empty)
def empty(shape: Any, dtype: Any = None, *, device: Any = None, like: A) -> A:
    """numpy.empty(..., like=x): on x's device."""
    return _filled("empty", shape, dtype, like, device)


@_creation(np.zeros)
def zeros(shape: Any, dtype: Any = None, *, device: Any = None, like: A) -> A:
    """numpy.zeros(..., like=x): on x's device."""
    return _filled("zeros", shape, dtype, like, device)


@_creation(np.ones)
def ones(shape: Any, dtype: Any = None, *, device: Any = None, like: A) -> A:
    """numpy.ones(..., like=x): on x's device."""
    return _filled("ones", shape, dtype, like, device)


@_creation(np.full)
def full(shape: Any, fill_value: Any, dtype: Any = None, *, device: Any = None, like: A) -> A:
    """numpy.full(..., like=x): the dtype is fill_value's unless given (NumPy's rule); fill_value may be an
    array, broadcast to shape."""
    dev = _target_device(like, device, "numpy.full")
    if isinstance(fill_value, A):
        fill = xp.asarray(fill_value, dtype=dtype, device=dev)
    else:
        fill = _from_host(np.asarray(fill_value, dtype=_numpy_dtype(dtype)), dev, dtype is not None)
    return xp.asarray(xp.broadcast_to(fill, _shape(shape)), copy=True)


def _arange_dtype(values: Sequence[Any]) -> torch.dtype:
    """NumPy's arange dtype: at least the default integer, promoted with each given value's dtype."""
    found = np.dtype(np.intp)
    for v in values:
        found = np.promote_types(found, np.asarray(v).dtype)
    return to_dtype(found, "numpy.arange")


def _python_number(value: Any) -> Any:
    """A NumPy scalar or 0-d array as the Python number the namespace's arange takes."""
    return np.asarray(value).item() if isinstance(value, (np.generic, A)) else value


@_creation(np.arange)
def arange(start: Any = None, stop: Any = None, step: Any = None, dtype: Any = None, *, device: Any = None,
           like: A) -> A:
    """numpy.arange(..., like=x): NumPy's dtype (int64 for integers, float64 for floats); one bound is the
    stop, by position or by name."""
    if start is None and stop is None:
        raise TypeError("numpy.arange() needs a stop value")
    dev = _target_device(like, device, "numpy.arange")
    given = [v for v in (start, stop, step) if v is not None]
    dtype = _default_dtype(_arange_dtype(given), dev) if dtype is None else dtype
    if stop is None or start is None:  # one bound: the stop
        start, stop = 0, start if stop is None else stop
    start, stop, step = (_python_number(v) for v in (start, stop, 1 if step is None else step))
    return xp.arange(start, stop, step, dtype=dtype, device=dev)


# NumPy's text signature for arange, (start_or_stop, /, stop=None, step=1, *, dtype=None, ...), is not what its
# parser takes: start, stop, step and dtype bind by position or by name (dask passes dtype fourth). The table
# binds calls with the implementation's signature, which is the parser's.
TABLE[np.arange] = dataclasses.replace(TABLE[np.arange], binder=Binder(inspect.signature(arange)))


def _check_order(order: str | None, func: str) -> None:
    if order not in (None, "K", "A", "C"):
        raise ValueError(f"{func}(): order={order!r} cannot be met: NeuronArrays are C-ordered (use 'C', 'K' "
                         "or 'A')")


def _converted(a: Any, dtype: torch.dtype | None, device: torch.device, copy: bool | None) -> A:
    """``a`` as a NeuronArray on ``device``: a NeuronArray is converted on the devices; other data goes
    through NumPy, so its dtype is inferred as NumPy does ([1.0] is float64, [1] int64)."""
    if isinstance(a, A):
        return xp.asarray(a, dtype=dtype, device=device, copy=copy)
    # copy=False refuses data NumPy must convert (lists, other dtypes) with NumPy's own ValueError
    host = np.asarray(a, dtype=_numpy_dtype(dtype), copy=False if copy is False else None)
    fresh = host is not a and host.base is None  # made here (not a's memory): no second copy is needed
    return _from_host(host, device, dtype is not None, copy=None if fresh else copy)


@_creation(np.array)
def array(object: Any, dtype: Any = None, *, copy: bool | None = True, order: str | None = "K",
          ndmin: int = 0, like: A) -> A:
    """numpy.array(..., like=x): a copy unless copy=False or None allows sharing, at least ndmin dimensions."""
    _check_order(order, "numpy.array")
    result = _converted(object, dtype, like.device, copy)
    return result if result.ndim >= ndmin else xp.reshape(result, (1,) * (ndmin - result.ndim) + result.shape)


@_creation(np.asarray, np.asanyarray)
def asarray(a: Any, dtype: Any = None, order: str | None = None, *, device: Any = None, copy: bool | None = None,
            like: A) -> A:
    """numpy.asarray / numpy.asanyarray(..., like=x): on x's device, memory shared where possible."""
    _check_order(order, "numpy.asarray")
    return _converted(a, dtype, _target_device(like, device, "numpy.asarray"), copy)


@_creation(np.ascontiguousarray)
def ascontiguousarray(a: Any, dtype: Any = None, *, like: A) -> A:
    """numpy.ascontiguousarray(..., like=x): a NeuronArray made here is C-contiguous, at least 1-d."""
    result = _converted(a, dtype, like.device, None)
    if not result._t.is_contiguous():
        result = A(result._t.contiguous())
    return _at_least(result, 1)


_REQUIREMENTS = {"C": "C", "C_CONTIGUOUS": "C", "CONTIGUOUS": "C", "F": "F", "F_CONTIGUOUS": "F",
                 "FORTRAN": "F", "A": "A", "ALIGNED": "A", "W": "W", "WRITEABLE": "W", "O": "O", "OWNDATA": "O",
                 "E": "E", "ENSUREARRAY": "E"}


@_creation(np.require)
def require(a: Any, dtype: Any = None, requirements: Any = None, *, like: A) -> A:
    """numpy.require(..., like=x): every NeuronArray made here is aligned, writeable and an array; 'C' makes it
    contiguous, 'O' a copy (memory no other array or buffer uses); 'F' is met only by arrays of fewer than 2
    dimensions."""
    if isinstance(requirements, str):
        requirements = [requirements]
    flags = set()
    for r in requirements or ():
        flag = _REQUIREMENTS.get(str(r).upper())
        if flag is None:
            raise KeyError(f"numpy.require(): unknown requirement {r!r}; use C, F, A, W, O or E")
        flags.add(flag)
    result = _converted(a, dtype, like.device, True if "O" in flags else None)
    if "F" in flags and result.ndim > 1:
        raise ValueError(f"numpy.require(): requirement 'F' cannot be met: NeuronArrays are C-ordered (shape "
                         f"{result.shape})")
    if "C" in flags and not result._t.is_contiguous():
        return A(result._t.contiguous())
    return result


@_creation(np.eye, dtypes="")
def eye(N: int, M: int | None = None, k: int = 0, dtype: Any = None, *, device: Any = None, like: A) -> A:
    """numpy.eye(..., like=x)."""
    dev = _target_device(like, device, "numpy.eye")
    return xp.eye(N, M, k=k, dtype=_dtype_or_default(dtype, dev, "numpy.eye"), device=dev)


@_creation(np.identity)
def identity(n: int, dtype: Any = None, *, like: A) -> A:
    """numpy.identity(..., like=x)."""
    return eye(n, dtype=dtype, like=like)


@_creation(np.tri, dtypes="")
def tri(N: int, M: int | None = None, k: int = 0, dtype: Any = None, *, like: A) -> A:
    """numpy.tri(..., like=x): ones at and below the k-th diagonal."""
    dtype = _dtype_or_default(dtype, like.device, "numpy.tri")
    return xp.tril(xp.ones((N, N if M is None else M), dtype=dtype, device=like.device), k=k)


@_creation(np.fromfunction, dtypes="")
def fromfunction(function: Callable[..., Any], shape: Any, *, dtype: Any = None, like: A) -> Any:
    """numpy.fromfunction(..., like=x): ``function`` called with one index array per axis, NeuronArrays on
    x's device (broadcast views, as dense as NumPy's to the function). Keyword arguments for ``function``
    are not supported."""
    dtype = _dtype_or_default(dtype, like.device, "numpy.fromfunction")
    shape = _shape(shape)
    grids = []
    for axis, n in enumerate(shape):
        index = xp.arange(n, dtype=dtype, device=like.device)
        index = xp.reshape(index, tuple(n if i == axis else 1 for i in range(len(shape))))
        grids.append(xp.broadcast_to(index, shape))
    return function(*grids)


def _host_reader(np_func: Callable[..., Any]) -> None:
    """Register a NumPy function that builds an array from host data (files, buffers, iterators): NumPy reads
    it, with every argument NumPy takes, and the result moves to like's device."""
    signature = inspect.signature(np_func)
    name = qualname(np_func)

    def impl(**given: Any) -> A:
        like = given.pop("like")
        host = np_func(**given)
        if not isinstance(host, np.ndarray) or host.dtype.names is not None:
            raise TypeError(f"{name}(..., like=NeuronArray) read {type(host).__name__} of dtype "
                            f"{getattr(host, 'dtype', None)}; a NeuronArray holds plain numeric arrays only")
        return _from_host(host, like.device, _asks_for_dtype(given.get("dtype")))

    impl.__signature__ = signature  # type: ignore[attr-defined]
    impl.__name__ = np_func.__name__
    impl.__doc__ = f"{name}(..., like=x): read by NumPy on the host, the result on x's device."
    _creation(np_func, dtypes="")(impl)


for _reader in (np.frombuffer, np.fromiter, np.fromfile, np.loadtxt, np.genfromtxt):
    _host_reader(_reader)


# ---------------------------------------------------------------- more that dask's chunk functions call
# (dask's arg reductions over all axes call numpy.unravel_index; its topk and argtopk numpy.partition and
# numpy.argpartition)

@implements(np.unravel_index, arrays="indices")
def unravel_index(indices: A, shape: Any, order: str = "C") -> tuple[A, ...]:
    """numpy.unravel_index: one int64 index array per dimension of ``shape`` (C or Fortran order)."""
    if order not in ("C", "F"):
        raise ValueError(f"numpy.unravel_index(): order must be 'C' or 'F', got {order!r}")
    if indices._t.dtype not in _dtypes.INTEGER:
        raise TypeError(f"numpy.unravel_index(): only integer indices are allowed, got {_dtypes.name(indices.dtype)}")
    dims = _shape(shape)
    size = math.prod(dims)
    flat = xp.astype(indices, _dtypes.int64)
    if flat.size:
        low, high = int(xp.min(flat)), int(xp.max(flat))
        if low < 0 or high >= size:
            bad = low if low < 0 else high
            raise ValueError(f"numpy.unravel_index(): index {bad} is out of bounds for array with size {size}")
    coords = []
    for d in (reversed(dims) if order == "C" else dims):  # the fastest-varying dimension first
        coords.append(xp.remainder(flat, d) if d else flat)
        flat = xp.floor_divide(flat, d) if d else flat
    return tuple(reversed(coords)) if order == "C" else tuple(coords)


def _sort_as_partition(a: A, kth: Any, axis: int | None, func: str) -> tuple[A, int]:
    """``a`` (flattened for axis=None) and the axis, with every kth checked as NumPy checks it."""
    if axis is None:
        a, axis = _flat(a), 0
    axis = normalize_axis(axis, a.ndim, func)
    n = a.shape[axis]
    for k in np.atleast_1d(np.asarray(kth)).ravel():
        if not isinstance(k.item(), int) or isinstance(k.item(), bool):
            raise TypeError(f"{func}(): kth must be an integer or a sequence of integers, got {kth!r}")
        if not -n <= k < n:
            raise ValueError(f"{func}(): kth(={int(k)}) out of bounds ({n}) on axis {axis}")
    return a, axis


@implements(np.partition, arrays="a")
def partition(a: A, kth: Any, axis: int | None = -1) -> A:
    """numpy.partition: a sorted copy, which puts every kth element where a partition must (smaller ones
    before it, the rest after); the order inside each part is unspecified in NumPy."""
    a, axis = _sort_as_partition(a, kth, axis, "numpy.partition")
    return xp.sort(a, axis=axis, stable=True)


@implements(np.argpartition, arrays="a")
def argpartition(a: A, kth: Any, axis: int | None = -1) -> A:
    """numpy.argpartition: the indices that sort ``a`` (stably), a valid partition for every kth."""
    a, axis = _sort_as_partition(a, kth, axis, "numpy.argpartition")
    return xp.argsort(a, axis=axis, stable=True)


def _index_mode(index: A, d: int, mode: str, axis: int) -> A:
    """One coordinate made valid for a dimension of length ``d`` under NumPy's ``mode``."""
    if mode == "wrap":
        return xp.remainder(index, d)
    if mode == "clip":
        return xp.clip(index, 0, d - 1)
    if mode != "raise":
        raise ValueError(f"numpy.ravel_multi_index(): mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    if index.size and (int(xp.min(index)) < 0 or int(xp.max(index)) >= d):
        raise ValueError(f"numpy.ravel_multi_index(): invalid entry in coordinates array for dimension {axis} of "
                         f"length {d}")
    return index


@implements(np.ravel_multi_index, sequences="multi_index")
def ravel_multi_index(multi_index: Sequence[A], dims: Any, mode: Any = "raise", order: str = "C") -> A:
    """numpy.ravel_multi_index: flat int64 indices of coordinate arrays (modes raise, wrap, clip: one for all
    dimensions or one each; C or Fortran order)."""
    dims = _shape(dims)
    if len(multi_index) != len(dims):
        raise ValueError(f"numpy.ravel_multi_index(): {len(multi_index)} coordinate arrays for {len(dims)} "
                         "dimensions")
    if order not in ("C", "F"):
        raise ValueError(f"numpy.ravel_multi_index(): order must be 'C' or 'F', got {order!r}")
    modes = [mode] * len(dims) if isinstance(mode, str) else list(mode)
    coords = []
    for axis, (index, d, m) in enumerate(zip(multi_index, dims, modes, strict=True)):
        if index._t.dtype not in _dtypes.INTEGER:
            raise TypeError(f"numpy.ravel_multi_index(): coordinates must be integers, got "
                            f"{_dtypes.name(index.dtype)} for dimension {axis}")
        coords.append(_index_mode(xp.astype(index, _dtypes.int64), d, m, axis))
    if not coords:
        raise ValueError("numpy.ravel_multi_index(): dims must name at least one dimension")
    coords = xp.broadcast_arrays(*coords)
    slowest_first = range(len(dims)) if order == "C" else reversed(range(len(dims)))
    flat = None
    for axis in slowest_first:  # Horner's rule
        flat = coords[axis] if flat is None else xp.add(xp.multiply(flat, dims[axis]), coords[axis])
    return flat
