"""NeuronArray: the array object of the standard, wrapping one torch.Tensor.

Operators delegate to the namespace functions (one implementation of each rule); indexing follows NumPy where
torch differs (negative slice steps, index arrays of any integer dtype, the place of advanced dimensions, writes
from overlapping views); conversions follow the standard and NumPy 2.
"""

from __future__ import annotations

import enum
import math
import operator
from collections.abc import Callable
from typing import Any, NamedTuple

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


_namespace = None


def _ns():
    """The namespace module, looked up once (operators call it on every use). Its functions are read from it at
    each call: the distributed package replaces them with wrappers that handle sharded arrays."""
    global _namespace
    if _namespace is None:
        import trn_backend

        _namespace = trn_backend
    return _namespace


_numpy_dispatch = None


def _dispatch():
    """trn_backend.numpy_dispatch, looked up once: an import statement in NumPy's hooks costs 1 us per call."""
    global _numpy_dispatch
    if _numpy_dispatch is None:
        from . import numpy_dispatch

        _numpy_dispatch = numpy_dispatch
    return _numpy_dispatch


# In-place fast paths, registered by _api.elementwise: function name -> (the namespace function, run(tensor,
# other)), run updating the tensor in place and answering True where torch's in-place method is the operator
# exactly, False (changing nothing) where the general path must run. It runs only while the namespace still
# holds that function: a replaced one (the distributed package's wrappers, a test's patch) is called instead.
_INPLACE_FAST: dict[str, tuple[Callable[..., Any], Callable[[torch.Tensor, Any], bool]]] = {}


