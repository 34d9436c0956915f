"""NumPy's indexing on torch tensors: the engine behind ``NeuronArray.__getitem__`` and ``__setitem__``.

It works on tensors and keys whose array entries are tensors (the array object passes its arrays' tensors), below
the array object: reading a key, writing a value through one, the keys of views with negative steps, and whether
two tensors' memory overlaps (NumPy reads a right-hand side whole before writing).
"""

from __future__ import annotations

import operator
import warnings
from typing import Any, NamedTuple

import numpy as np
import torch

from . import _dtypes
from ._scalars import PY_SCALARS, as_py_scalar, convert_scalar, float_to_int

__all__ = [
    "readonly",
    "unaliased",
    "overlaps",
    "movable",
    "setitem_scalar",
    "assigned",
    "setitem",
    "plan",
    "key_parts",
    "has_ellipsis",
    "simple",
    "flipped",
    "mirrored",
]


def readonly(t: torch.Tensor) -> torch.Tensor:
    """A tensor over ``t``'s memory (``t`` itself if it is one) that the array object treats as read-only: a
    torch inference tensor, whose views are inference tensors too, and which every write route checks for before
    writing (torch refuses an in-place write into one outside ``torch.inference_mode``, but only after making
    it). Writes into ``t`` show through it. A dtype view, ``view(dtype)``, of an inference tensor is not one:
    ``movable`` and ``NeuronArray.view`` make theirs read-only again."""
    if t.is_inference():
        return t
    if t.is_conj():  # set_ sees the memory, not the lazy conjugate bit: conjugate the read-only alias again
        return readonly(t.conj()).conj()
    if t.is_neg():
        t = t.resolve_neg()  # a copy of the values: read-only still, but later writes to t do not show
    with torch.inference_mode():
        return torch.empty(0, dtype=t.dtype, device=t.device).set_(
            t.untyped_storage(), t.storage_offset(), t.shape, t.stride()
        )


