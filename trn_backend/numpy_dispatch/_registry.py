"""The NEP 18 table (NumPy function object -> implementation) and the generic dispatcher behind it.

A call is bound against the NumPy function's own signature, so positional and keyword spellings are the same;
an argument the implementation lacks is accepted only at NumPy's default value, anything else is a TypeError
naming the argument. Array arguments that are not NeuronArrays (ndarrays, lists, NumPy scalars) move to the
device of the call's NeuronArrays; NumPy dtype spellings become the namespace's torch dtypes.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import torch

import trn_backend as xp

from .. import _device, _dtypes
from .._array import unaliased
from .._helpers import PY_SCALARS, NeuronArray

__all__ = ["Entry", "TABLE", "implements", "dispatch", "device_of", "as_array", "as_arrays", "to_dtype",
           "write_out", "qualname"]

_P = inspect.Parameter


@dataclasses.dataclass(frozen=True)
class Entry:
    """One row of the table: the implementation, NumPy's signature, and which NumPy parameters hold one array
    (``arrays``; for ``*args`` each element), a sequence of arrays (``sequences``) or a dtype (``dtypes``).
    Python scalars in ``weak`` parameters stay Python scalars, so they promote weakly as in NumPy 2."""

    impl: Callable[..., Any]
    impl_params: dict[str, inspect.Parameter]
    signature: inspect.Signature
    arrays: frozenset[str]
    sequences: frozenset[str]
    weak: frozenset[str]
    dtypes: frozenset[str]


TABLE: dict[Callable[..., Any], Entry] = {}


def _names(spec: str) -> frozenset[str]:
    return frozenset(spec.split())


def implements(*np_funcs: Callable[..., Any], arrays: str = "", sequences: str = "", weak: str = "",
               dtypes: str = "dtype") -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated function for each NumPy function in ``np_funcs``; parameter groups are
    space-separated NumPy parameter names."""
    def register(impl: Callable[..., Any]) -> Callable[..., Any]:
        for f in np_funcs:
            TABLE[f] = Entry(impl, dict(inspect.signature(impl).parameters), inspect.signature(f),
                             _names(arrays), _names(sequences), _names(weak), _names(dtypes))
        return impl
    return register


def qualname(func: Any) -> str:
    """``numpy.sum``, ``numpy.linalg.norm``: the name users call a NumPy function by."""
    module = getattr(func, "__module__", None) or "numpy"
    return f"{module}.{func.__name__}"