def register_inplace(fname: str, func: Callable[..., Any], run: Callable[[torch.Tensor, Any], bool]) -> None:
    _INPLACE_FAST[fname] = (func, run)


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
    def dtype(self) -> np.dtype:
        """A NumPy dtype object (``x.dtype == np.float32``), as in CuPy and JAX; the tensor's is ``x._t.dtype``."""
        return _dtypes.PUBLIC[self._t.dtype]

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
        # torch's numpy() lacks bfloat16: share the bits as ml_dtypes' bfloat16
        out = t.view(torch.uint16).numpy().view(_dtypes.PUBLIC[t.dtype]) if t.dtype is _dtypes.bfloat16 \
            else t.numpy()
        if dtype is not None and np.dtype(dtype) != out.dtype:
            if copy is False:
                raise ValueError(f"np.asarray(x, dtype={np.dtype(dtype)}, copy=False) needs a copy to convert "
                                 f"from {out.dtype}")
            out = out.astype(dtype)
        return out

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        """NEP 18: NumPy functions on NeuronArrays run on this namespace (see trn_backend.numpy_dispatch).
        NEP 35: NumPy passes ``np.zeros(3, like=x)`` here without ``like``; it goes back in, so the result lands
        on x's device."""
        dispatch = _numpy_dispatch or _dispatch()
        if func in dispatch.functions.LIKE:
            kwargs = {**kwargs, "like": self}
        return dispatch.array_function(func, types, args, kwargs)

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """NEP 13: NumPy ufuncs on NeuronArrays run on this namespace (see trn_backend.numpy_dispatch)."""
        return (_numpy_dispatch or _dispatch()).array_ufunc(ufunc, method, inputs, kwargs)

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

    def __round__(self, ndigits: int | None = None) -> int | NeuronArray:
        """As for a NumPy scalar: ``round(x)`` is a Python int (one element), ``round(x, n)`` an array rounded
        half to even at ``n`` decimals (``numpy.round``)."""
        if ndigits is None:
            if self._t.dtype in _dtypes.COMPLEX_FLOAT:
                raise TypeError("round() of a complex array is undefined; take .real or abs first")
            return round(self._scalar("round"))
        return np.round(self, ndigits)

    def __format__(self, spec: str) -> str:
        """A 0-d array formats as its value (``f"{x:.6f}"``), as NumPy's; other arrays take only an empty spec."""
        if self._t.dim() == 0:
            return format(self._scalar("format"), spec)
        if spec:
            raise TypeError(f"unsupported format string {spec!r} for a NeuronArray of shape {self.shape}; only "
                            "0-d arrays take a format spec")
        return str(self)

    def __str__(self) -> str:
        """The values as NumPy prints them (``1.5``, ``[1. 2.]``)."""
        return str(self._host())

    def __repr__(self) -> str:
        values = np.array2string(self._host(), separator=", ", prefix="NeuronArray(")
        return f"NeuronArray({values}, dtype={_dtypes.name(self._t.dtype)}, device='{self._t.device}')"

    def _host(self) -> np.ndarray:
        return np.asarray(wrap(self._t.detach().cpu()))

    # --- indexing ---
    def __getitem__(self, key: Any) -> NeuronArray:
        t = self._t
        if _simple(key):  # torch's basic indexing is NumPy's there: a view, for every dtype
            r = t[key]
            kind = type(key)
            if kind is not int and kind is not tuple:  # a slice, None or Ellipsis: never one element
                return wrap(r)
        else:
            p = _plan(_movable(t), key)
            if p.flips and not p.indices and type(t) is torch.Tensor:
                # NumPy's negative steps make a view; torch has no negative strides: one that remembers them
                return _reversed(p.view if p.view.dtype is t.dtype else p.view.view(t.dtype), p.flips)
            r = p.result()
            r = r if r.dtype is t.dtype else r.view(t.dtype)
        # NumPy reads one element (an integer for every dimension, no Ellipsis) as a scalar, a copy: the swap
        # x[0], x[1] = x[1], x[0] must not see the first write in its second value
        return wrap(r.clone() if r.dim() == 0 and not _has_ellipsis(key) else r)

    def __setitem__(self, key: Any, value: Any) -> None:
        t = self._t
        if isinstance(value, NeuronArray):
            if value._t.device != t.device:
                raise ValueError(f"x[...] = value: value is on {value._t.device}, x on {t.device}")
            v = unaliased(_assigned(value._t, t.dtype), t)
        elif isinstance(value, np.generic) and value.dtype in _dtypes.TORCH_OF_PUBLIC:
            # a NumPy scalar is a strong 0-d array (NEP 50): cast as an array value is (np.int64(-3) into uint8
            # stores 253), not range-checked as a Python number
            v = _assigned(_dtypes.host_scalar(value).to(t.device), t.dtype)
        else:
            v = _setitem_scalar(value, t)
        try:
            _setitem(_movable(t), key, _movable(v))
        except RuntimeError:
            _check_writable(t, "x[key] = value")
            raise

    def _write(self, r: torch.Tensor, operation: str) -> None:
        """Overwrite every element with ``r`` (of x's shape and dtype): the in-place operators' and ``out=``'s
        one way to write a whole array (a view with negative steps writes into its base)."""
        t = self._t
        try:
            t.copy_(unaliased(r, t))  # r may be a view of x
        except RuntimeError:
            _check_writable(t, operation)
            raise

    # --- dask (its chunk functions also call NumPy's ndarray methods: see _NUMPY_METHODS below) ---
    __array_priority__ = 1.0  # dask's tensordot takes its function from the operand type ranked highest; ndarray 0

    def __dask_tokenize__(self) -> tuple[Any, ...]:
        """dask's deterministic token: device, dtype, shape and a hash of the values in C order, as dask hashes
        an ndarray (no pickle). A contiguous CPU array is hashed in place. A device array is not copied to the
        host to be hashed: its token is its memory (address, shape, strides, dtype) and torch's version counter,
        which every in-place write bumps, so equal tokens mean the same unchanged data within this process.
        (C order: dask hashes an ndarray's memory order, so a transposed view and a reshape with the same memory
        and shape would share a token.)"""
        (_numpy_dispatch or _dispatch()).register_dask()  # dask is in use: its chunk dispatch needs NeuronArray
        t = self._t
        if not t.is_cpu:
            return ("trn_backend.NeuronArray", str(t.device), t.data_ptr(), tuple(t.shape), t.stride(),
                    str(t.dtype), t._version)
        from dask.base import normalize_token  # only dask calls this

        host = np.asarray(self)
        host = host if host.flags.c_contiguous else host.copy(order="C")
        return "trn_backend.NeuronArray", str(t.device), normalize_token(host)


builtin_bool = bool