def unaliased(src: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
    """``src``, copied if its memory may overlap ``dst``'s: NumPy reads a whole right-hand side before writing
    (``x[1:] = x[:-1]``), while torch writing from an overlapping view raises or reads what it already overwrote.
    Byte ranges rather than storages are compared, since two storages can share memory (``torch.from_numpy`` of
    overlapping NumPy views); tensor subclasses (DTensor) have no data pointer to compare and are always copied."""
    return src if not overlaps(src, dst) else src.clone()


_TENSOR = torch.Tensor  # read on every in-place operator: one global lookup, not two


def overlaps(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether the memory of two tensors may overlap (see ``unaliased``); True for tensor subclasses."""
    if type(a) is not _TENSOR or type(b) is not _TENSOR:
        return True
    if a.is_contiguous() and b.is_contiguous():  # the common case, cheaply: each spans its nbytes (0 if empty)
        pa, pb = a.data_ptr(), b.data_ptr()
        return pa < pb + b.nbytes and pb < pa + a.nbytes
    return a.numel() != 0 and b.numel() != 0 and _overlap(_span(a), _span(b))


def _span(t: torch.Tensor) -> tuple[int, int]:
    """The bytes [first, end) holding a nonempty tensor's elements (torch strides are never negative)."""
    first = t.data_ptr()
    last = first + t.element_size() * sum((n - 1) * s for n, s in zip(t.shape, t.stride(), strict=True))
    return first, last + t.element_size()


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


# Indexing only moves data, which the signed integers of the same width do bit for bit; torch lacks flip and
# index_put_ for uint16/32/64.
_SIGNED_TWIN = {_dtypes.uint16: torch.int16, _dtypes.uint32: torch.int32, _dtypes.uint64: torch.int64}


def movable(t: torch.Tensor) -> torch.Tensor:
    twin = _SIGNED_TWIN.get(t.dtype)
    if twin is None:
        return t
    # torch's dtype view of an inference (read-only) tensor is writable: keep it read-only
    return readonly(t.view(twin)) if t.is_inference() else t.view(twin)


def setitem_scalar(value: Any, t: torch.Tensor, func: str = "__setitem__") -> torch.Tensor:
    """A Python scalar (a NumPy scalar by its value) stored into ``t``, as a 0-d tensor of its dtype:
    ``convert_scalar``'s conversion, NumPy's, with the errors of an assignment (``func`` names the caller)."""
    value = as_py_scalar(value)
    if not isinstance(value, PY_SCALARS):
        raise TypeError(f"x[...] = value needs a NeuronArray or a Python scalar, got {type(value).__name__}")
    if isinstance(value, complex) and t.dtype not in _dtypes.COMPLEX_FLOAT and t.dtype is not _dtypes.bool:
        raise TypeError(
            f"cannot assign the complex value {value} into a {_dtypes.name(t.dtype)} array; assign its .real or .imag"
        )
    # NumPy casts the value to x's dtype: a float into an integer array truncates toward zero, as int() does
    # (NaN is a ValueError and infinities or values beyond the dtype an OverflowError, as in NumPy)
    if isinstance(value, float) and t.dtype in _dtypes.INTEGER:
        value = float_to_int(value, t.dtype, f"cannot assign {value} into a {_dtypes.name(t.dtype)} array")
    return convert_scalar(value, t.dtype, t.device, func)


def assigned(v: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """An array value cast to the dtype of the array it is assigned into, as NumPy does (unsafe casting): a
    complex value into a real numeric array keeps the real part, with NumPy's ComplexWarning (into bool: whether
    either part is nonzero)."""
    if v.dtype in _dtypes.COMPLEX_FLOAT and dtype not in _dtypes.COMPLEX_FLOAT and dtype is not _dtypes.bool:
        warnings.warn(
            f"assigning a {_dtypes.name(v.dtype)} value into a {_dtypes.name(dtype)} array discards the imaginary part",
            np.exceptions.ComplexWarning,
            stacklevel=3,
        )
        v = v.real
    return _dtypes.cast(v, dtype)


# --- NumPy's indexing on torch. torch's own rules differ: it reads uint8 arrays as masks, counts integers beside
# arrays as basic indices, places advanced dimensions differently around None and Ellipsis, and has no negative
# strides. So a key runs as basic indexing with positive steps (a view of the array), one gather over the
# advanced dimensions moved to the front (where torch's order is NumPy's), flips for the negative steps, and a
# move of the advanced dimensions to NumPy's place for them. ---


class _IndexSteps(NamedTuple):
    """A key as torch operations: the result is ``view[indices]`` (the advanced dimensions, of ``shape``, then
    the basic ones), flipped along ``flips``, with the advanced dimensions moved to position ``at``."""

    view: torch.Tensor  # the array with the key's basic part applied, its advanced dimensions first
    indices: tuple[torch.Tensor, ...]  # int64, one per advanced dimension, broadcast; none for a basic key
    shape: tuple[int, ...]
    flips: tuple[int, ...]
    at: int

    def result_shape(self) -> tuple[int, ...]:
        basic = tuple(self.view.shape[len(self.indices) :])
        return basic[: self.at] + self.shape + basic[self.at :]

    def numpy_order(self, r: torch.Tensor) -> torch.Tensor:
        n = len(self.shape)
        return r.movedim(tuple(range(n)), tuple(range(self.at, self.at + n))) if self.at else r

    def torch_order(self, r: torch.Tensor) -> torch.Tensor:
        n = len(self.shape)
        return r.movedim(tuple(range(self.at, self.at + n)), tuple(range(n))) if self.at else r

    def result(self) -> torch.Tensor:
        """What the key reads (a copy where it has advanced indices or negative steps)."""
        r = self.view[self.indices] if self.indices else self.view
        return self.numpy_order(r.flip(self.flips) if self.flips else r)


def setitem(t: torch.Tensor, key: Any, v: torch.Tensor) -> None:
    p = plan(t, key)
    v = p.torch_order(_broadcast_value(v, p.result_shape()))
    if p.flips:
        v = v.flip(p.flips)
    if p.indices:
        # an index array that is a view of x itself (x[x] = v) must be read before x changes, like the value
        p.view.index_put_(tuple(unaliased(i, t) for i in p.indices), v)
    else:
        p.view.copy_(v)


def plan(t: torch.Tensor, key: Any) -> _IndexSteps:
    if simple(key):  # (reads of simple keys return before planning)
        return _IndexSteps(t[key], (), (), (), 0)
    parts, consumed = key_parts(t, key)
    # NumPy: beside an array or a boolean scalar (a 0-d mask), integers are advanced indices too; alone, 0-d
    # integer arrays are integers
    advanced = any(isinstance(p, torch.Tensor) and (p.dim() or p.dtype is torch.bool) for p in parts)
    if not advanced:
        parts = [int(p) if isinstance(p, torch.Tensor) else p for p in parts]
    basic_key: list[Any] = []  # the key's basic part, on t
    indices: dict[int, torch.Tensor] = {}  # dimension of the basic part's result -> its advanced index
    flipped: list[int] = []  # dimensions of the basic part's result that negative steps reverse
    advanced_parts: list[int] = []  # positions in the key
    d = n = 0  # the next dimension of t, of the basic part's result
    for i, p in enumerate(parts):
        if p is None:
            basic_key.append(None)
            n += 1
        elif p is Ellipsis:
            basic_key.append(Ellipsis)
            d += t.dim() - consumed
            n += t.dim() - consumed
        elif isinstance(p, slice):
            twin, negative = _positive_twin(p, t.shape[d])
            basic_key.append(twin)
            if negative:
                flipped.append(n)
            d += 1
            n += 1
        elif isinstance(p, int) and not advanced:
            basic_key.append(_in_bounds(p, t.shape[d], d))
            d += 1
        elif isinstance(p, int) or p.dtype is not torch.bool:
            basic_key.append(slice(None))
            indices[n] = torch.tensor(_in_bounds(p, t.shape[d], d), device=t.device) if isinstance(p, int) else p
            advanced_parts.append(i)
            d += 1
            n += 1
        else:
            # a mask is its nonzero() integer arrays, one per dimension it covers; a 0-d one covers a new axis
            if p.dim() == 0:
                basic_key.append(None)
                p = p.reshape(1)
            else:
                _check_mask(p, t.shape, d)
                basic_key += [slice(None)] * p.dim()
                d += p.dim()
            for column in p.nonzero().unbind(1):
                indices[n] = column
                n += 1
            advanced_parts.append(i)
    view = t[tuple(basic_key)]
    if not indices:
        return _IndexSteps(view, (), (), tuple(flipped), 0)
    shape = _broadcast_indices(list(indices.values()))
    basic = [j for j in range(n) if j not in indices]
    flips = tuple(len(shape) + basic.index(j) for j in flipped)
    # NumPy keeps the advanced dimensions in place when nothing (a slice, None, Ellipsis) separates their
    # indices in the key, and puts them first otherwise
    adjacent = advanced_parts == list(range(advanced_parts[0], advanced_parts[-1] + 1))
    return _IndexSteps(
        view.permute(list(indices) + basic),
        tuple(i.expand(shape) for i in indices.values()),
        shape,
        flips,
        min(indices) if adjacent else 0,
    )


def key_parts(t: torch.Tensor, key: Any) -> tuple[list[Any], int]:
    """The key's entries in torch terms (``_torch_key_part``) with one Ellipsis, and how many dimensions of t
    the others consume."""
    parts = [_torch_key_part(k, t) for k in (key if isinstance(key, tuple) else (key,))]
    if sum(p is Ellipsis for p in parts) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if not any(p is Ellipsis for p in parts):
        parts.append(Ellipsis)  # dimensions the key leaves out are kept whole, after the others
    consumed = sum(_consumed_dims(p) for p in parts)
    if consumed > t.dim():
        raise IndexError(f"too many indices: array is {t.dim()}-dimensional, but {consumed} were indexed")
    return parts, consumed


def has_ellipsis(key: Any) -> bool:
    return key is Ellipsis or (isinstance(key, tuple) and any(k is Ellipsis for k in key))


def simple(key: Any) -> bool:
    """Whether ``key`` holds only ints, slices of positive step, None and at most one Ellipsis: there torch's
    basic indexing is NumPy's, and using it directly keeps ``x[i]`` about as cheap as ``x._t[i]``."""
    if type(key) is not tuple:
        return _simple_part(key) or key is Ellipsis
    ellipses = 0
    for p in key:
        if p is Ellipsis:
            ellipses += 1
        elif not _simple_part(p):
            return False
    return ellipses <= 1


_INT_OR_NONE = (int, type(None))


def ints_and_slices(key: tuple[Any, ...]) -> bool:
    """Whether every part of the tuple ``key`` is an int (not a bool) or a slice of Python ints (or None) with a
    positive step: a ``simple`` key without None or Ellipsis, whose result is one element only where every
    part is an int (in one loop: ``NeuronArray.__getitem__`` asks on every such key)."""
    for p in key:
        kind = type(p)
        if kind is slice:
            step = p.step
            if not (
                (step is None or type(step) is int and step > 0)
                and type(p.start) in _INT_OR_NONE
                and type(p.stop) in _INT_OR_NONE
            ):
                return False
        elif kind is not int:
            return False
    return True


def _simple_part(p: Any) -> bool:
    """An int (not a bool), None, or a slice of Python ints (or None) with a positive step."""
    kind = type(p)
    if kind is slice:
        step = p.step
        return (
            type(p.start) in _INT_OR_NONE
            and type(p.stop) in _INT_OR_NONE
            and (step is None or (type(step) is int and step > 0))
        )
    return kind is int or p is None


def _torch_key_part(k: Any, t: torch.Tensor) -> Any:
    """One entry of a key in torch terms. Arrays of any origin (a torch tensor, which is what the array object
    passes for a NeuronArray; a NumPy array, a list) become bool masks or, whatever their integer dtype, int64
    index tensors (torch reads uint8 ones as masks); a boolean scalar is a 0-d mask, as in NumPy; integers of any
    type become ints."""
    if isinstance(k, torch.Tensor):
        if k.device != t.device:
            raise ValueError(f"index array is on {k.device}, the indexed array on {t.device}")
        if k.dtype is torch.bool:
            return k
        if k.dtype not in _dtypes.INTEGER:
            raise IndexError(f"arrays used as indices must be integer or boolean, got {_dtypes.name(k.dtype)}")
        return _dtypes.cast(k, torch.int64)
    if isinstance(k, list) and not k:
        k = np.zeros(0, dtype=np.int64)  # NumPy reads [] as an empty integer index, not as float64
    if isinstance(k, (np.ndarray, list)):
        # host data, like a Python int, goes to the array's device; NumPy reads a (nested) list as an array
        a = np.asarray(k)
        if a.dtype.kind not in "biu":
            raise IndexError(f"arrays used as indices must be integer or boolean, got {a.dtype}")
        return torch.tensor(a if a.dtype.kind == "b" else a.astype(np.int64), device=t.device)
    if isinstance(k, (bool, np.bool_)):
        return torch.tensor(bool(k), device=t.device)
    if isinstance(k, slice):
        return slice(*(operator.index(v) if v is not None else None for v in (k.start, k.stop, k.step)))
    if k is None or k is Ellipsis:
        return k
    try:
        return operator.index(k)
    except TypeError:
        raise IndexError(
            "only integers, slices, ellipsis, None and integer or boolean arrays are valid indices, "
            f"got {type(k).__name__}"
        ) from None


def _consumed_dims(p: Any) -> int:
    if p is None or p is Ellipsis:
        return 0
    if isinstance(p, torch.Tensor) and p.dtype is torch.bool:
        return p.dim()
    return 1


def _positive_twin(s: slice, size: int) -> tuple[slice, bool]:
    """A slice with a positive step selecting the same elements, and whether they must then be reversed."""
    start, stop, step = s.indices(size)
    if step > 0:
        return slice(start, stop, step), False
    count = len(range(start, stop, step))
    return (slice(start + (count - 1) * step, start + 1, -step) if count else slice(0, 0)), True


def _in_bounds(k: int, size: int, axis: int) -> int:
    if not -size <= k < size:
        raise IndexError(f"index {k} is out of bounds for axis {axis} with size {size}")
    return k


def _check_mask(mask: torch.Tensor, shape: torch.Size, first: int) -> None:
    """NumPy's rule: each side of a mask is the side of the axis it covers, or 0 (an empty mask)."""
    for axis in range(first, first + mask.dim()):
        side = mask.shape[axis - first]
        if side not in (shape[axis], 0):
            raise IndexError(
                f"boolean index did not match indexed array along axis {axis}; size of axis is "
                f"{shape[axis]} but size of corresponding boolean axis is {side}"
            )


def _broadcast_indices(indices: list[torch.Tensor]) -> tuple[int, ...]:
    shapes = [tuple(i.shape) for i in indices]
    try:
        return np.broadcast_shapes(*shapes)  # several times faster than torch.broadcast_shapes
    except ValueError:
        raise IndexError(
            "shape mismatch: indexing arrays could not be broadcast together with shapes " + " ".join(map(str, shapes))
        ) from None


def _broadcast_value(v: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    """The value broadcast to the indexed shape; like NumPy, leading unit dimensions of the value are dropped."""
    extra = v.dim() - len(shape)
    trimmed = v.reshape(v.shape[extra:]) if extra > 0 and all(s == 1 for s in v.shape[:extra]) else v
    if trimmed.dim() > len(shape) or any(
        s not in (1, side) for s, side in zip(reversed(trimmed.shape), reversed(shape), strict=False)
    ):
        raise ValueError(
            f"x[key] = value: a value of shape {tuple(v.shape)} does not broadcast to the indexed shape {shape}"
        )
    return trimmed.broadcast_to(shape)


def flipped(t: torch.Tensor, dims: tuple[int, ...]) -> torch.Tensor:
    return movable(t).flip(dims).view(t.dtype)


def mirrored(key: Any, t: torch.Tensor, dims: tuple[int, ...]) -> tuple[Any, ...]:
    """The key that selects from ``t`` what ``key`` selects from ``t`` reversed along ``dims``, in the same order
    and shape. Along a reversed axis an index i becomes ``~i`` (-1 - i, in bounds exactly when i is), a slice
    runs mirrored with the opposite step, and a mask becomes its nonzero() index arrays, mirrored in turn
    (reversing the mask itself would reorder what it selects). An Ellipsis over reversed axes becomes their
    slices."""
    parts, consumed = key_parts(t, key)
    explicit = has_ellipsis(key)
    mirrored: list[Any] = []
    d = 0  # the next dimension of t
    for p in parts:
        if p is Ellipsis:
            covered = range(d, d + t.dim() - consumed)
            if any(a in dims for a in covered):
                mirrored += [slice(None, None, -1) if a in dims else slice(None) for a in covered]
            elif explicit:
                mirrored.append(p)
            d = covered.stop
        elif p is None or (isinstance(p, torch.Tensor) and p.dtype is torch.bool and p.dim() == 0):
            mirrored.append(p)
        elif isinstance(p, torch.Tensor) and p.dtype is torch.bool:
            _check_mask(p, t.shape, d)
            covered = range(d, d + p.dim())
            if any(a in dims for a in covered):
                mirrored += [~c if a in dims else c for a, c in zip(covered, p.nonzero().unbind(1), strict=True)]
            else:
                mirrored.append(p)
            d = covered.stop
        else:
            if d in dims:
                p = _mirrored_slice(p, t.shape[d]) if isinstance(p, slice) else ~_checked_index(p, t.shape[d], d)
            mirrored.append(p)
            d += 1
    return tuple(mirrored)


def _checked_index(p: int | torch.Tensor, size: int, axis: int) -> int | torch.Tensor:
    """An integer index or index array, checked in bounds before mirroring changes its values."""
    if isinstance(p, int):
        return _in_bounds(p, size, axis)
    outside = p[(p < -size) | (p >= size)]
    if outside.numel():
        _in_bounds(int(outside[0]), size, axis)
    return p


def _mirrored_slice(s: slice, size: int) -> slice:
    """The slice that selects size - 1 - i for each i that ``s`` selects, in the same order."""
    r = range(*s.indices(size))
    if not r:
        return slice(0, 0)
    stop = size - 1 - r[-1] - r.step
    return slice(size - 1 - r[0], stop if stop >= 0 else None, -r.step)
