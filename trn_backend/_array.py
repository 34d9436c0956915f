"""NeuronArray: the array object of the standard, wrapping one torch.Tensor.

Operators delegate to the namespace functions (one implementation of each rule); indexing adds what torch lacks
(negative slice steps, unsigned index arrays); conversions follow the standard and NumPy 2.
"""

from __future__ import annotations

import enum
import math
import operator
from typing import Any

import numpy as np
import torch

from . import _device, _dtypes

SUPPORTED_API_VERSIONS = ("2023.12", "2024.12", "2025.12")

# Tensor subclasses that wrap into a NeuronArray subclass (the distributed package registers DTensor here).
_WRAPPERS: dict[type, type] = {}


def register_wrapper(tensor_type: type, array_type: type) -> None:
    _WRAPPERS[tensor_type] = array_type


def wrap(t: torch.Tensor) -> NeuronArray:
    """A NeuronArray (or the registered subclass for tensor subclasses) over ``t``, without copying."""
    cls = NeuronArray if type(t) is torch.Tensor else _WRAPPERS.get(type(t), NeuronArray)
    obj = object.__new__(cls)
    obj._t = t
    return obj


def _ns():
    import trn_backend

    return trn_backend


class NeuronArray:
    """An array on a Neuron device, a CPU or a GPU, holding one ``torch.Tensor`` (``x._t``, never copied)."""

    __slots__ = ("_t", "__weakref__")
    __hash__ = None  # mutable, and == is elementwise

    def __init__(self, tensor: torch.Tensor) -> None:
        if not isinstance(tensor, torch.Tensor):
            raise TypeError(f"NeuronArray wraps a torch.Tensor, got {type(tensor).__name__}; "
                            "use trn_backend.asarray for other inputs")
        if tensor.dtype not in _dtypes.ALL:
            raise TypeError(f"NeuronArray does not support torch dtype {tensor.dtype}; "
                            f"supported: {', '.join(_dtypes.NAMES.values())}")
        self._t = tensor

    # --- attributes ---
    @property
    def dtype(self) -> torch.dtype:
        return self._t.dtype

    @property
    def device(self) -> torch.device:
        return self._t.device

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._t.shape)

    @property
    def ndim(self) -> int:
        return self._t.dim()

    @property
    def size(self) -> int:
        return math.prod(self._t.shape)

    @property
    def T(self) -> NeuronArray:
        if self._t.dim() != 2:
            raise ValueError(f"x.T needs a 2-dimensional array, got {self._t.dim()} dimensions; use x.mT for "
                             "stacks of matrices or permute_dims for other orders")
        return wrap(self._t.t())

    @property
    def mT(self) -> NeuronArray:
        if self._t.dim() < 2:
            raise ValueError(f"x.mT needs at least 2 dimensions, got {self._t.dim()}")
        return wrap(self._t.transpose(-1, -2))

    def to_device(self, device: Any, /, *, stream: int | Any | None = None) -> NeuronArray:
        if stream is not None:
            raise ValueError("to_device(): stream is not supported (torch synchronizes device copies itself)")
        return wrap(self._t.to(_device.normalize(device, "to_device")))

    # --- protocols ---
    def __array_namespace__(self, /, *, api_version: str | None = None):
        if api_version is not None and api_version not in SUPPORTED_API_VERSIONS:
            raise ValueError(f"unsupported array API version {api_version!r}; "
                             f"supported: {', '.join(SUPPORTED_API_VERSIONS)}")
        return _ns()

    def __dlpack__(self, /, *, stream: Any = None, max_version: tuple[int, int] | None = None,
                   dl_device: tuple[enum.Enum, int] | None = None, copy: bool | None = None) -> Any:
        kwargs: dict[str, Any] = {"max_version": max_version, "dl_device": dl_device, "copy": copy}
        if stream is not None:
            kwargs["stream"] = stream
        return self._t.detach().resolve_conj().__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[enum.Enum, int]:
        return self._t.__dlpack_device__()

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        """NumPy 2 conversion. A CPU array converts without a copy; a device array copies to the host, which
        ``copy=False`` refuses with a ValueError."""
        t = self._t.detach()
        if t.device.type != "cpu":
            if copy is False:
                raise ValueError(f"np.asarray(x, copy=False): x lives on {t.device}; converting it to NumPy "
                                 "copies it to the host")
            t = t.cpu()
        elif t.is_conj() or t.is_neg():
            # torch's lazy conjugate/negative views have no NumPy equivalent: they must be materialized
            if copy is False:
                raise ValueError("np.asarray(x, copy=False): x is a lazy conjugate view; converting it copies")
            t = t.resolve_conj().resolve_neg()
        elif copy:
            t = t.clone()
        out = t.numpy()
        if dtype is not None and np.dtype(dtype) != out.dtype:
            if copy is False:
                raise ValueError(f"np.asarray(x, dtype={np.dtype(dtype)}, copy=False) needs a copy to convert "
                                 f"from {out.dtype}")
            out = out.astype(dtype)
        return out

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        """NEP 18: NumPy functions on NeuronArrays run on this namespace (see trn_backend.numpy_dispatch)."""
        from .numpy_dispatch import array_function

        return array_function(func, types, args, kwargs)

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """NEP 13: NumPy ufuncs on NeuronArrays run on this namespace (see trn_backend.numpy_dispatch)."""
        from .numpy_dispatch import array_ufunc

        return array_ufunc(ufunc, method, inputs, kwargs)

    # --- Python conversions ---
    def _scalar(self, kind: str) -> Any:
        if self._t.numel() != 1:
            raise TypeError(f"{kind}() needs an array with exactly one element, got shape {self.shape}")
        if self._t.dtype in _dtypes.COMPUTE:
            return _unsigned_item(self._t)
        return self._t.item()

    def __bool__(self) -> bool:
        return builtin_bool(self._scalar("bool"))

    def __int__(self) -> int:
        if self._t.dtype in _dtypes.COMPLEX_FLOAT:
            raise TypeError("int() of a complex array is undefined; take .real or abs first")
        return int(self._scalar("int"))

    def __float__(self) -> float:
        if self._t.dtype in _dtypes.COMPLEX_FLOAT:
            raise TypeError("float() of a complex array is undefined; take .real or abs first")
        return float(self._scalar("float"))

    def __complex__(self) -> complex:
        return complex(self._scalar("complex"))

    def __index__(self) -> int:
        if self._t.dtype not in _dtypes.INTEGER:
            raise TypeError(f"only integer arrays can be used as an index, got {_dtypes.name(self._t.dtype)}")
        return int(self._scalar("index"))

    def __len__(self) -> int:
        if self._t.dim() == 0:
            raise TypeError("len() of a 0-dimensional array")
        return self._t.shape[0]

    def __iter__(self):
        if self._t.dim() == 0:
            raise TypeError("iteration over a 0-dimensional array")
        return (self[i] for i in range(self._t.shape[0]))

    def __repr__(self) -> str:
        t = self._t.detach()
        values = np.array2string(np.asarray(wrap(t.cpu())), separator=", ", prefix="NeuronArray(")
        return f"NeuronArray({values}, dtype={_dtypes.name(t.dtype)}, device='{t.device}')"

    __str__ = __repr__

    # --- indexing ---
    def __getitem__(self, key: Any) -> NeuronArray:
        key = _torch_key(key, self._t)
        if _has_negative_step(key):
            return wrap(_getitem_negative_steps(self._t, key))
        return wrap(self._t[key])

    def __setitem__(self, key: Any, value: Any) -> None:
        t = self._t
        if isinstance(value, NeuronArray):
            if value._t.device != t.device:
                raise ValueError(f"x[...] = value: value is on {value._t.device}, x on {t.device}")
            v = _dtypes.cast(value._t, t.dtype)
        else:
            v = _setitem_scalar(value, t)
        key = _torch_key(key, t)
        if t.dtype not in _dtypes.COMPUTE or (_is_basic(key) and not _has_negative_step(key)):
            _assign(t, key, v)
        elif t.dtype is _dtypes.uint64:
            # no unsigned kernels for scatter: write the same bits through an int64 view
            _assign(t.view(torch.int64), key, v.view(torch.int64))
        else:
            c = _dtypes.compute(t)
            _assign(c, key, _dtypes.compute(v))
            t.copy_(_dtypes.restore(c, t.dtype))


