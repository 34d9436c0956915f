"""NumPy ufuncs on NeuronArray (NEP 13): ``__call__`` of every ufunc with a standard counterpart, ``reduce``,
``accumulate`` and ``outer`` where the namespace has the operation, ``out=`` into NeuronArrays, ``dtype=``.

Operands that are not NeuronArrays join the call's device: ndarrays and NumPy scalars keep their dtype (a NumPy
scalar is a strong 0-d array under NEP 50), Python scalars stay weak. ``where=`` and the other loop controls
raise TypeError unless left at their defaults.

A ufunc or method outside the table (``np.fmod``, ``np.add.at``, SciPy's ufuncs such as ``scipy.special.erf``)
runs in NumPy on the zero-copy views of host NeuronArrays, and its results come back as NeuronArrays on the host
sharing NumPy's memory (the convention of dask, CuPy and sparse for foreign ufuncs; ``out=`` and ``at`` write
into the NeuronArrays); it is a TypeError naming the device for arrays elsewhere (see ``_registry.run_on_host``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from .. import _dtypes
from .._helpers import PY_SCALARS, NeuronArray, check_broadcastable
from . import mathematical
from ._common import _complex_compare, _extreme
from ._registry import (
    as_array,
    call_device,
    can_cast,
    check_writeable,
    device_of,
    run_on_host,
    to_dtype,
    write_out,
    xp,
)

__all__ = ["UFUNCS", "REDUCE", "ACCUMULATE", "array_ufunc", "methods"]

A = NeuronArray
_HOST = torch.device("cpu")
_OWN_TYPES = (A, np.ndarray, np.generic)  # operands this module handles (others may have their own dispatch)

# ufunc -> the namespace function of the same meaning
UFUNCS: dict[np.ufunc, str] = {
    np.absolute: "abs",
    np.add: "add",
    np.arccos: "acos",
    np.arccosh: "acosh",
    np.arcsin: "asin",
    np.arcsinh: "asinh",
    np.arctan: "atan",
    np.arctan2: "atan2",
    np.arctanh: "atanh",
    np.bitwise_and: "bitwise_and",
    np.bitwise_or: "bitwise_or",
    np.bitwise_xor: "bitwise_xor",
    np.invert: "bitwise_invert",
    np.left_shift: "bitwise_left_shift",
    np.right_shift: "bitwise_right_shift",
    np.ceil: "ceil",
    np.conjugate: "conj",
    np.copysign: "copysign",
    np.cos: "cos",
    np.cosh: "cosh",
    np.divide: "divide",
    np.equal: "equal",
    np.exp: "exp",
    np.expm1: "expm1",
    np.floor: "floor",
    np.floor_divide: "floor_divide",
    np.greater: "greater",
    np.greater_equal: "greater_equal",
    np.hypot: "hypot",
    np.isfinite: "isfinite",
    np.isinf: "isinf",
    np.isnan: "isnan",
    np.less: "less",
    np.less_equal: "less_equal",
    np.log: "log",
    np.log1p: "log1p",
    np.log2: "log2",
    np.log10: "log10",
    np.logaddexp: "logaddexp",
    np.logical_and: "logical_and",
    np.logical_not: "logical_not",
    np.logical_or: "logical_or",
    np.logical_xor: "logical_xor",
    np.maximum: "maximum",
    np.minimum: "minimum",
    np.multiply: "multiply",
    np.negative: "negative",
    np.nextafter: "nextafter",
    np.not_equal: "not_equal",
    np.positive: "positive",
    np.power: "pow",
    np.reciprocal: "reciprocal",
    np.remainder: "remainder",
    np.rint: "round",
    np.sign: "sign",
    np.signbit: "signbit",
    np.sin: "sin",
    np.sinh: "sinh",
    np.sqrt: "sqrt",
    np.square: "square",
    np.subtract: "subtract",
    np.tan: "tan",
    np.tanh: "tanh",
    np.trunc: "trunc",
    np.matmul: "matmul",
    np.vecdot: "vecdot",
}

# ufunc.reduce -> namespace reduction, and ufunc.accumulate -> namespace cumulative function
REDUCE: dict[np.ufunc, str] = {
    np.add: "sum",
    np.multiply: "prod",
    np.maximum: "max",
    np.minimum: "min",
    np.logical_and: "all",
    np.logical_or: "any",
}
ACCUMULATE: dict[np.ufunc, str] = {np.add: "cumulative_sum", np.multiply: "cumulative_prod"}

_LOGICAL = frozenset({np.logical_and, np.logical_or, np.logical_xor, np.logical_not})
# NumPy's defaults of the loop controls we do not implement; any other value is a TypeError
_DEFAULTS: dict[str, Any] = {
    "where": True,
    "casting": "same_kind",
    "order": "K",
    "subok": True,
    "signature": None,
    "axes": None,
    "axis": None,
    "keepdims": False,
}


def methods(ufunc: np.ufunc) -> tuple[str, ...]:
    """The ufunc methods handled for ``ufunc``."""
    names = ["__call__"]
    if ufunc in REDUCE:
        names.append("reduce")
    if ufunc in ACCUMULATE:
        names.append("accumulate")
    if ufunc.nin == 2 and ufunc.signature is None:
        names.append("outer")
    return tuple(names)


def array_ufunc(ufunc: np.ufunc, method: str, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """NEP 13 entry: ``ufunc.method(*inputs, **kwargs)`` on the namespace, in NumPy on host arrays for what the
    table lacks (``_fallback``), or NotImplemented where another array type takes part."""
    if method == "__call__" and not kwargs:
        fname = _PLAIN.get(ufunc)
        if fname is not None:
            # the commonest call: an element-wise ufunc on NeuronArrays (and Python scalars, which stay weak)
            # with no keywords, where ``_call`` would convert, check and pass on nothing: the namespace function,
            # after the broadcast check that names the ufunc. Operands of other types take the general way.
            if len(inputs) == 2:
                a, b = inputs
                ta, tb = type(a), type(b)
                if ta is A and tb is A:
                    s1, s2 = a._t.shape, b._t.shape
                    if s1 != s2 and ufunc not in _CORE:
                        check_broadcastable(s1, s2, _NAMES[ufunc, method])
                    return getattr(xp, fname)(a, b)
                if (ta is A and tb in _WEAK_TYPES) or (tb is A and ta in _WEAK_TYPES):
                    return getattr(xp, fname)(a, b)
            elif (
                len(inputs) == 1
                and type(inputs[0]) is A
                and (inputs[0]._t.dtype is not torch.bool or ufunc not in _BOOL_LOOPS)
            ):
                return getattr(xp, fname)(inputs[0])
    name = _NAMES.get((ufunc, method))
    if name is None:
        return _fallback(ufunc, method, inputs, kwargs)
    if _foreign(inputs, kwargs.get("out")):
        return NotImplemented
    return _HANDLERS[method](ufunc, inputs, dict(kwargs), name)


def _fallback(ufunc: np.ufunc, method: str, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """A ufunc or method outside the table: NumPy's own on the host views of the NeuronArrays, its results as
    NeuronArrays, or a TypeError naming the ufunc (``numpy.<ufunc>[.<method>]`` for NumPy's) and the device of
    an array that is not on the host."""
    if _foreign(inputs, kwargs.get("out")):
        return NotImplemented
    own = getattr(np, ufunc.__name__, None) is ufunc  # NumPy's, or another library's (scipy.special.erf)
    name = (f"numpy.{ufunc.__name__}" if own else f"the ufunc {ufunc.__name__}") + (
        "" if method == "__call__" else f".{method}"
    )
    if method == "at" and inputs and isinstance(inputs[0], A):
        _check_at_target(inputs[0], name)
    return _as_neuron_arrays(name, run_on_host(name, getattr(ufunc, method), inputs, kwargs))


def _check_at_target(x: A, name: str) -> None:
    """``ufunc.at`` writes into its first operand, and NumPy's own does not always check that it is writeable
    (complex arrays): checked here, before the host view is handed over (a lazy conjugate's is a copy)."""
    t = x._t
    if t.is_conj() or t.is_neg():
        raise ValueError(
            f"{name}: assignment destination is read-only: a NeuronArray of shape {x.shape} is a "
            "lazy conjugate (torch's conj()), which NumPy sees as a read-only copy; resolve it first: "
            "xp.asarray(x, copy=True)"
        )
    if not x.flags.writeable:
        raise ValueError(
            f"{name}: assignment destination is read-only: a NeuronArray of shape {x.shape} is "
            "read-only (x.flags.writeable is False)"
        )


def _as_neuron_arrays(name: str, result: Any) -> Any:
    """NumPy's results as NeuronArrays on the host, sharing their memory (0-d for NumPy scalars); ``None``
    (``ufunc.at``) and the ``out=`` NeuronArrays pass through. A dtype no NeuronArray holds is a TypeError."""
    if isinstance(result, tuple):
        return tuple(_as_neuron_arrays(name, r) for r in result)
    if not isinstance(result, (np.ndarray, np.generic)):
        return result
    if result.dtype not in _dtypes.TORCH_OF_PUBLIC:
        raise TypeError(
            f"{name} on NeuronArrays computed a {result.dtype} result, which a NeuronArray cannot hold; "
            "call it on np.asarray(x) to get NumPy's array"
        )
    return xp.asarray(result, device=_HOST)


def _foreign(inputs: tuple[Any, ...], out: Any) -> bool:
    """An operand of another type with its own ``__array_ufunc__`` gets its turn (NEP 13)."""
    for x in inputs + out if isinstance(out, tuple) else inputs:
        if type(x) is not A and hasattr(type(x), "__array_ufunc__") and not isinstance(x, _OWN_TYPES):
            return True
    return False


def _take_out(kwargs: dict[str, Any], name: str) -> Any:
    out = kwargs.pop("out", None)
    if out is None or all(o is None for o in out):
        return None
    check_writeable(out, name)  # before the ufunc runs, as NumPy checks it
    return out


def _reject(kwargs: dict[str, Any], name: str) -> None:
    for k, v in kwargs.items():
        default = _DEFAULTS.get(k, np._NoValue)
        if not (v is default or (type(v) is type(default) and v == default)):
            raise TypeError(f"{name}() on NeuronArray does not support the argument {k}={v!r}; leave it at its default")


def _operands(ufunc: np.ufunc, inputs: tuple[Any, ...], out: Any, dtype: Any, name: str) -> list[Any]:
    """Inputs on the call's device (Python scalars stay weak beside an array); logical ufuncs take truth
    values, and ``dtype=`` casts under NumPy's same_kind rule."""
    ops = list(inputs)
    if not all(isinstance(x, A) for x in ops):
        device = call_device(inputs, out)
        ops = [as_array(x, device, weak=True) for x in inputs]
        if not any(isinstance(x, A) for x in ops):
            ops = [as_array(x, device) for x in inputs]
    if ufunc in _LOGICAL:
        ops = [_truth(x) for x in ops]
    if dtype is not None:
        for x in ops:
            if isinstance(x, A) and not can_cast(x._t.dtype, dtype):
                raise TypeError(
                    f"{name}(): cannot cast an input of dtype {_dtypes.name(x.dtype)} to "
                    f"dtype={_dtypes.name(dtype)} under NumPy's same_kind casting"
                )
        ops = [xp.astype(x, dtype, copy=False) if isinstance(x, A) else x for x in ops]
    return ops


def _truth(x: Any) -> Any:
    """A logical ufunc's operand: the truth values of an array or a Python scalar."""
    if isinstance(x, A):
        return xp.astype(x, _dtypes.bool, copy=False)
    return bool(x) if isinstance(x, PY_SCALARS) else x


def _finish(result: A, out: Any, name: str) -> A:
    return result if out is None else write_out(result, out, name, broadcast=True)


def _call(ufunc: np.ufunc, inputs: tuple[Any, ...], kwargs: dict[str, Any], name: str) -> A:
    out = _take_out(kwargs, name)
    dtype = to_dtype(kwargs.pop("dtype", None), name)
    ops = _operands(ufunc, inputs, out, dtype, name)
    if ufunc.nin == 2 and ufunc.signature is None and isinstance(ops[0], A) and isinstance(ops[1], A):
        # element-wise operands must broadcast; the error names the ufunc (matmul and vecdot have core dims)
        s1, s2 = ops[0]._t.shape, ops[1]._t.shape
        if s1 != s2:
            check_broadcastable(s1, s2, name)
    extra = {}
    if ufunc is np.vecdot and kwargs.get("axis") is not None:
        extra["axis"] = _vecdot_axis(kwargs.pop("axis"), ops)
    _reject(kwargs, name)
    if ufunc in _BOOL_LOOPS and isinstance(ops[0], A) and ops[0]._t.dtype is torch.bool:
        return _finish(_on_bool(ufunc, ops[0]), out, name)
    if ufunc is np.reciprocal and any(
        isinstance(x, A) and (x._t.dtype in _dtypes.INTEGER or x._t.dtype is torch.bool) for x in ops
    ):
        # NumPy's integer reciprocal truncates (1 // x); the namespace's is floating: refuse rather than differ
        raise TypeError(
            f"{name}() of an integer NeuronArray is not supported; use numpy.divide(1, x) or numpy.floor_divide(1, x)"
        )
    if ufunc is np.power:
        _check_integer_power(*ops, name=name)
    if ufunc in _COMPLEX_ORDER and any(
        isinstance(x, complex) or (isinstance(x, A) and x._t.dtype in _dtypes.COMPLEX_FLOAT) for x in ops
    ):
        return _finish(_complex_compare(ufunc.__name__, *ops), out, name)
    rule = _NUMPY_RULES.get(ufunc)
    if rule is not None:
        return _finish(rule(*ops), out, name)
    return _finish(getattr(xp, UFUNCS[ufunc])(*ops, **extra), out, name)


# Unary ufuncs with a loop for bool in NumPy where the namespace (the standard: numeric dtypes only) refuses bool:
# NumPy computes them on bool as on 0 and 1, in the dtype its loop gives (bool, or int8 for conjugate and square)
_BOOL_LOOPS = frozenset(
    {np.absolute, np.ceil, np.floor, np.trunc, np.conjugate, np.square, np.isfinite, np.isinf, np.isnan}
)


def _on_bool(ufunc: np.ufunc, x: A) -> A:
    """``ufunc`` of a bool array as NumPy computes it: on the values 0 and 1 (int8), in the dtype of NumPy's bool
    loop."""
    result = getattr(xp, UFUNCS[ufunc])(xp.astype(x, _dtypes.int8))
    want = ufunc.resolve_dtypes((np.dtype(bool), None))[-1]
    return xp.astype(result, _dtypes.to_dtype(want, ufunc.__name__), copy=False)


# The ufuncs that order their operands: NumPy orders complex numbers lexicographically, where the namespace (the
# standard) has no order for them
_COMPLEX_ORDER = frozenset({np.less, np.less_equal, np.greater, np.greater_equal, np.maximum, np.minimum})
# The ufuncs whose NumPy values differ from the namespace function's (the standard's special cases: -2 // inf is
# -0 there and -1 in NumPy; complex expm1 of NaN; rint of integers in a floating dtype): NumPy's rule
_NUMPY_RULES: dict[np.ufunc, Callable[..., A]] = {
    np.floor_divide: mathematical.floor_divide,
    np.expm1: mathematical.expm1,
    np.rint: mathematical.rint,
}


def _check_integer_power(base: Any, exponent: Any, *, name: str) -> None:
    """NumPy refuses negative integer powers of integers (the namespace's answer, 0, would differ)."""
    if isinstance(exponent, bool) or not all(
        isinstance(x, int) or (isinstance(x, A) and x._t.dtype in _dtypes.INTEGER) for x in (base, exponent)
    ):
        return
    negative = exponent < 0 if isinstance(exponent, int) else bool(xp.any(xp.less(exponent, 0)))
    if negative:
        raise ValueError(
            f"{name}(): integers to negative integer powers are not allowed (as in NumPy); use a floating base"
        )


def _vecdot_axis(axis: int, ops: list[Any]) -> int:
    """NumPy's gufunc axis counts in each operand; the namespace's vecdot takes it from the end."""
    if axis >= 0 and len({x.ndim for x in ops}) == 1:
        return axis - ops[0].ndim
    return axis


def _reduce(ufunc: np.ufunc, inputs: tuple[Any, ...], kwargs: dict[str, Any], name: str) -> A:
    out = _take_out(kwargs, name)
    dtype = to_dtype(kwargs.pop("dtype", None), name)
    axis, keepdims = kwargs.pop("axis", 0), kwargs.pop("keepdims", False)
    initial = kwargs.pop("initial", None) if ufunc not in _LOGICAL else None
    _reject(kwargs, name)
    fname = REDUCE[ufunc]
    if fname in ("sum", "prod"):
        (x,) = _operands(ufunc, inputs, out, None, name)
        r = getattr(xp, fname)(x, axis=axis, dtype=dtype, keepdims=keepdims)
        if initial is not None:
            r = getattr(xp, UFUNCS[ufunc])(r, initial)
    else:
        (x,) = _operands(ufunc, inputs, out, dtype, name)
        r = (
            _extreme(fname, x, axis, keepdims, initial)
            if fname in ("max", "min")
            else getattr(xp, fname)(x, axis=axis, keepdims=keepdims)
        )
    return _finish(r, out, name)


def _accumulate(ufunc: np.ufunc, inputs: tuple[Any, ...], kwargs: dict[str, Any], name: str) -> A:
    out = _take_out(kwargs, name)
    dtype = to_dtype(kwargs.pop("dtype", None), name)
    axis = kwargs.pop("axis", 0)
    _reject(kwargs, name)
    (x,) = _operands(ufunc, inputs, out, None, name)
    return _finish(getattr(xp, ACCUMULATE[ufunc])(x, axis=axis, dtype=dtype), out, name)


def _outer(ufunc: np.ufunc, inputs: tuple[Any, ...], kwargs: dict[str, Any], name: str) -> A:
    """``ufunc.outer(a, b)``: the call on a reshaped to a.shape + (1,) * b.ndim."""
    a, b = inputs
    if type(a) is not A or type(b) is not A:  # (as_array keeps NeuronArrays as they are)
        device = device_of((inputs, kwargs.get("out")))
        a, b = (as_array(x, device) for x in inputs)
    a = xp.reshape(a, a.shape + (1,) * b.ndim)
    fname = _PLAIN.get(ufunc)
    if fname is not None and not kwargs and type(a) is A and type(b) is A:
        return getattr(xp, fname)(a, b)  # as ``_call`` would: the shapes broadcast by construction
    return _call(ufunc, (a, b), kwargs, name)


# The ufuncs whose call without keywords on NeuronArrays is the namespace function alone (see ``array_ufunc``):
# not the logical ones (their operands become truth values), nor reciprocal and power (integer checks), nor the
# ones with NumPy's own rules (complex order, special values)
_PLAIN: dict[np.ufunc, str] = {
    u: f
    for u, f in UFUNCS.items()
    if u not in _LOGICAL and u not in (np.reciprocal, np.power) and u not in _COMPLEX_ORDER and u not in _NUMPY_RULES
}
# the gufuncs among them (matmul, vecdot): core dimensions, which the element-wise broadcast check must not see
_CORE = frozenset(u for u in _PLAIN if u.signature is not None)
# Python scalars: weak operands that ``_operands`` passes on as they are (exact types: NumPy scalars subclass them)
_WEAK_TYPES = frozenset(PY_SCALARS)

_HANDLERS = {"__call__": _call, "reduce": _reduce, "accumulate": _accumulate, "outer": _outer}
# (ufunc, method) -> the name errors give, for each handled pair: built once, as array_ufunc runs on every call
_NAMES: dict[tuple[np.ufunc, str], str] = {
    (u, m): f"numpy.{u.__name__}" + ("" if m == "__call__" else f".{m}") for u in UFUNCS for m in methods(u)
}
