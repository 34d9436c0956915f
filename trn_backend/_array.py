"""NeuronArray: the array object of the standard, wrapping one torch.Tensor.

Operators call the namespace's public functions (one implementation of each rule), which the namespace puts in
``OPERATORS``; indexing follows NumPy where torch differs (negative slice steps, index arrays of any integer dtype,
the place of advanced dimensions, writes from overlapping views: the engine is ``_indexing``); conversions follow
the standard and NumPy 2; NumPy's ndarray methods come from ``_ndarray``. The array object imports neither the
namespace nor the NumPy dispatch: they fill ``PROTOCOLS`` and ``OPERATORS`` when trn_backend is imported.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable
from typing import Any, cast

import numpy as np
import torch

from . import _device, _dtypes, _indexing
from ._indexing import has_ellipsis, ints_and_slices, movable, readonly, simple, unaliased
from ._ndarray import NdarrayMethods
from ._overrides import OVERRIDES, handler

SUPPORTED_API_VERSIONS = ("2023.12", "2024.12", "2025.12")

# Tensor subclasses that wrap into a NeuronArray subclass (the distributed package registers DTensor here).
_WRAPPERS: dict[type, type[NeuronArray]] = {}


def register_wrapper(tensor_type: type, array_type: type[NeuronArray]) -> None:
    _WRAPPERS[tensor_type] = array_type


_INT_OR_NONE = (int, type(None))  # the bounds of a slice torch reads as NumPy does
_new = object.__new__
_TYPE = type  # ndarray.view's parameter named type hides the builtin there
_TENSOR = torch.Tensor


def wrap(t: torch.Tensor) -> NeuronArray:
    """A NeuronArray (or the registered subclass for tensor subclasses) over ``t``, without copying."""
    cls = NeuronArray if type(t) is torch.Tensor else _WRAPPERS.get(type(t), NeuronArray)
    obj = object.__new__(cls)
    obj._t = t
    return obj


def holdable(tensor: torch.Tensor, who: str) -> torch.Tensor:
    """``tensor`` where a NeuronArray can hold it, else a TypeError that names ``who`` (the caller)."""
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(
            f"{who} wraps a torch.Tensor, got {type(tensor).__name__}; use trn_backend.asarray for other inputs"
        )
    if tensor.dtype not in _dtypes.ALL:
        raise TypeError(
            f"{who} does not support torch dtype {tensor.dtype}; supported: {', '.join(_dtypes.NAMES.values())}"
        )
    return tensor


# What the layers above provide, set when trn_backend is imported: "namespace" (the trn_backend module, by its
# __init__), and by trn_backend.numpy_dispatch "array_function" and "array_ufunc" (NEP 18 and 13), "register_dask"
# and "like" (the NumPy functions whose like= argument NumPy drops before calling __array_function__).
PROTOCOLS: dict[str, Any] = {}

# The namespace's public functions that the operators call, by name (filled by trn_backend._namespace): the public
# ones, so that ``x + sharded`` reaches the registered override as ``add(x, sharded)`` does.
OPERATORS: dict[str, Callable[..., Any]] = {}

# In-place fast paths, registered by _api.elementwise: function name -> (the namespace function, run(tensor,
# other)), run updating the tensor in place and answering True where torch's in-place method is the operator
# exactly, False (changing nothing) where the general path must run. It runs only for that function itself: not
# where OPERATORS holds another (a test's patch), nor where an override handles the call (a sharded operand).
_INPLACE_FAST: dict[str, tuple[Callable[..., Any], Callable[[torch.Tensor, Any], bool]]] = {}


def register_inplace(fname: str, func: Callable[..., Any], run: Callable[[torch.Tensor, Any], bool]) -> None:
    _INPLACE_FAST[fname] = (func, run)


class NeuronArray(NdarrayMethods):
    """An array on a Neuron device, a CPU or a GPU, holding one ``torch.Tensor`` (``x._t``, never copied)."""

    __slots__ = ("_t", "_w", "__weakref__")  # _w: see ``Flags`` (set only on arrays made read-only by flag)
    __hash__ = None  # type: ignore[assignment]  # mutable, and == is elementwise: unhashable, as ndarray
    _w: torch.Tensor | None

    def __init__(self, tensor: torch.Tensor) -> None:
        self._t = holdable(tensor, "NeuronArray")

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
            raise ValueError(
                f"x.T needs a 2-dimensional array, got {self._t.dim()} dimensions; use x.mT for "
                "stacks of matrices or permute_dims for other orders"
            )
        return wrap(self._t.t())

    @property
    def mT(self) -> NeuronArray:
        if self._t.dim() < 2:
            raise ValueError(f"x.mT needs at least 2 dimensions, got {self._t.dim()}")
        return wrap(self._t.transpose(-1, -2))

    # --- ndarray's attributes, as NumPy 2 defines them ---
    @property
    def real(self) -> NeuronArray:
        """ndarray.real: the real parts of a complex array as a view (writes go through); a real array itself."""
        return self._part("real") if self._t.dtype in _dtypes.COMPLEX_FLOAT else self  # NumPy's x.real is x

    @real.setter
    def real(self, value: Any) -> None:
        self.real[...] = value

    @property
    def imag(self) -> NeuronArray:
        """ndarray.imag: the imaginary parts of a complex array as a view (writes go through); for a real array
        zeros of its dtype that refuse writes, as NumPy's read-only array does."""
        t = self._t
        if t.dtype in _dtypes.COMPLEX_FLOAT:
            return self._part("imag")
        with torch.inference_mode():  # torch refuses in-place writes into an inference tensor: read-only
            return wrap(torch.zeros_like(t))

    @imag.setter
    def imag(self, value: Any) -> None:
        if self._t.dtype not in _dtypes.COMPLEX_FLOAT:
            raise TypeError(
                f"x.imag = value: x of dtype {_dtypes.name(self._t.dtype)} has no imaginary part to "
                "set (as in NumPy); convert x to a complex dtype first"
            )
        self.imag[...] = value

    def _part(self, which: str) -> NeuronArray:
        """The real or imaginary parts of a complex array, a view (torch's ``.real`` and ``.imag``)."""
        return wrap(getattr(self._t, which))

    @property
    def strides(self) -> tuple[int, ...]:
        """ndarray.strides: the bytes between neighbours along each axis (torch's strides, in elements, times
        the item size); 0 along a broadcast axis."""
        size = self._t.element_size()
        return tuple(s * size for s in self._t.stride())

    @property
    def flat(self) -> FlatIterator:
        """ndarray.flat: the elements in C order, read by flat index (copies, as NumPy's flatiter returns), or
        written by flat index where x is C-contiguous."""
        return FlatIterator(self)

    @property
    def flags(self) -> Flags:
        """ndarray.flags: ``writeable``, ``c_contiguous``, ``f_contiguous``, ``owndata`` and ``aligned`` (also by
        NumPy's names, ``x.flags["WRITEABLE"]``); ``x.flags.writeable = False`` makes x read-only (see
        ``Flags``)."""
        return Flags(self)

    def _writeable(self) -> bool:
        return not self._t.is_inference()

    def _check_writeable(self, operation: str, what: str = "x") -> None:
        """NumPy's ValueError where the array is read-only, raised before a write route does any other work."""
        if not self._writeable():
            raise ValueError(read_only_message(operation, what))

    def _set_writeable_flag(self, value: bool) -> None:
        _set_writeable(self, value)

    def _set_read_only(self, why: str) -> None:
        """Refuse writes from now on (``readonly_view``); ``why`` is for arrays whose flag cannot be set. A
        tensor subclass without a wrapper of its own has no read-only form: left as it is."""
        if type(getattr(self, self._memory_name())) is _TENSOR:
            _set_writeable(self, False)

    def _memory_name(self) -> str:
        """The attribute holding the tensor over x's memory: ``_t`` (``_base`` for a view with negative steps)."""
        return "_t"

    def __copy__(self) -> NeuronArray:
        """copy.copy(x): a new array of x's values (NumPy's ndarray.__copy__ copies the data), writeable."""
        return wrap(self._t.clone())

    def __deepcopy__(self, memo: dict[int, Any]) -> NeuronArray:
        """copy.deepcopy(x): a new array of x's values, writeable (one per array within the copied object)."""
        result = memo[id(self)] = wrap(self._t.clone())
        return result

    def fill(self, value: Any) -> None:
        """ndarray.fill: every element set to ``value``, converted to x's dtype as NumPy converts it (a float
        into an integer array truncates; a Python int out of the dtype's range is NumPy's OverflowError)."""
        self._check_writeable("x.fill(value)")  # first, as NumPy: before the value is converted
        if isinstance(value, NeuronArray):
            if value.ndim != 0:
                raise ValueError(f"x.fill(value): value must be a scalar or a 0-d array, got shape {value.shape}")
        elif not (isinstance(value, np.generic) and value.dtype in _dtypes.TORCH_OF_PUBLIC):
            # a Python scalar converts once, as x[...] = value converts it (NumPy's own conversion would take a
            # large int through float64, rounding twice, and ml_dtypes' bfloat16 refuses ints beyond int64)
            value = wrap(_indexing.setitem_scalar(value, self._t, "x.fill"))
        self[...] = value  # a 0-d array or a NumPy scalar: cast as an array value, as NumPy's fill casts it

    def view(self, dtype: Any = None, type: Any = None) -> NeuronArray:  # noqa: A002 - ndarray.view's name
        """ndarray.view: the same memory, as another dtype where NumPy 2 allows it (the same item size, or
        else a contiguous last axis whose byte length the new item size divides); no argument: a new array
        object over the same memory. Never a copy: what cannot be viewed raises."""
        if type is not None or (isinstance(dtype, _TYPE) and issubclass(dtype, np.ndarray)):
            raise TypeError(
                "x.view(type=...): NeuronArray has no ndarray subclasses to view as; "
                "use np.asarray(x).view(...) for NumPy's"
            )
        if dtype is None:
            return self[...]
        return self._viewed(_dtypes.to_dtype(dtype, "x.view() dtype"))

    def _viewed(self, target: torch.dtype) -> NeuronArray:
        t = self._t
        old, new = t.element_size(), torch.empty((), dtype=target).element_size()
        what = f"x.view({_dtypes.name(target)}) of a {_dtypes.name(t.dtype)} array of shape {tuple(t.shape)}"
        if old != new:
            if t.dim() == 0:
                raise ValueError(f"{what}: a 0-d array cannot change its item size ({old} -> {new} bytes), as in NumPy")
            if t.stride(-1) != 1 and t.shape[-1] != 1 or t.shape[-1] * old % new:
                raise ValueError(
                    f"{what}: a new item size ({old} -> {new} bytes) needs a contiguous last axis "
                    f"whose {t.shape[-1] * old} bytes are a multiple of {new} (strides "
                    f"{self.strides}), as in NumPy"
                )
        try:
            # torch's dtype view of an inference tensor is not one: a read-only x gives a read-only view
            v = t.view(target)
            return wrap(readonly(v) if t.is_inference() else v)
        except RuntimeError as e:  # torch's own limits beyond NumPy's (the offset's alignment to the new size)
            raise ValueError(f"{what}: torch cannot view this memory so ({e}); view a copy instead") from None

    def to_torch(self) -> torch.Tensor:
        """The torch.Tensor this array holds, not a copy: writes through either are seen by the other
        (``trn_backend.from_torch`` goes the other way)."""
        return self._t

    def to_device(self, device: Any, /, *, stream: int | Any | None = None) -> NeuronArray:
        if stream is not None:
            raise ValueError("to_device(): stream is not supported (torch synchronizes device copies itself)")
        return wrap(self._t.to(_device.normalize(device, "to_device")))

    # --- protocols ---
    def __array_namespace__(self, /, *, api_version: str | None = None):
        if api_version is not None and api_version not in SUPPORTED_API_VERSIONS:
            raise ValueError(
                f"unsupported array API version {api_version!r}; supported: {', '.join(SUPPORTED_API_VERSIONS)}"
            )
        return PROTOCOLS["namespace"]

    def __dlpack__(
        self,
        /,
        *,
        stream: Any = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[enum.Enum, int] | None = None,
        copy: bool | None = None,
    ) -> Any:
        """DLPack export, by torch. A read-only x exports DLPack 1.0's read-only flag where the consumer asks
        for DLPack 1.0 or later (``max_version``); an older consumer cannot be told, so it gets a copy, which
        ``copy=False`` refuses (BufferError). A lazy conjugate (torch's ``conj()`` view) exports its values, a
        copy, which ``copy=False`` refuses too."""
        kwargs: dict[str, Any] = {"max_version": max_version, "dl_device": dl_device, "copy": copy}
        if stream is not None:
            kwargs["stream"] = stream
        t = self._t.detach()
        if t.is_conj() or t.is_neg():
            if copy is False:
                raise BufferError(
                    "__dlpack__(copy=False): x is a lazy conjugate view (torch's conj()), whose "
                    "values DLPack cannot describe without a copy; export with copy=None or True"
                )
            return t.resolve_conj().resolve_neg().__dlpack__(**kwargs)
        if not t.is_inference() or copy:  # writeable, or a copy the consumer may write
            return t.__dlpack__(**kwargs)
        if max_version is None or tuple(max_version) < (1, 0):
            if copy is False:
                raise BufferError(
                    "__dlpack__(copy=False): x is read-only, and a consumer of a DLPack version "
                    f"before 1.0 (max_version={max_version}) cannot be told so; ask for DLPack 1.0 "
                    "(max_version=(1, 0)) or allow a copy (copy=None)"
                )
            kwargs["copy"] = True
            return t.__dlpack__(**kwargs)
        return _read_only_capsule(t.__dlpack__(**kwargs))

    def __dlpack_device__(self) -> tuple[enum.Enum, int]:
        return self._t.__dlpack_device__()

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        """NumPy 2 conversion. A CPU array converts without a copy; a device array copies to the host, which
        ``copy=False`` refuses with a ValueError."""
        t = self._t.detach()
        shared = True  # whether the ndarray is x's memory (then read-only where x is)
        if t.device.type != "cpu":
            if copy is False:
                raise ValueError(
                    f"np.asarray(x, copy=False): x lives on {t.device}; converting it to NumPy copies it to the host"
                )
            t, shared = t.cpu(), False
        elif t.is_conj() or t.is_neg():
            # torch's lazy conjugate/negative views have no NumPy equivalent: they must be materialized. Unless
            # a copy was asked for, the copy is read-only: a write meant for x is refused rather than lost
            if copy is False:
                raise ValueError("np.asarray(x, copy=False): x is a lazy conjugate view; converting it copies")
            t, shared = t.resolve_conj().resolve_neg(), not copy
        elif copy:
            t, shared = t.clone(), False
        # torch's numpy() lacks bfloat16: share the bits as ml_dtypes' bfloat16
        out = t.view(torch.uint16).numpy().view(_dtypes.PUBLIC[t.dtype]) if t.dtype is _dtypes.bfloat16 else t.numpy()
        if shared and (t.is_inference() or self._t.is_conj() or self._t.is_neg()):
            out.flags.writeable = False  # NumPy refuses writes into a read-only x's memory, as x does
        if dtype is not None and np.dtype(dtype) != out.dtype:
            if copy is False:
                raise ValueError(
                    f"np.asarray(x, dtype={np.dtype(dtype)}, copy=False) needs a copy to convert from {out.dtype}"
                )
            out = out.astype(dtype)
        return out

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        """NEP 18: NumPy functions on NeuronArrays run on this namespace (see trn_backend.numpy_dispatch).
        NEP 35: NumPy passes ``np.zeros(3, like=x)`` here without ``like``; it goes back in, so the result lands
        on x's device."""
        if func in PROTOCOLS["like"]:
            kwargs = {**kwargs, "like": self}
        return PROTOCOLS["array_function"](func, types, args, kwargs)

    def _numpy_method(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """ndarray's method of the NumPy function ``func`` (``x.sum(...)``) on this array, through the dispatch
        table without NumPy's own dispatch (see trn_backend._ndarray)."""
        return PROTOCOLS["method"](func, self, args, kwargs)

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """NEP 13: NumPy ufuncs on NeuronArrays run on this namespace (see trn_backend.numpy_dispatch)."""
        return PROTOCOLS["array_ufunc"](ufunc, method, inputs, kwargs)

    # --- Python conversions ---
    def _scalar(self, kind: str) -> Any:
        if self._t.numel() != 1:
            raise TypeError(f"{kind}() needs an array with exactly one element, got shape {self.shape}")
        if self._t.dim() and kind in _ZERO_D_CONVERSIONS:
            # NumPy 2 and the standard convert only 0-d arrays to numbers (x.item() and bool() take any size-1 array)
            raise TypeError(
                f"{kind}() needs a 0-dimensional array, got shape {self.shape}: only 0-d arrays convert "
                "to Python scalars (as in NumPy); use x.item() or x.reshape(())"
            )
        if self._t.dtype in _dtypes.COMPUTE:
            return _unsigned_item(self._t)
        return self._t.item()

    def item(self, *args: Any) -> Any:
        """ndarray.item: the one element, the element at a flat index, or at a multi-index, as a Python scalar."""
        if len(args) == 1 and isinstance(args[0], tuple):
            args = args[0]
        if not args:
            return self._scalar("item")
        element = wrap(self._t.reshape(-1))[args[0]] if len(args) == 1 else self[args]
        return element._scalar("item")

    def __bool__(self) -> bool:
        if self._t.numel() != 1:  # NumPy's ValueError (an ambiguous truth value), for an empty array too
            raise ValueError(
                f"bool() of an array of shape {self.shape} is ambiguous: it needs exactly one element; "
                "use xp.any(x) or xp.all(x)"
            )
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
        # numpy.round runs NeuronArray's __array_function__ (NEP 18), which answers a NeuronArray
        return cast(NeuronArray, np.round(self, ndigits))

    def __format__(self, spec: str) -> str:
        """A 0-d array formats as its value (``f"{x:.6f}"``), as NumPy's; other arrays take only an empty spec."""
        if self._t.dim() == 0:
            return format(self._scalar("format"), spec)
        if spec:
            raise TypeError(
                f"unsupported format string {spec!r} for a NeuronArray of shape {self.shape}; only "
                "0-d arrays take a format spec"
            )
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
        # the commonest keys of a plain tensor, checked inline (a call per check would cost a third of torch's
        # own view): a slice of positive step, an int, an Ellipsis, a tuple of ints and such slices. torch's
        # basic indexing is NumPy's there (``simple``), bounds errors included; the result wraps inline
        kind = type(key)
        if kind is slice:
            step = key.step
            if (
                (step is None or type(step) is int and step > 0)
                and type(key.start) in _INT_OR_NONE
                and type(key.stop) in _INT_OR_NONE
                and type(t) is _TENSOR
            ):
                view = _new(NeuronArray)
                view._t = t[key]  # a view, never one element
                return view
        elif key is Ellipsis:
            if type(t) is _TENSOR:
                view = _new(NeuronArray)
                view._t = t[key]  # a view (of a 0-d array too: not one element read)
                return view
        elif type(t) is _TENSOR and (kind is int or kind is tuple and ints_and_slices(key)):
            r = t[key]
            view = _new(NeuronArray)
            view._t = r.clone() if r.dim() == 0 else r  # one element (an int for every dimension): a copy (below)
            return view
        if simple(key):  # torch's basic indexing is NumPy's there: a view, for every dtype
            r = t[key]
            kind = type(key)
            if kind is not int and kind is not tuple:  # a slice, None or Ellipsis: never one element
                return wrap(r)
        else:
            p = _indexing.plan(movable(t), _tensor_key(key))
            if p.flips and not p.indices and type(t) is torch.Tensor:
                # NumPy's negative steps make a view; torch has no negative strides: one that remembers them
                return _reversed(_retyped(p.view, t.dtype), p.flips)
            r = _retyped(p.result(), t.dtype)
        # NumPy reads one element (an integer for every dimension, no Ellipsis) as a scalar, a copy: the swap
        # x[0], x[1] = x[1], x[0] must not see the first write in its second value
        return wrap(r.clone() if r.dim() == 0 and not has_ellipsis(key) else r)

    def __setitem__(self, key: Any, value: Any) -> None:
        t = self._t
        if t.is_inference():  # checked first: torch refuses a write into an inference tensor only after it
            raise ValueError(read_only_message("x[key] = value"))
        if isinstance(value, NeuronArray):
            if value._t.device != t.device:
                raise ValueError(f"x[...] = value: value is on {value._t.device}, x on {t.device}")
            v = unaliased(_indexing.assigned(value._t, t.dtype), t)
        elif isinstance(value, np.generic) and value.dtype in _dtypes.TORCH_OF_PUBLIC:
            # a NumPy scalar is a strong 0-d array (NEP 50): cast as an array value is (np.int64(-3) into uint8
            # stores 253), not range-checked as a Python number
            v = _indexing.assigned(_dtypes.host_scalar(value).to(t.device), t.dtype)
        else:
            v = _indexing.setitem_scalar(value, t)
        try:
            _indexing.setitem(movable(t), _tensor_key(key), movable(v))
        except RuntimeError:
            _check_writable(t, "x[key] = value")
            raise

    def _write(self, r: torch.Tensor, operation: str) -> None:
        """Overwrite every element with ``r`` (of x's shape and dtype): the in-place operators' and ``out=``'s
        one way to write a whole array (a view with negative steps writes into its base)."""
        t = self._t
        if t.is_inference():  # before the write: torch refuses one into an inference tensor only after it
            raise ValueError(read_only_message(operation))
        try:
            t.copy_(unaliased(r, t))  # r may be a view of x
        except RuntimeError:
            _check_writable(t, operation)
            raise

    # --- operators: each calls the namespace's public function of the same meaning (``OPERATORS``); an operand
    # of another type is NotImplemented, or a TypeError for a torch.Tensor (``_foreign``) ---

    def __add__(self, other: Any, /) -> NeuronArray:
        if not isinstance(other, _OPERANDS):
            return _foreign("add", other)
        return OPERATORS["add"](self, other)

    def __radd__(self, other: Any, /) -> NeuronArray:
        if not isinstance(other, _OPERANDS):
            return _foreign("add", other)
        return OPERATORS["add"](other, self)

    def __iadd__(self, other: Any, /) -> NeuronArray:
        return _inplace(self, other, "add")

    def __sub__(self, other: Any, /) -> NeuronArray:
        if not isinstance(other, _OPERANDS):
            return _foreign("subtract", other)
        return OPERATORS["subtract"](self, other)

    def __rsub__(self, other: Any, /) -> NeuronArray:
        if not isinstance(other, _OPERANDS):
            return _foreign("subtract", other)
        return OPERATORS["subtract"](other, self)

    def __isub__(self, other: Any, /) -> NeuronArray:
        return _inplace(self, other, "subtract")

    def __mul__(self, other: Any, /) -> NeuronArray:
        if not isinstance(other, _OPERANDS):
            return _foreign("multiply", other)
        return OPERATORS["multiply"](self, other)

    def __rmul__(self, other: Any, /) -> NeuronArray:
        if not isinstance(other, _OPERANDS):
            return _foreign("multiply", other)
        return OPERATORS["multiply"](other, self)

    def __imul__(self, other: Any, /) -> NeuronArray:
        return _inplace(self, other, "multiply")

    def __truediv__(self, other: Any, /) -> NeuronArray:
        if not isinstance(other, _OPERANDS):
            return _foreign("divide", other)
        return OPERATORS["divide"](self, other)

    def __rtruediv__(self, other: Any, /) -> NeuronArray:
        if not isinstance(other, _OPERANDS):
            return _foreign("divide", other)
        return OPERATORS["divide"](other, self)

    def __itruediv__(self, other: Any, /) -> NeuronArray:
        return _inplace(self, other, "divide")

    def __floordiv__(self, other: Any, /) -> NeuronArray:
        if not isinstance(other, _OPERANDS):
            return _foreign("floor_divide", other)
        return OPERATORS["floor_divide"](self, other)

    def __rfloordiv__(self, other: Any, /) -> NeuronArray:
        if not isinstance(other, _OPERANDS):
            return _foreign("floor_divide", other)
        return OPERATORS["floor_divide"](other, self)

    def __ifloordiv__(self, other: Any, /) -> NeuronArray:
        return _inplace(self, other, "floor_divide")

    def __mod__(self, other: Any, /) -> NeuronArray:
        if not isinstance(other, _OPERANDS):
            return _foreign("remainder", other)
        return OPERATORS["remainder"](self, other)

    def __rmod__(self, other: Any, /) -> NeuronArray:
        if not isinstance(other, _OPERANDS):
            return _foreign("remainder", other)
        return OPERATORS["remainder"](other, self)

    def __imod__(self, other: Any, /) -> NeuronArray:
        return _inplace(self, other, "remainder")

    def __pow__(self, other: Any, /) -> NeuronArray:
        if not isinstance(other, _OPERANDS):
            return _foreign("pow", other)
        return OPERATORS["pow"](self, other)

    def __rpow__(self, other: Any, /) -> NeuronArray:
        if not isinstance(other, _OPERANDS):
            return _foreign("pow", other)
        return OPERATORS["pow"](other, self)

    def __ipow__(self, other: Any, /) -> NeuronArray:
        return _inplace(self, other, "pow")

    def __and__(self, other: Any, /) -> NeuronArray:
        if not isinstance(other, _OPERANDS):
            return _foreign("bitwise_and", other)
        return OPERATORS["bitwise_and"](self, other)

    def __rand__(self, other: Any, /) -> NeuronArray:
        if not isinstance(other, _OPERANDS):
            return _foreign("bitwise_and", other)
        return OPERATORS["bitwise_and"](other, self)

    def __iand__(self, other: Any, /) -> NeuronArray:
        return _inplace(self, other, "bitwise_and")

    def __or__(self, other: Any, /) -> NeuronArray:
        if not isinstance(other, _OPERANDS):
            return _foreign("bitwise_or", other)
        return OPERATORS["bitwise_or"](self, other)

    def __ror__(self, other: Any, /) -> NeuronArray:
        if not isinstance(other, _OPERANDS):
            return _foreign("bitwise_or", other)
        return OPERATORS["bitwise_or"](other, self)

    def __ior__(self, other: Any, /) -> NeuronArray:
        return _inplace(self, other, "bitwise_or")

    def __xor__(self, other: Any, /) -> NeuronArray:
        if not isinstance(other, _OPERANDS):
            return _foreign("bitwise_xor", other)
        return OPERATORS["bitwise_xor"](self, other)

    def __rxor__(self, other: Any, /) -> NeuronArray:
        if not isinstance(other, _OPERANDS):
            return _foreign("bitwise_xor", other)
        return OPERATORS["bitwise_xor"](other, self)

    def __ixor__(self, other: Any, /) -> NeuronArray:
        return _inplace(self, other, "bitwise_xor")

    def __lshift__(self, other: Any, /) -> NeuronArray:
        if not isinstance(other, _OPERANDS):
            return _foreign("bitwise_left_shift", other)
        return OPERATORS["bitwise_left_shift"](self, other)

    def __rlshift__(self, other: Any, /) -> NeuronArray:
        if not isinstance(other, _OPERANDS):
            return _foreign("bitwise_left_shift", other)
        return OPERATORS["bitwise_left_shift"](other, self)

    def __ilshift__(self, other: Any, /) -> NeuronArray:
        return _inplace(self, other, "bitwise_left_shift")

    def __rshift__(self, other: Any, /) -> NeuronArray:
        if not isinstance(other, _OPERANDS):
            return _foreign("bitwise_right_shift", other)
        return OPERATORS["bitwise_right_shift"](self, other)

    def __rrshift__(self, other: Any, /) -> NeuronArray:
        if not isinstance(other, _OPERANDS):
            return _foreign("bitwise_right_shift", other)
        return OPERATORS["bitwise_right_shift"](other, self)

    def __irshift__(self, other: Any, /) -> NeuronArray:
        return _inplace(self, other, "bitwise_right_shift")

    def __matmul__(self, other: Any, /) -> NeuronArray:
        if not isinstance(other, _OPERANDS):
            return _foreign("matmul", other)
        return OPERATORS["matmul"](self, other)

    def __rmatmul__(self, other: Any, /) -> NeuronArray:
        if not isinstance(other, _OPERANDS):
            return _foreign("matmul", other)
        return OPERATORS["matmul"](other, self)

    def __imatmul__(self, other: Any, /) -> NeuronArray:
        return _inplace(self, other, "matmul")

    def __lt__(self, other: Any, /) -> NeuronArray:
        if not isinstance(other, _OPERANDS):
            return _foreign("less", other)
        return OPERATORS["less"](self, other)

    def __le__(self, other: Any, /) -> NeuronArray:
        if not isinstance(other, _OPERANDS):
            return _foreign("less_equal", other)
        return OPERATORS["less_equal"](self, other)

    def __gt__(self, other: Any, /) -> NeuronArray:
        if not isinstance(other, _OPERANDS):
            return _foreign("greater", other)
        return OPERATORS["greater"](self, other)

    def __ge__(self, other: Any, /) -> NeuronArray:
        if not isinstance(other, _OPERANDS):
            return _foreign("greater_equal", other)
        return OPERATORS["greater_equal"](self, other)

    def __eq__(self, other: Any, /) -> NeuronArray:  # type: ignore[override]
        if not isinstance(other, _OPERANDS):
            return _foreign("equal", other)
        return OPERATORS["equal"](self, other)

    def __ne__(self, other: Any, /) -> NeuronArray:  # type: ignore[override]
        if not isinstance(other, _OPERANDS):
            return _foreign("not_equal", other)
        return OPERATORS["not_equal"](self, other)

    def __neg__(self, /) -> NeuronArray:
        return OPERATORS["negative"](self)

    def __pos__(self, /) -> NeuronArray:
        return OPERATORS["positive"](self)

    def __abs__(self, /) -> NeuronArray:
        return OPERATORS["abs"](self)

    def __invert__(self, /) -> NeuronArray:
        return OPERATORS["bitwise_invert"](self)

    # --- dask (its chunk functions also call NumPy's ndarray methods: see _ndarray) ---
    __array_priority__ = 1.0  # dask's tensordot takes its function from the operand type ranked highest; ndarray 0

    def __dask_tokenize__(self) -> tuple[Any, ...]:
        """dask's deterministic token: device, dtype, shape and a hash of the values in C order, as dask hashes
        an ndarray (no pickle). A contiguous CPU array is hashed in place. A device array is not copied to the
        host to be hashed: its token is its memory (address, shape, strides, dtype) and torch's version counter,
        which every in-place write bumps, so equal tokens mean the same unchanged data within this process.
        (C order: dask hashes an ndarray's memory order, so a transposed view and a reshape with the same memory
        and shape would share a token.)"""
        PROTOCOLS["register_dask"]()  # dask is in use: its chunk dispatch needs NeuronArray
        t = self._t
        if not t.is_cpu:
            # an inference (read-only) tensor has no version counter; the memory may still change through a
            # writeable array over it, so its token is not reused: id() of this call's tensor
            version = ("inference", id(t)) if t.is_inference() else t._version
            return (
                "trn_backend.NeuronArray",
                str(t.device),
                t.data_ptr(),
                tuple(t.shape),
                t.stride(),
                str(t.dtype),
                version,
            )
        from dask.base import normalize_token  # only dask calls this

        host = np.asarray(self)
        host = host if host.flags.c_contiguous else host.copy(order="C")
        return "trn_backend.NeuronArray", str(t.device), normalize_token(host)


builtin_bool = bool


def _check_writable(t: torch.Tensor, operation: str) -> None:
    """After torch refused a write into ``t``: NumPy's ValueError where the reason is that ``t`` is read-only
    (an inference tensor, see ``_indexing.readonly``). torch refuses such a write only after making it, so
    every write route checks ``is_inference()`` before writing; this is the net behind those checks."""
    if t.is_inference():
        raise ValueError(read_only_message(operation)) from None


def read_only_message(operation: str, what: str = "x") -> str:
    """NumPy's words for a write into a read-only array, with the operation and the reasons it can be so."""
    return (
        f"{operation}: assignment destination is read-only ({what}.flags.writeable is False: {what} is a "
        "read-only view such as np.broadcast_to's or np.diagonal's result, the .imag of a real array, a view "
        "of a read-only array or one made read-only by x.flags.writeable = False, or the copy that a function "
        "which cannot view it gives of a view with negative steps (x[::-1]); write into a copy instead: "
        "xp.asarray(x, copy=True))"
    )


_READ_ONLY = 1  # DLPack 1.0: DLPACK_FLAG_BITMASK_READ_ONLY in DLManagedTensorVersioned.flags


def capsule_pointer(capsule: Any) -> tuple[str, int]:
    """A DLPack capsule's name ("dltensor_versioned" for DLPack 1.0 and later, "dltensor" before) and the
    address of the structure it holds (DLManagedTensorVersioned or DLManagedTensor)."""
    import ctypes  # only DLPack's capsules need it

    api = ctypes.pythonapi
    api.PyCapsule_GetName.restype, api.PyCapsule_GetName.argtypes = ctypes.c_char_p, [ctypes.py_object]
    api.PyCapsule_GetPointer.restype = ctypes.c_void_p
    api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    name = api.PyCapsule_GetName(capsule)
    if name not in (b"dltensor", b"dltensor_versioned"):
        raise BufferError(f"not a DLPack capsule, or one already consumed (named {name!r})")
    return name.decode(), api.PyCapsule_GetPointer(capsule, name)


def _read_only_capsule(capsule: Any) -> Any:
    """A DLPack 1.0 capsule from torch with its read-only flag set. DLManagedTensorVersioned begins with the
    version (two uint32), manager_ctx and deleter (two pointers), then the uint64 flags: at byte 24 on every
    64-bit platform. torch sets no flag itself. A capsule of an older version cannot say read-only: an error."""
    import ctypes

    name, address = capsule_pointer(capsule)
    if name != "dltensor_versioned":
        raise BufferError(
            "__dlpack__: x is read-only and torch exported a DLPack capsule without flags; export a copy (copy=True)"
        )
    flags = ctypes.c_uint64.from_address(address + 24)
    flags.value |= _READ_ONLY
    return capsule


# The Python conversions NumPy 2 allows only on 0-d arrays (int(), float(), complex(), operator.index(), round()).
_ZERO_D_CONVERSIONS = frozenset({"int", "float", "complex", "index", "round"})


def _unsigned_item(t: torch.Tensor) -> int:
    v = int(_dtypes.compute(t).item())
    return v + 2**64 if v < 0 and t.dtype is _dtypes.uint64 else v


def _retyped(v: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``v`` (a ``movable`` view) as ``dtype`` again, read-only where v is: torch's dtype view of an inference
    tensor is not one."""
    if v.dtype is dtype:
        return v
    r = v.view(dtype)
    return readonly(r) if v.is_inference() else r


def _tensor_key(key: Any) -> Any:
    """The key with its NeuronArray entries as their tensors: the indexing engine works on tensors."""
    if isinstance(key, NeuronArray):
        return key._t
    if isinstance(key, tuple) and any(isinstance(k, NeuronArray) for k in key):
        return tuple(k._t if isinstance(k, NeuronArray) else k for k in key)
    return key


# --- operators ---

_OPERANDS = (NeuronArray, builtin_bool, int, float, complex, np.generic)


def _foreign(fname: str, other: Any) -> Any:
    """An operand of another type: NotImplemented (Python then asks the other operand), except a torch.Tensor,
    which would leave Python's bare "unsupported operand" (or, for ==, a silent False): a TypeError saying what
    to write instead."""
    if isinstance(other, torch.Tensor):
        raise TypeError(
            f"{fname}: a NeuronArray does not combine with a torch.Tensor; wrap the tensor first with "
            "trn_backend.asarray(t), which shares its memory (no copy)"
        )
    return NotImplemented


def _inplace(x: NeuronArray, other: Any, fname: str) -> NeuronArray:
    """``x op= other``: the fast path where it applies, else the namespace's function and its result written
    into x, cast back to x's dtype within its kind (NumPy's rule)."""
    func = OPERATORS[fname]
    # exact type: the in-place operators of a registered subclass (sharded arrays) take the general path
    if type(x) is NeuronArray:
        # read-only first, as NumPy: before the operands' dtypes are looked at (``_check_writeable``, inline)
        if x._t.is_inference():
            raise ValueError(read_only_message(f"in-place {fname}"))
        fast = _INPLACE_FAST.get(fname)
        if (
            fast is not None
            and fast[0] is getattr(func, "__wrapped__", func)
            and not (OVERRIDES and handler((x, other), {}))
        ):
            try:
                if fast[1](x._t, other):
                    return x
            except RuntimeError:
                _check_writable(x._t, f"in-place {fname}")
                raise
    else:
        x._check_writeable(f"in-place {fname}")
    if not isinstance(other, _OPERANDS):
        return _foreign(fname, other)
    dtype = x._t.dtype
    try:
        result = func(x, other)
    except ValueError:
        # NumPy refuses a result x cannot store before computing it (bool_x **= -1 is that TypeError, not
        # the negative power's ValueError)
        _check_stored(_dtypes.to_dtype(OPERATORS["result_type"](x, other)), dtype, fname)
        raise
    r = result._t
    if r.dtype is not dtype:  # NumPy's rule: the result casts back to x's dtype within its kind
        _check_stored(r.dtype, dtype, fname)
        r = _dtypes.cast(r, dtype)
    if result.shape != x.shape:
        raise ValueError(
            f"in-place {fname} would change the shape of x from {x.shape} to "
            f"{result.shape}; in-place operands must broadcast to x's shape"
        )
    x._write(r, f"in-place {fname}")
    return x


def _check_stored(result: torch.dtype, dtype: torch.dtype, fname: str) -> None:
    """TypeError unless x of ``dtype`` may store an in-place result of dtype ``result`` (NumPy's same_kind)."""
    if result is not dtype and not _dtypes.same_kind(result, dtype):
        raise TypeError(
            f"in-place {fname}: the {_dtypes.name(result)} result cannot be stored in x of dtype "
            f"{_dtypes.name(dtype)} under NumPy's same_kind casting; use x = {fname}(x, y) instead"
        )


# --- views with negative steps ---


class _ReversedView(NeuronArray):
    """NumPy's view with negative strides (``x[::-1]``), which torch lacks: ``_base``, a view of x's memory with
    positive strides, read reversed along the dimensions ``_dims``. ``_t`` flips the base afresh at each read, so
    reads see every later write into x; writes go into the base, their key mirrored (``_indexing.mirrored``)."""

    __slots__ = ("_base", "_dims")
    _base: torch.Tensor
    _dims: tuple[int, ...]

    @property
    def _t(self) -> torch.Tensor:  # type: ignore[override]
        # an inference tensor: torch refuses in-place writes into it, so a write that reaches this copy (through
        # a view a function made of it, as reshape does) raises rather than being lost
        with torch.inference_mode():
            return _indexing.flipped(self._base, self._dims)

    def _writeable(self) -> bool:
        return not self._base.is_inference()

    def _memory_name(self) -> str:
        return "_base"

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
        return self._moved(NeuronArray.T.fget(wrap(self._base)), [1, 0])  # type: ignore[attr-defined]  # a property

    @property
    def mT(self) -> NeuronArray:
        order = list(range(self._base.dim()))
        order[-2:] = order[:-3:-1]
        return self._moved(NeuronArray.mT.fget(wrap(self._base)), order)  # type: ignore[attr-defined]  # a property

    def _part(self, which: str) -> NeuronArray:
        return _reversed(getattr(self._base, which), self._dims)

    @property
    def itemsize(self) -> int:  # the base's, without the copy that _t makes
        return self._base.element_size()

    @property
    def nbytes(self) -> int:
        return self._base.element_size() * self._base.numel()

    @property
    def strides(self) -> tuple[int, ...]:
        size = self._base.element_size()
        return tuple(-s * size if d in self._dims else s * size for d, s in enumerate(self._base.stride()))

    def _viewed(self, target: torch.dtype) -> NeuronArray:
        if (
            self._base.element_size() != torch.empty((), dtype=target).element_size()
            and self._base.dim() - 1 in self._dims
        ):
            raise ValueError(
                f"x.view({_dtypes.name(target)}): a new item size needs a contiguous last axis, and "
                "x's runs backwards (a negative step), as in NumPy"
            )
        return _reversed(wrap(self._base)._viewed(target)._t, self._dims)

    def to_torch(self) -> torch.Tensor:
        raise ValueError(
            "x.to_torch() of a view with negative steps (x[::-1]): torch has no negative strides, "
            "so no tensor shares this view's memory; take a copy, xp.asarray(x, copy=True).to_torch(), "
            "or the tensor of the array it views"
        )

    def _moved(self, base: NeuronArray, order: list[int]) -> NeuronArray:
        """This view with its dimensions in ``order``, given ``base``: the base's dimensions in that order."""
        return _reversed(base._t, tuple(sorted(order.index(d) for d in self._dims)))

    def __getitem__(self, key: Any) -> NeuronArray:
        return NeuronArray.__getitem__(wrap(self._base), _indexing.mirrored(_tensor_key(key), self._base, self._dims))

    def __setitem__(self, key: Any, value: Any) -> None:
        NeuronArray.__setitem__(wrap(self._base), _indexing.mirrored(_tensor_key(key), self._base, self._dims), value)

    def _write(self, r: torch.Tensor, operation: str) -> None:
        if self._base.is_inference():
            raise ValueError(read_only_message(operation))
        self._base.copy_(_indexing.flipped(r, self._dims))  # a copy: r may be read from the base

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        """NumPy's own view with negative strides of the base's array (which is a copy only off the host)."""
        a = wrap(self._base).__array__(dtype, copy)
        return a[tuple(slice(None, None, -1) if d in self._dims else slice(None) for d in range(a.ndim))]

    def __dlpack__(self, /, **kwargs: Any) -> Any:
        if kwargs.get("copy") is False:
            raise BufferError(
                "__dlpack__(copy=False) of a view with negative steps: DLPack consumers (torch) "
                "take no negative strides; export a copy (copy=None or True) or the base array"
            )
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


class Flags:
    """``x.flags``: NumPy's flagsobj for a NeuronArray, read by attribute (``x.flags.writeable``) or by NumPy's
    names (``x.flags["WRITEABLE"]``, ``x.flags["W"]``).

    Read-only arrays: ``x.flags.writeable = False`` makes x refuse every write (indexing, in-place operators,
    ``out=``, ``fill``, ``.flat``, NumPy's functions through the host views, which are read-only ndarrays, and
    DLPack consumers that read DLPack 1.0's read-only flag), with NumPy's ValueError "assignment destination is
    read-only"; views of a read-only array are read-only. ``np.broadcast_to`` and ``np.diagonal`` return read-only
    views, and the ``.imag`` of a real array is read-only, as in NumPy. Setting ``writeable = True`` again is
    allowed where x was made read-only by a flag or is such a view (as NumPy allows it), and a ValueError where
    x's memory itself is read-only (a view of a read-only array, a real array's ``.imag``).

    The mechanism: a read-only array holds a torch inference tensor over the same memory (views of it are
    inference tensors too), and every write route of this package checks for one before writing. torch itself
    does not protect that memory: its own in-place operations on ``x.to_torch()`` raise only after writing, and
    inside the caller's own ``torch.inference_mode()`` block not at all; DLPack consumers that ignore DLPack
    1.0's read-only flag (torch does) can write too. A sharded array keeps its own read-only mark instead (the
    writes it refuses are the same)."""

    __slots__ = ("_x",)

    _NAMES = {
        "WRITEABLE": "writeable",
        "W": "writeable",
        "C_CONTIGUOUS": "c_contiguous",
        "C": "c_contiguous",
        "CONTIGUOUS": "c_contiguous",
        "F_CONTIGUOUS": "f_contiguous",
        "F": "f_contiguous",
        "FORTRAN": "f_contiguous",
        "OWNDATA": "owndata",
        "O": "owndata",
        "ALIGNED": "aligned",
        "A": "aligned",
        "WRITEBACKIFCOPY": "writebackifcopy",
        "X": "writebackifcopy",
    }

    def __init__(self, x: NeuronArray) -> None:
        self._x = x

    @property
    def writeable(self) -> bool:
        return self._x._writeable()

    @writeable.setter
    def writeable(self, value: Any) -> None:
        self._x._set_writeable_flag(builtin_bool(value))

    @property
    def c_contiguous(self) -> bool:
        _, shape, strides, _ = _layout(self._x)
        return _contiguous(shape, strides)

    @property
    def f_contiguous(self) -> bool:
        _, shape, strides, _ = _layout(self._x)
        return _contiguous(shape[::-1], strides[::-1])

    @property
    def owndata(self) -> bool:
        """Whether x is the whole of its memory, not a view of other memory (torch's notion of a base)."""
        t = self._x._t if type(self._x) is not _ReversedView else None
        if t is None or type(t) is not _TENSOR or t._base is not None or t.storage_offset() or not t.is_contiguous():
            return False
        return t.untyped_storage().nbytes() == t.numel() * t.element_size()

    @property
    def aligned(self) -> bool:
        return True  # torch aligns its allocations and views keep whole elements

    @property
    def writebackifcopy(self) -> bool:
        return False

    def _name(self, key: Any) -> str:
        name = self._NAMES.get(key) if isinstance(key, str) else None
        if name is None:
            raise KeyError(f"x.flags[{key!r}]: unknown flag; known: {', '.join(self._NAMES)}")
        return name

    def __getitem__(self, key: str) -> bool:
        return getattr(self, self._name(key))

    def __setitem__(self, key: str, value: Any) -> None:
        if self._name(key) != "writeable":
            raise ValueError(f"x.flags[{key!r}] = ...: only the WRITEABLE flag of a NeuronArray can be set")
        self.writeable = value

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Flags):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in set(self._NAMES.values()))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        names = ("C_CONTIGUOUS", "F_CONTIGUOUS", "OWNDATA", "WRITEABLE", "ALIGNED", "WRITEBACKIFCOPY")
        return "".join(f"  {n} : {self[n]}\n" for n in names)