def _assign(t: torch.Tensor, key: Any, v: torch.Tensor) -> None:
    if _has_negative_step(key):
        # Positions of the selected elements in row-major order; put_ writes through any strides.
        positions = _getitem_negative_steps(torch.arange(t.numel(), device=t.device).reshape(t.shape), key)
        t.put_(positions.reshape(-1), torch.broadcast_to(v, positions.shape).reshape(-1))
    else:
        t[key] = v


builtin_bool = bool


def _unsigned_item(t: torch.Tensor) -> int:
    v = int(_dtypes.compute(t).item())
    return v + 2**64 if v < 0 and t.dtype is _dtypes.uint64 else v


def _setitem_scalar(value: Any, t: torch.Tensor) -> torch.Tensor:
    from ._helpers import PY_SCALARS, as_py_scalar, scalar_to_tensor

    value = as_py_scalar(value)
    if not isinstance(value, PY_SCALARS):
        raise TypeError(f"x[...] = value needs a NeuronArray or a Python scalar, got {type(value).__name__}")
    if isinstance(value, complex) and t.dtype not in _dtypes.COMPLEX_FLOAT:
        raise TypeError(f"cannot assign a complex value into a {_dtypes.name(t.dtype)} array")
    if isinstance(value, float) and t.dtype not in _dtypes.FLOATING:
        raise TypeError(f"cannot assign a float value into a {_dtypes.name(t.dtype)} array")
    return scalar_to_tensor(value, t.dtype, t.device, "__setitem__")