def dispatch(func: Any, types: Iterable[type], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """NEP 18 entry: run ``func`` on the namespace, or NotImplemented (NumPy then raises its TypeError)."""
    entry = TABLE.get(func)
    if entry is None or not all(issubclass(t, (NeuronArray, np.ndarray)) for t in types):
        return NotImplemented
    name = qualname(func)
    given = _bind(entry.signature, args, kwargs)
    impl_params = entry.impl_params
    out = given.pop("out", None) if "out" not in impl_params else None
    _reject_unsupported(given, entry.signature, impl_params, name)
    device = device_of((args, kwargs))
    values = {k: _convert(k, v, entry, device, name) for k, v in given.items() if k in impl_params}
    result = _call(entry.impl, impl_params, values)
    return result if out is None else write_out(result, out, name)


def _bind(signature: inspect.Signature, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The arguments the caller gave, by NumPy's parameter names (``**kwargs`` entries flattened);
    NumPy's ``_NoValue`` placeholder counts as not given."""
    given: dict[str, Any] = {}
    for k, v in signature.bind(*args, **kwargs).arguments.items():
        if signature.parameters[k].kind is _P.VAR_KEYWORD:
            given.update(v)
        elif v is not np._NoValue:
            given[k] = v
    return given


# What NumPy does for parameters whose signature default is its ``_NoValue`` placeholder.
_IMPLICIT_DEFAULTS: dict[str, Any] = {"where": True, "keepdims": False}


def _is_default(value: Any, param: inspect.Parameter | None) -> bool:
    if param is None or param.default is _P.empty:
        return False
    default = _IMPLICIT_DEFAULTS.get(param.name, param.default) if param.default is np._NoValue else \
        param.default
    return value is default or (type(value) is type(default) and isinstance(value, (*PY_SCALARS, str))
                                and value == default)


def _reject_unsupported(given: dict[str, Any], signature: inspect.Signature,
                        impl_params: dict[str, inspect.Parameter], name: str) -> None:
    for k, v in given.items():
        if k not in impl_params and not _is_default(v, signature.parameters.get(k)):
            raise TypeError(f"{name}() on NeuronArray does not support the argument {k}={_short(v)}; "
                            "leave it at its default")


def _short(value: Any) -> str:
    if isinstance(value, (NeuronArray, np.ndarray, torch.Tensor)):
        return f"<{type(value).__name__} of shape {tuple(value.shape)}>"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _convert(k: str, v: Any, entry: Entry, device: torch.device, name: str) -> Any:
    if k in entry.arrays:
        param = entry.signature.parameters.get(k)
        if param is not None and param.kind is _P.VAR_POSITIONAL:
            return as_arrays(v, device, weak=k in entry.weak)
        return as_array(v, device, weak=k in entry.weak)
    if k in entry.sequences:
        return [as_array(x, device) for x in v]  # an array iterates over its first axis, as in NumPy
    if k in entry.dtypes:
        return to_dtype(v, name, k)
    return v


def _call(impl: Callable[..., Any], params: dict[str, inspect.Parameter], values: dict[str, Any]) -> Any:
    """Call ``impl`` with NumPy-named values: all but keyword-only ones by position (defaults fill gaps),
    so an implementation may be a namespace function with positional-only parameters."""
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for p in params.values():
        if p.kind is _P.VAR_POSITIONAL:
            args.extend(values.get(p.name, ()))
        elif p.kind is _P.KEYWORD_ONLY:
            if p.name in values:
                kwargs[p.name] = values[p.name]
        elif p.name in values or p.default is not _P.empty:
            args.append(values.get(p.name, p.default))
    return impl(*args, **kwargs)


# --- conversions ---

def device_of(values: Any) -> torch.device:
    """The device of the first NeuronArray in ``values`` (searched through tuples, lists and dicts); for a
    sharded array the device of its blocks (NumPy operands then count as replicated, not partitioned)."""
    stack = [values]
    while stack:
        v = stack.pop(0)
        if isinstance(v, NeuronArray):
            return v._t.device
        if isinstance(v, (tuple, list)):
            stack.extend(v)
        elif isinstance(v, dict):
            stack.extend(v.values())
    return _device.default_device()


def as_array(value: Any, device: torch.device, *, weak: bool = False) -> Any:
    """``value`` as a NeuronArray on ``device`` with NumPy's dtype inference (``[1.0]`` is float64, a NumPy
    scalar keeps its dtype); None passes through, and so do Python scalars where ``weak``."""
    if value is None or isinstance(value, NeuronArray) or (weak and _is_python_scalar(value)):
        return value
    if isinstance(value, torch.Tensor):
        return xp.asarray(value, device=device)
    return xp.asarray(np.asarray(value), device=device)


def _is_python_scalar(value: Any) -> bool:
    # np.float64 subclasses float, but under NEP 50 a NumPy scalar is strong: only Python's own are weak
    return isinstance(value, PY_SCALARS) and not isinstance(value, np.generic)


def as_arrays(values: Iterable[Any], device: torch.device, *, weak: bool = False) -> tuple[Any, ...]:
    return tuple(as_array(v, device, weak=weak) for v in values)


def to_dtype(value: Any, func: str, arg: str = "dtype") -> torch.dtype | None:
    """A NumPy dtype spelling (``np.float64``, ``"float32"``, ``np.dtype``, ``float``) or a namespace dtype as
    the namespace's dtype; None stays None."""
    if value is None or (isinstance(value, torch.dtype) and value in _dtypes.ALL):
        return value
    try:
        np_name = np.dtype(value).name
    except TypeError:
        raise TypeError(f"{func}(): {arg}={value!r} is not a dtype") from None
    dtype = getattr(_dtypes, np_name, None)
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"{func}(): {arg}={np_name} is not supported on NeuronArray; supported: "
                        f"{', '.join(_dtypes.NAMES.values())}")
    return dtype


def numpy_dtype(dtype: torch.dtype) -> np.dtype:
    return np.dtype(_dtypes.name(dtype))


def can_cast(src: torch.dtype, dst: torch.dtype, casting: str = "same_kind") -> bool:
    """NumPy's casting rule between two namespace dtypes."""
    return bool(np.can_cast(numpy_dtype(src), numpy_dtype(dst), casting))


def write_out(result: Any, out: Any, func: str, *, broadcast: bool = False) -> NeuronArray:
    """Write ``result`` into the NeuronArray ``out`` (NumPy's same_kind casting; the result broadcasts to
    ``out``'s shape only where ``broadcast``, as for ufuncs) and return ``out``."""
    if isinstance(out, tuple):
        if len(out) != 1:
            raise TypeError(f"{func}(): out= must hold one array, got {len(out)}")
        (out,) = out
    if not isinstance(out, NeuronArray):
        raise TypeError(f"{func}(): out= must be a NeuronArray, got {type(out).__name__} (writing a NeuronArray "
                        "result into it would copy device data to the host)")
    if not isinstance(result, NeuronArray):
        raise TypeError(f"{func}(): out= needs a function with one array result")
    if result.device != out.device:
        raise ValueError(f"{func}(): out is on {out.device}, the result on {result.device}")
    if not can_cast(result.dtype, out.dtype):
        raise TypeError(f"{func}(): cannot write a {_dtypes.name(result.dtype)} result into out of dtype "
                        f"{_dtypes.name(out.dtype)} under NumPy's same_kind casting")
    if result.shape != out.shape and not broadcast:
        raise ValueError(f"{func}(): out has shape {out.shape}, the result {result.shape}")
    # a result that is a view of out (einsum "ij->ji", out=x) is read whole before out changes, as in NumPy
    out._t.copy_(unaliased(_dtypes.cast(xp.broadcast_to(result, out.shape)._t, out.dtype), out._t))
    return out