def _check_writable(t: torch.Tensor, operation: str) -> None:
    """After torch refused a write into ``t``: a clear error where the reason is that ``t`` is an inference
    tensor, as the copies that views with negative steps read are (see ``_ReversedView``)."""
    if t.is_inference():
        raise ValueError(f"{operation}: x holds a read-only copy (a torch inference tensor), as functions such as "
                         "reshape return for a view with negative steps (x[::-1]), which torch cannot view; "
                         "write into that view itself, or copy first: xp.asarray(x, copy=True)") from None


def unaliased(src: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
    """``src``, copied if its memory may overlap ``dst``'s: NumPy reads a whole right-hand side before writing
    (``x[1:] = x[:-1]``), while torch writing from an overlapping view raises or reads what it already overwrote.
    Byte ranges rather than storages are compared, since two storages can share memory (``torch.from_numpy`` of
    overlapping NumPy views); tensor subclasses (DTensor) have no data pointer to compare and are always copied."""
    return src if not overlaps(src, dst) else src.clone()


def overlaps(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether the memory of two tensors may overlap (see ``unaliased``); True for tensor subclasses."""
    if type(a) is not torch.Tensor or type(b) is not torch.Tensor:
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


def _movable(t: torch.Tensor) -> torch.Tensor:
    twin = _SIGNED_TWIN.get(t.dtype)
    return t if twin is None else t.view(twin)


def _unsigned_item(t: torch.Tensor) -> int:
    v = int(_dtypes.compute(t).item())
    return v + 2**64 if v < 0 and t.dtype is _dtypes.uint64 else v


def _setitem_scalar(value: Any, t: torch.Tensor) -> torch.Tensor:
    from ._helpers import PY_SCALARS, as_py_scalar, float_to_int, scalar_to_tensor

    value = as_py_scalar(value)
    if not isinstance(value, PY_SCALARS):
        raise TypeError(f"x[...] = value needs a NeuronArray or a Python scalar, got {type(value).__name__}")
    if isinstance(value, complex) and t.dtype not in _dtypes.COMPLEX_FLOAT and t.dtype is not _dtypes.bool:
        raise TypeError(f"cannot assign the complex value {value} into a {_dtypes.name(t.dtype)} array; assign "
                        "its .real or .imag")
    # NumPy casts the value to x's dtype: a float into an integer array truncates toward zero, as int() does
    # (NaN is a ValueError and infinities or values beyond the dtype an OverflowError, as in NumPy)
    if t.dtype is _dtypes.bool:
        value = builtin_bool(value)
    elif isinstance(value, float) and t.dtype in _dtypes.INTEGER:
        value = float_to_int(value, t.dtype, f"cannot assign {value} into a {_dtypes.name(t.dtype)} array")
    return scalar_to_tensor(value, t.dtype, t.device, "__setitem__")


def _assigned(v: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """An array value cast to the dtype of the array it is assigned into, as NumPy does (unsafe casting): a
    complex value into a real numeric array keeps the real part, with NumPy's ComplexWarning (into bool: whether
    either part is nonzero)."""
    if v.dtype in _dtypes.COMPLEX_FLOAT and dtype not in _dtypes.COMPLEX_FLOAT and dtype is not _dtypes.bool:
        import warnings

        warnings.warn(f"assigning a {_dtypes.name(v.dtype)} value into a {_dtypes.name(dtype)} array discards "
                      "the imaginary part", np.exceptions.ComplexWarning, stacklevel=3)
        v = v.real
    return _dtypes.cast(v, dtype)


# --- NumPy's indexing on torch. torch's own rules differ: it reads uint8 arrays as masks, counts integers beside
# arrays as basic indices, places advanced dimensions differently around None and Ellipsis, and has no negative
# strides. So a key runs as basic indexing with positive steps (a view of the array), one gather over the
# advanced dimensions moved to the front (where torch's order is NumPy's), flips for the negative steps, and a
# move of the advanced dimensions to NumPy's place for them. ---

class _Plan(NamedTuple):
    """A key as torch operations: the result is ``view[indices]`` (the advanced dimensions, of ``shape``, then
    the basic ones), flipped along ``flips``, with the advanced dimensions moved to position ``at``."""

    view: torch.Tensor  # the array with the key's basic part applied, its advanced dimensions first
    indices: tuple[torch.Tensor, ...]  # int64, one per advanced dimension, broadcast; none for a basic key
    shape: tuple[int, ...]
    flips: tuple[int, ...]
    at: int

    def result_shape(self) -> tuple[int, ...]:
        basic = tuple(self.view.shape[len(self.indices):])
        return basic[:self.at] + self.shape + basic[self.at:]

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


def _setitem(t: torch.Tensor, key: Any, v: torch.Tensor) -> None:
    p = _plan(t, key)
    v = p.torch_order(_broadcast_value(v, p.result_shape()))
    if p.flips:
        v = v.flip(p.flips)
    if p.indices:
        # an index array that is a view of x itself (x[x] = v) must be read before x changes, like the value
        p.view.index_put_(tuple(unaliased(i, t) for i in p.indices), v)
    else:
        p.view.copy_(v)


def _plan(t: torch.Tensor, key: Any) -> _Plan:
    if _simple(key):  # (reads of simple keys return before planning)
        return _Plan(t[key], (), (), (), 0)
    parts, consumed = _key_parts(t, key)
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
        return _Plan(view, (), (), tuple(flipped), 0)
    shape = _broadcast_indices(list(indices.values()))
    basic = [j for j in range(n) if j not in indices]
    flips = tuple(len(shape) + basic.index(j) for j in flipped)
    # NumPy keeps the advanced dimensions in place when nothing (a slice, None, Ellipsis) separates their
    # indices in the key, and puts them first otherwise
    adjacent = advanced_parts == list(range(advanced_parts[0], advanced_parts[-1] + 1))
    return _Plan(view.permute(list(indices) + basic), tuple(i.expand(shape) for i in indices.values()), shape,
                 flips, min(indices) if adjacent else 0)


def _key_parts(t: torch.Tensor, key: Any) -> tuple[list[Any], int]:
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


def _has_ellipsis(key: Any) -> bool:
    return key is Ellipsis or (isinstance(key, tuple) and any(k is Ellipsis for k in key))


def _simple(key: Any) -> bool:
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


def _simple_part(p: Any) -> bool:
    """An int (not a bool), None, or a slice of Python ints (or None) with a positive step."""
    kind = type(p)
    if kind is slice:
        step = p.step
        return (type(p.start) in _INT_OR_NONE and type(p.stop) in _INT_OR_NONE
                and (step is None or (type(step) is int and step > 0)))
    return kind is int or p is None


def _torch_key_part(k: Any, t: torch.Tensor) -> Any:
    """One entry of a key in torch terms. Arrays of any origin (NeuronArray, torch tensor, NumPy array, list)
    become bool masks or, whatever their integer dtype, int64 index tensors (torch reads uint8 ones as masks);
    a boolean scalar is a 0-d mask, as in NumPy; integers of any type become ints."""
    if isinstance(k, NeuronArray):
        k = k._t
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
    if isinstance(k, (builtin_bool, np.bool_)):
        return torch.tensor(builtin_bool(k), device=t.device)
    if isinstance(k, slice):
        return slice(*(operator.index(v) if v is not None else None for v in (k.start, k.stop, k.step)))
    if k is None or k is Ellipsis:
        return k
    try:
        return operator.index(k)
    except TypeError:
        raise IndexError("only integers, slices, ellipsis, None and integer or boolean arrays are valid indices, "
                         f"got {type(k).__name__}") from None


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
            raise IndexError(f"boolean index did not match indexed array along axis {axis}; size of axis is "
                             f"{shape[axis]} but size of corresponding boolean axis is {side}")


def _broadcast_indices(indices: list[torch.Tensor]) -> tuple[int, ...]:
    shapes = [tuple(i.shape) for i in indices]
    try:
        return np.broadcast_shapes(*shapes)  # several times faster than torch.broadcast_shapes
    except ValueError:
        raise IndexError("shape mismatch: indexing arrays could not be broadcast together with shapes "
                         + " ".join(map(str, shapes))) from None


def _broadcast_value(v: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    """The value broadcast to the indexed shape; like NumPy, leading unit dimensions of the value are dropped."""
    extra = v.dim() - len(shape)
    trimmed = v.reshape(v.shape[extra:]) if extra > 0 and all(s == 1 for s in v.shape[:extra]) else v
    if trimmed.dim() > len(shape) or any(
            s not in (1, side) for s, side in zip(reversed(trimmed.shape), reversed(shape), strict=False)):
        raise ValueError(f"x[key] = value: a value of shape {tuple(v.shape)} does not broadcast to the indexed "
                         f"shape {shape}")
    return trimmed.broadcast_to(shape)


# --- views with negative steps ---

class _ReversedView(NeuronArray):
    """NumPy's view with negative strides (``x[::-1]``), which torch lacks: ``_base``, a view of x's memory with
    positive strides, read reversed along the dimensions ``_dims``. ``_t`` flips the base afresh at each read, so
    reads see every later write into x; writes go into the base, their key mirrored (``_mirrored``)."""

    __slots__ = ("_base", "_dims")

    @property
    def _t(self) -> torch.Tensor:  # type: ignore[override]
        # an inference tensor: torch refuses in-place writes into it, so a write that reaches this copy (through
        # a view a function made of it, as reshape does) raises rather than being lost
        with torch.inference_mode():
            return _flipped(self._base, self._dims)

    # the metadata, without the copy that _t makes
    @property
    def dtype(self) -> np.dtype:
        return _dtypes.PUBLIC[self._base.dtype]

    @property
    def device(self) -> torch.device:
        return self._base.device

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._base.shape)

    @property
    def ndim(self) -> int:
        return self._base.dim()

    @property
    def size(self) -> int:
        return self._base.numel()

    def __len__(self) -> int:
        return self._base.shape[0]

    @property
    def T(self) -> NeuronArray:
        return self._moved(NeuronArray.T.fget(wrap(self._base)), [1, 0])

    @property
    def mT(self) -> NeuronArray:
        order = list(range(self._base.dim()))
        order[-2:] = order[:-3:-1]
        return self._moved(NeuronArray.mT.fget(wrap(self._base)), order)

    def _moved(self, base: NeuronArray, order: list[int]) -> NeuronArray:
        """This view with its dimensions in ``order``, given ``base``: the base's dimensions in that order."""
        return _reversed(base._t, tuple(sorted(order.index(d) for d in self._dims)))

    def __getitem__(self, key: Any) -> NeuronArray:
        return NeuronArray.__getitem__(wrap(self._base), _mirrored(key, self._base, self._dims))

    def __setitem__(self, key: Any, value: Any) -> None:
        NeuronArray.__setitem__(wrap(self._base), _mirrored(key, self._base, self._dims), value)

    def _write(self, r: torch.Tensor, operation: str) -> None:
        self._base.copy_(_flipped(r, self._dims))  # a copy: r may be read from the base

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        """NumPy's own view with negative strides of the base's array (which is a copy only off the host)."""
        a = wrap(self._base).__array__(dtype, copy)
        return a[tuple(slice(None, None, -1) if d in self._dims else slice(None) for d in range(a.ndim))]

    def __dlpack__(self, /, **kwargs: Any) -> Any:
        if kwargs.get("copy") is False:
            raise BufferError("__dlpack__(copy=False) of a view with negative steps: DLPack consumers (torch) "
                              "take no negative strides; export a copy (copy=None or True) or the base array")
        return NeuronArray.__dlpack__(self, **kwargs)

    def __dask_tokenize__(self) -> tuple[Any, ...]:
        return (*wrap(self._base).__dask_tokenize__(), "reversed", self._dims)

    def __reduce__(self) -> tuple[Any, ...]:
        """copy, deepcopy and pickle give an independent array of the values, as for NumPy's views."""
        return wrap, (self._t.clone(),)


def _reversed(base: torch.Tensor, dims: tuple[int, ...]) -> _ReversedView:
    view = object.__new__(_ReversedView)
    view._base = base
    view._dims = dims
    return view


def _flipped(t: torch.Tensor, dims: tuple[int, ...]) -> torch.Tensor:
    return _movable(t).flip(dims).view(t.dtype)


def _mirrored(key: Any, t: torch.Tensor, dims: tuple[int, ...]) -> tuple[Any, ...]:
    """The key that selects from ``t`` what ``key`` selects from ``t`` reversed along ``dims``, in the same order
    and shape. Along a reversed axis an index i becomes ``~i`` (-1 - i, in bounds exactly when i is), a slice
    runs mirrored with the opposite step, and a mask becomes its nonzero() index arrays, mirrored in turn
    (reversing the mask itself would reorder what it selects). An Ellipsis over reversed axes becomes their
    slices."""
    parts, consumed = _key_parts(t, key)
    explicit = _has_ellipsis(key)
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


# --- operators: each delegates to the namespace function of the same meaning ---

_OPERANDS = (NeuronArray, builtin_bool, int, float, complex, np.generic)


def _foreign(fname: str, other: Any) -> Any:
    """An operand of another type: NotImplemented (Python then asks the other operand), except a torch.Tensor,
    which would leave Python's bare "unsupported operand" (or, for ==, a silent False): a TypeError saying what
    to write instead."""
    if isinstance(other, torch.Tensor):
        raise TypeError(f"{fname}: a NeuronArray does not combine with a torch.Tensor; wrap the tensor first with "
                        "trn_backend.asarray(t), which shares its memory (no copy)")
    return NotImplemented


def _binary(fname: str, reflected: bool = False):
    if reflected:
        def op(self: NeuronArray, other: Any, /) -> NeuronArray:
            if not isinstance(other, _OPERANDS):
                return _foreign(fname, other)
            return getattr(_namespace or _ns(), fname)(other, self)
    else:
        def op(self: NeuronArray, other: Any, /) -> NeuronArray:
            if not isinstance(other, _OPERANDS):
                return _foreign(fname, other)
            return getattr(_namespace or _ns(), fname)(self, other)

    op.__name__ = fname
    return op


def _inplace(fname: str):
    def op(self: NeuronArray, other: Any, /) -> NeuronArray:
        # exact type: the in-place operators of a registered subclass (sharded arrays) take the general path
        func = getattr(_namespace or _ns(), fname)
        if type(self) is NeuronArray:
            fast = _INPLACE_FAST.get(fname)
            if fast is not None and fast[0] is func:
                try:
                    if fast[1](self._t, other):
                        return self
                except RuntimeError:
                    _check_writable(self._t, f"in-place {fname}")
                    raise
        if not isinstance(other, _OPERANDS):
            return _foreign(fname, other)
        dtype = self._t.dtype
        try:
            result = func(self, other)
        except ValueError:
            # NumPy refuses a result x cannot store before computing it (bool_x **= -1 is that TypeError, not
            # the negative power's ValueError)
            _check_stored(_dtypes.to_dtype((_namespace or _ns()).result_type(self, other)), dtype, fname)
            raise
        r = result._t
        if r.dtype is not dtype:  # NumPy's rule: the result casts back to x's dtype within its kind
            _check_stored(r.dtype, dtype, fname)
            r = _dtypes.cast(r, dtype)
        if result.shape != self.shape:
            raise ValueError(f"in-place {fname} would change the shape of x from {self.shape} to "
                             f"{result.shape}; in-place operands must broadcast to x's shape")
        self._write(r, f"in-place {fname}")
        return self

    op.__name__ = f"i{fname}"
    return op


def _check_stored(result: torch.dtype, dtype: torch.dtype, fname: str) -> None:
    """TypeError unless x of ``dtype`` may store an in-place result of dtype ``result`` (NumPy's same_kind)."""
    if result is not dtype and not _dtypes.same_kind(result, dtype):
        raise TypeError(f"in-place {fname}: the {_dtypes.name(result)} result cannot be stored in x of dtype "
                        f"{_dtypes.name(dtype)} under NumPy's same_kind casting; use x = {fname}(x, y) instead")


def _unary(fname: str):
    def op(self: NeuronArray, /) -> NeuronArray:
        return getattr(_namespace or _ns(), fname)(self)

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


# NumPy's ndarray methods, for code that duck-types ndarray (dask's chunk functions call x.sum(axis=...),
# x.reshape(...), x.astype(...)). Each calls the NumPy function of its name, which the NumPy dispatch table runs
# on the namespace (trn_backend.numpy_dispatch): one implementation of each rule. Methods that change an array in
# place in NumPy (sort, fill, resize) are left out.
_NUMPY_METHODS = ("all", "any", "argmax", "argmin", "argsort", "clip", "conj", "conjugate", "cumprod", "cumsum",
                  "diagonal", "dot", "max", "mean", "min", "nonzero", "prod", "ravel", "repeat", "round",
                  "searchsorted", "squeeze", "std", "sum", "swapaxes", "take", "trace", "var")


def _numpy_method(name: str) -> Callable[..., Any]:
    func = getattr(np, name)

    def method(self: NeuronArray, *args: Any, **kwargs: Any) -> Any:
        return func(self, *args, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"numpy.{name}(x, ...) as ndarray's method."
    return method


def _ndarray_reshape(self: NeuronArray, *shape: Any, order: str = "C", copy: bool | None = None) -> NeuronArray:
    """ndarray.reshape: the shape as one tuple or as separate ints."""
    return np.reshape(self, shape[0] if len(shape) == 1 else shape, order=order, copy=copy)


def _ndarray_transpose(self: NeuronArray, *axes: Any) -> NeuronArray:
    """ndarray.transpose: the axes as one sequence or as separate ints; none (or None) reverses them."""
    return np.transpose(self, axes[0] if len(axes) == 1 else (axes or None))


def _ndarray_astype(self: NeuronArray, dtype: Any, order: str = "K", casting: str = "unsafe", subok: bool = True,
                    copy: bool = True) -> NeuronArray:
    """ndarray.astype: ``casting`` is checked with NumPy's rule; NeuronArrays are C-ordered (order K, A or C)."""
    if order not in ("K", "A", "C"):
        raise ValueError(f"x.astype(): order={order!r} cannot be met: NeuronArrays are C-ordered")
    target = _dtypes.to_dtype(dtype, "x.astype() dtype")
    if casting != "unsafe" and not np.can_cast(_dtypes.public(self._t.dtype), _dtypes.public(target), casting):
        raise TypeError(f"x.astype(): cannot cast {_dtypes.name(self._t.dtype)} to {_dtypes.name(target)} under "
                        f"casting={casting!r}")
    return np.astype(self, target, copy=copy)  # NumPy's unsafe cast (complex to real keeps the real part)


def _ndarray_copy(self: NeuronArray, order: str = "C") -> NeuronArray:
    """ndarray.copy (NeuronArrays are C-ordered: order K, A or C)."""
    if order not in ("K", "A", "C"):
        raise ValueError(f"x.copy(): order={order!r} cannot be met: NeuronArrays are C-ordered")
    return np.copy(self)


def _ndarray_flatten(self: NeuronArray, order: str = "C") -> NeuronArray:
    """ndarray.flatten: a 1-d copy."""
    return np.copy(np.ravel(self, order=order))


def _ndarray_item(self: NeuronArray, *args: Any) -> Any:
    """ndarray.item: the one element, the element at a flat index, or at a multi-index, as a Python scalar."""
    if len(args) == 1 and isinstance(args[0], tuple):
        args = args[0]
    if not args:
        return self._scalar("item")
    element = wrap(self._t.reshape(-1))[args[0]] if len(args) == 1 else self[args]
    return element._scalar("item")


def _ndarray_tolist(self: NeuronArray) -> Any:
    """ndarray.tolist: nested lists of Python scalars (a device array is copied to the host)."""
    return np.asarray(self).tolist()


for _name in _NUMPY_METHODS:
    setattr(NeuronArray, _name, _numpy_method(_name))
for _name, _method in {"reshape": _ndarray_reshape, "transpose": _ndarray_transpose, "astype": _ndarray_astype,
                       "copy": _ndarray_copy, "flatten": _ndarray_flatten, "item": _ndarray_item,
                       "tolist": _ndarray_tolist}.items():
    _method.__name__ = _method.__qualname__ = _name
    setattr(NeuronArray, _name, _method)
NeuronArray.itemsize = property(lambda self: self._t.element_size(), doc="Bytes per element (ndarray.itemsize).")
NeuronArray.nbytes = property(lambda self: self._t.element_size() * self.size, doc="Bytes of the elements.")