def _torch_key(key: Any, t: torch.Tensor) -> Any:
    """Translate an index key: NeuronArrays to tensors (integer ones as int64, since torch reads uint8 as a
    mask), with device and dtype checks."""
    if not isinstance(key, tuple):
        return _empty_mask_fix(_torch_key_part(key, t), t, 0)
    parts, dim = [], 0
    for k in key:
        p = _torch_key_part(k, t)
        if dim is not None:
            p = _empty_mask_fix(p, t, dim)
            dim = None if p is Ellipsis else dim + _consumed_dims(p)
        parts.append(p)
    return tuple(parts)


def _empty_mask_fix(p: Any, t: torch.Tensor, dim: int) -> Any:
    """An empty boolean mask selects nothing whatever the sides it leaves at 0 (NumPy accepts a (0, 0) mask on
    a (0, 1) array); torch wants the exact sides, so give it an all-false mask of those."""
    if isinstance(p, torch.Tensor) and p.dtype is torch.bool and p.numel() == 0 and p.dim():
        sides = t.shape[dim:dim + p.dim()]
        if len(sides) == p.dim() and all(ps in (ts, 0) for ps, ts in zip(p.shape, sides, strict=True)):
            return torch.zeros(sides, dtype=torch.bool, device=p.device)
    return p


def _torch_key_part(k: Any, t: torch.Tensor) -> Any:
    if isinstance(k, NeuronArray):
        kt = k._t
        if kt.device != t.device:
            raise ValueError(f"index array is on {kt.device}, the indexed array on {t.device}")
        if kt.dtype is torch.bool:
            return kt
        if kt.dtype not in _dtypes.INTEGER:
            raise IndexError(f"arrays used as indices must be integer or boolean, got {_dtypes.name(kt.dtype)}")
        return _dtypes.cast(kt, torch.int64) if kt.dtype is not torch.int64 else kt
    if isinstance(k, (np.integer, np.bool_)):
        return k.item()
    if isinstance(k, float):
        raise IndexError("only integers, slices, ellipsis, None and integer or boolean arrays are valid indices")
    if isinstance(k, slice):
        return slice(*(operator.index(v) if v is not None else None for v in (k.start, k.stop, k.step)))
    return k


def _is_basic(key: Any) -> bool:
    parts = key if isinstance(key, tuple) else (key,)
    return all(isinstance(p, (int, slice)) or p is None or p is Ellipsis for p in parts)


def _has_negative_step(key: Any) -> bool:
    parts = key if isinstance(key, tuple) else (key,)
    return any(isinstance(p, slice) and p.step is not None and p.step < 0 for p in parts)


def _consumed_dims(p: Any) -> int:
    if p is None or p is Ellipsis:
        return 0
    if isinstance(p, torch.Tensor) and p.dtype is torch.bool:
        return p.dim()
    if isinstance(p, builtin_bool):
        return 0
    return 1