def _contiguous(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """NumPy's C-contiguity (strides in elements): axes of length 1 do not count, an empty array is."""
    if 0 in shape:
        return True
    expected = 1
    for n, s in zip(reversed(shape), reversed(strides), strict=True):
        if n != 1:
            if s != expected:
                return False
            expected *= n
    return True


def _set_writeable(x: NeuronArray, value: bool) -> None:
    """``x.flags.writeable = value`` (see ``Flags``): x's tensor swapped for a read-only one over the same
    memory, the writeable one kept in ``x._w`` to be swapped back."""
    name = x._memory_name()
    t = getattr(x, name)
    if type(t) is not _TENSOR:
        raise ValueError(
            f"x.flags.writeable = {value}: the writeable flag of a {type(x).__name__} (a "
            f"{type(t).__name__}) cannot be changed"
        )
    if not value:
        if not t.is_inference():
            x._w = t
            setattr(x, name, readonly(t))
        return
    if not t.is_inference():
        return
    w = getattr(x, "_w", None)
    if w is None:
        raise ValueError(
            "x.flags.writeable = True: cannot set WRITEABLE flag to True of this array: its memory "
            "is read-only (a view of a read-only array, or the .imag of a real array), as in NumPy"
        )
    setattr(x, name, w)
    x._w = None


def readonly_view(x: NeuronArray, why: str) -> NeuronArray:
    """``x`` made read-only by its flag, so that ``x.flags.writeable = True`` may undo it, as NumPy allows for
    its read-only views of writeable memory (np.broadcast_to's, np.diagonal's); returned for chaining. An array
    whose flag cannot be set (a sharded one) refuses writes in its own way, saying ``why``."""
    x._set_read_only(why)
    return x


# --- views as NumPy makes them: NumPy's own layout arithmetic on x's shape and strides ---


def _layout(x: NeuronArray) -> tuple[torch.Tensor, tuple[int, ...], tuple[int, ...], int]:
    """x's memory as NumPy lays it out: the tensor over it, the shape, the strides in elements (negative along
    an axis of a view with negative steps), and the storage offset of the element at index (0, ..., 0)."""
    if type(x) is _ReversedView:
        t, dims = x._base, x._dims
    else:
        t, dims = x._t, ()
    stride = t.stride()
    strides = tuple(-s if d in dims else s for d, s in enumerate(stride))
    offset = (t.storage_offset() if type(t) is _TENSOR else 0) + sum(
        (t.shape[d] - 1) * stride[d] for d in dims if t.shape[d] > 0
    )
    return t, tuple(t.shape), strides, offset  # type: ignore[return-value]  # storage_offset(): SymInt only if traced


def viewable(x: Any) -> bool:
    """Whether ``numpy_view`` can view x: a NeuronArray over a plain torch tensor (not a sharded one), or a view
    with negative steps."""
    return type(x) is _ReversedView or (type(x) is NeuronArray and type(x._t) is _TENSOR)


def numpy_view(x: NeuronArray, op: Callable[[np.ndarray], np.ndarray]) -> NeuronArray:
    """The view ``op`` (a NumPy function returning a view: np.flip, np.rot90, np.diagonal, np.reshape with
    copy=False, ...) makes of an ndarray laid out as x, over x's memory: NumPy's own layout rules, negative
    strides included (a ``_ReversedView`` where there are some). ``op`` runs on a one-byte stand-in with x's
    shape and strides counted in elements: no element is read, and NumPy's errors (a copy it cannot avoid, a
    bad axis) are raised as they are. x holds a plain tensor (callers check)."""
    t, shape, strides, offset = _layout(x)
    stand_in = np.lib.stride_tricks.as_strided(np.zeros(1, np.uint8), shape, strides)
    r = op(stand_in)
    if not isinstance(r, np.ndarray):  # NumPy read the one element of a 0-d array (np.flip's m[()]): a copy
        if stand_in.ndim:
            raise TypeError(
                f"{getattr(op, '__name__', op)!r} read an element of a {stand_in.ndim}-d array where a "
                "view was expected"
            )
        return wrap(t.as_strided((), (), offset).clone())
    moved = r.__array_interface__["data"][0] - stand_in.__array_interface__["data"][0]
    return _strided(t, r.shape, r.strides, offset + moved)


def _strided(t: torch.Tensor, shape: tuple[int, ...], strides: tuple[int, ...], start: int) -> NeuronArray:
    """The array over t's storage with NumPy's layout (strides in elements, of any sign; ``start`` the storage
    offset of element (0, ..., 0)): a torch view with the strides' sizes, reversed along the negative ones."""
    if 0 in shape:  # no element: NumPy's pointer may lie anywhere (before the memory, even)
        return wrap(t.as_strided(shape, tuple(abs(s) for s in strides), t.storage_offset()))
    flips = tuple(d for d, (n, s) in enumerate(zip(shape, strides, strict=True)) if s < 0 and n > 1)
    base = t.as_strided(shape, tuple(abs(s) for s in strides), start + sum((shape[d] - 1) * strides[d] for d in flips))
    return _reversed(base, flips) if flips else wrap(base)


class FlatIterator:
    """``x.flat``: NumPy's flatiter over a NeuronArray. Reads by flat index (an int, a slice, an integer or
    boolean array) return copies, as NumPy's do; iteration yields the elements as 0-d arrays in C order; writes
    by flat index go into x (through its flat view where x is C-contiguous, else through x's own indexing)."""

    __slots__ = ("_x",)

    def __init__(self, x: NeuronArray) -> None:
        self._x = x

    def __len__(self) -> int:
        return self._x.size

    def _flat(self) -> NeuronArray:
        return wrap(self._x._t.reshape(-1))  # a view where x is contiguous, else a copy: read only here

    def __getitem__(self, key: Any) -> NeuronArray:
        r = self._flat()[key]
        return r if r.ndim == 0 else wrap(r._t.clone())  # one element is already a copy

    def __iter__(self) -> Any:
        flat = self._flat()
        return (flat[i] for i in range(flat.size))

    def __setitem__(self, key: Any, value: Any) -> None:
        x = self._x
        if not x._writeable():
            raise ValueError(read_only_message("x.flat[key] = value"))
        if type(key) is int:  # NumPy's flatiter reports any failure to store one item as this ValueError
            try:
                self._set(key, value)
            except OverflowError as e:
                raise ValueError(f"x.flat[{key}] = value: error setting a single item of the array: {e}") from e
            return
        self._set(key, value)

    def _set(self, key: Any, value: Any) -> None:
        x = self._x
        if type(x) is NeuronArray and x._t.is_contiguous():
            wrap(x._t.view(-1))[key] = value  # the flat view of x's memory
            return
        # any other layout (strided, negative steps): the flat positions as indices of x, written through x
        if isinstance(key, NeuronArray):
            key = key._host()
        positions = np.arange(x.size)[key]
        x[tuple(np.asarray(i) for i in np.unravel_index(positions, x.shape))] = value

    def copy(self) -> NeuronArray:
        """flatiter.copy: the elements as a new 1-d array."""
        return wrap(self._x._t.reshape(-1).clone())