def _getitem_negative_steps(t: torch.Tensor, key: Any) -> torch.Tensor:
    """torch has no negative strides. Apply every slice first, each negative one as its positive twin plus a
    flip (dimensions are unchanged by slicing), then the rest of the key with those slices as ``:``. Slicing
    commutes with the remaining integer, array and None entries, so this equals NumPy's one-step result."""
    parts = key if isinstance(key, tuple) else (key,)
    n_consumed = sum(_consumed_dims(p) for p in parts)
    if sum(p is Ellipsis for p in parts) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if n_consumed > t.dim():
        raise IndexError(f"too many indices: array is {t.dim()}-dimensional, but {n_consumed} were indexed")
    dim = 0
    flips: list[int] = []
    first: list[Any] = []
    rest: list[Any] = []
    for p in parts:
        if p is Ellipsis:
            skip = t.dim() - n_consumed
            first += [slice(None)] * skip
            dim += skip
            rest.append(p)
            continue
        n = _consumed_dims(p)
        if isinstance(p, slice):
            start, stop, step = p.indices(t.shape[dim])
            if step < 0:
                count = len(range(start, stop, step))
                last = start + (count - 1) * step
                first.append(slice(last, start + 1, -step) if count else slice(0, 0))
                flips.append(dim)
            else:
                first.append(p)
            rest.append(slice(None))
        else:
            first += [slice(None)] * n
            rest.append(p)
        dim += n
    sliced = t[tuple(first)]
    if flips:
        sliced = _dtypes.via_compute(lambda c: c.flip(flips), sliced)
    return sliced[tuple(rest)]


# --- operators: each delegates to the namespace function of the same meaning ---

def _binary(fname: str, reflected: bool = False):
    def op(self: NeuronArray, other: Any, /) -> NeuronArray:
        if not isinstance(other, (NeuronArray, builtin_bool, int, float, complex, np.generic)):
            return NotImplemented
        f = getattr(_ns(), fname)
        return f(other, self) if reflected else f(self, other)

    op.__name__ = fname
    return op


def _inplace(fname: str):
    def op(self: NeuronArray, other: Any, /) -> NeuronArray:
        if not isinstance(other, (NeuronArray, builtin_bool, int, float, complex, np.generic)):
            return NotImplemented
        result = getattr(_ns(), fname)(self, other)
        if result.dtype != self.dtype:
            raise TypeError(f"in-place {fname} would change the dtype of x from {_dtypes.name(self.dtype)} to "
                            f"{_dtypes.name(result.dtype)}; use x = {fname}(x, y) instead")
        if result.shape != self.shape:
            raise ValueError(f"in-place {fname} would change the shape of x from {self.shape} to "
                             f"{result.shape}; in-place operands must broadcast to x's shape")
        self._t.copy_(result._t)
        return self

    op.__name__ = f"i{fname}"
    return op


def _unary(fname: str):
    def op(self: NeuronArray, /) -> NeuronArray:
        return getattr(_ns(), fname)(self)

    op.__name__ = fname
    return op


_ARITHMETIC = {
    "add": "add", "sub": "subtract", "mul": "multiply", "truediv": "divide", "floordiv": "floor_divide",
    "mod": "remainder", "pow": "pow", "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor",
    "lshift": "bitwise_left_shift", "rshift": "bitwise_right_shift", "matmul": "matmul",
}
for _dunder, _fname in _ARITHMETIC.items():
    setattr(NeuronArray, f"__{_dunder}__", _binary(_fname))
    setattr(NeuronArray, f"__r{_dunder}__", _binary(_fname, reflected=True))
    setattr(NeuronArray, f"__i{_dunder}__", _inplace(_fname))
for _dunder, _fname in {"lt": "less", "le": "less_equal", "gt": "greater", "ge": "greater_equal",
                        "eq": "equal", "ne": "not_equal"}.items():
    setattr(NeuronArray, f"__{_dunder}__", _binary(_fname))
for _dunder, _fname in {"neg": "negative", "pos": "positive", "abs": "abs", "invert": "bitwise_invert"}.items():
    setattr(NeuronArray, f"__{_dunder}__", _unary(_fname))
