"""The NEP 18 table (NumPy function object -> implementation) and the generic dispatcher behind it.

A call is bound against the NumPy function's own signature, so positional and keyword spellings are the same;
an argument the implementation lacks is accepted only at NumPy's default value, anything else is a TypeError
naming the argument. Array arguments that are not NeuronArrays (ndarrays, lists, NumPy scalars) move to the
device of the call's NeuronArrays; NumPy dtype spellings become the namespace's torch dtypes.

Dispatch runs on every NumPy call, so everything that depends only on the function (how NumPy's signature binds,
which arguments convert and how, how the implementation is called) is worked out once, at registration, into the
table's ``Entry``; a call does only the per-call work.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import keyword
from collections.abc import Callable, Iterable
from typing import Any, overload

import numpy as np
import torch

from .. import _device, _dtypes
from .. import _namespace as xp  # the namespace, for every module of this package: its one import
from .._helpers import PY_SCALARS, NeuronArray

__all__ = [
    "Entry",
    "Binder",
    "TABLE",
    "implements",
    "dispatch",
    "device_of",
    "call_device",
    "as_array",
    "as_arrays",
    "to_dtype",
    "write_out",
    "qualname",
    "on_host",
    "host_views",
    "run_on_host",
    "xp",
]

_P = inspect.Parameter
_POSITIONAL = (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD)
_BY_NAME = (_P.POSITIONAL_OR_KEYWORD, _P.KEYWORD_ONLY)
_HANDLED_TYPES = (NeuronArray, np.ndarray)


class Binder:
    """``Signature.bind`` for one signature, prepared once: ``binder(args, kwargs)`` gives the arguments the caller
    gave by parameter name, ``**kwargs`` entries flattened; NumPy's ``_NoValue`` placeholder counts as not given.

    ``given(*args, **kwargs)`` is a function generated here with the signature's own parameters (every default
    a placeholder for "not given"), so Python's argument binding does the work of ``Signature.bind`` at the cost
    of one call; a call it refuses (a TypeError) goes through ``Signature.bind`` (``bind``), which has the error
    messages, so both ways give the same answer."""

    __slots__ = ("signature", "given")

    def __init__(self, signature: inspect.Signature) -> None:
        self.signature = signature
        self.given = _given_function(signature) or self._bound

    def __call__(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        try:
            return self.given(*args, **kwargs)
        except TypeError:  # raised by the binding of the call, before the generated body runs
            return self.bind(args, kwargs)

    def _bound(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return self.bind(args, kwargs)

    def bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        """The same through ``Signature.bind``: every call, at its speed."""
        given: dict[str, Any] = {}
        for k, v in self.signature.bind(*args, **kwargs).arguments.items():
            if self.signature.parameters[k].kind is _P.VAR_KEYWORD:
                given.update(v)
            elif v is not np._NoValue:
                given[k] = v
        return given


# The names the generated binding function uses itself: a signature with a parameter of one of these names keeps
# the binding through ``Signature.bind``.
_GIVEN_NAMES = frozenset({"_bind_call", "_given", "_unset", "_novalue"})


def _given_function(signature: inspect.Signature) -> Callable[..., dict[str, Any]] | None:
    """``def _bind_call(<the signature's parameters, defaults _unset>)``, which returns the parameters the call gave
    (not _unset, not NumPy's _NoValue) by name, ``*args`` only where it holds something (as ``Signature.bind``)
    and ``**kwargs`` entries flattened as they are; None where the parameters' names do not allow it."""
    params = list(signature.parameters.values())
    if any(not p.name.isidentifier() or keyword.iskeyword(p.name) or p.name in _GIVEN_NAMES for p in params):
        return None
    spelled: list[str] = []
    body: list[str] = []
    for i, p in enumerate(params):
        if p.kind is _P.KEYWORD_ONLY and not any(q.kind in (_P.KEYWORD_ONLY, _P.VAR_POSITIONAL) for q in params[:i]):
            spelled.append("*")
        if p.kind is _P.VAR_POSITIONAL:
            spelled.append(f"*{p.name}")
            body.append(f"    if {p.name}:\n        _given[{p.name!r}] = {p.name}")
        elif p.kind is _P.VAR_KEYWORD:
            spelled.append(f"**{p.name}")
            body.append(f"    _given.update({p.name})")
        else:
            spelled.append(p.name if p.default is _P.empty else f"{p.name}=_unset")
            unset = "" if p.default is _P.empty else f"{p.name} is not _unset and "
            body.append(f"    if {unset}{p.name} is not _novalue:\n        _given[{p.name!r}] = {p.name}")
        if p.kind is _P.POSITIONAL_ONLY and (i + 1 == len(params) or params[i + 1].kind is not _P.POSITIONAL_ONLY):
            spelled.append("/")
    source = f"def _bind_call({', '.join(spelled)}):\n    _given = {{}}\n" + "\n".join(body) + "\n    return _given\n"
    scope: dict[str, Any] = {"_unset": _UNSET, "_novalue": np._NoValue}
    exec(source, scope)  # noqa: S102 - generated from the signature's parameter names, checked above
    return scope["_bind_call"]


_UNSET = object()  # the generated binding's default: the parameter was not given


# A conversion of one argument: (value, the call's (args, kwargs), function name, argument name) -> the impl's
# value. A converter that moves a value to the call's device finds the device itself (``call_device``), only
# where it converts: NeuronArrays, None and dtypes need no device.
Converter = Callable[[Any, tuple[tuple[Any, ...], dict[str, Any]], str, str], Any]


@dataclasses.dataclass(frozen=True, slots=True)
class Entry:
    """One row of the table, everything a call needs worked out at registration: the implementation, the NumPy
    function's name (``numpy.sum``) and signature (``binder``), the implementation's parameter names, how each
    argument that holds an array, a sequence of arrays or a dtype converts (``converters``, by name), whether the
    dispatcher writes ``out=`` (the implementation has no ``out``), and how the implementation is called: all by
    keyword, or the parameters in ``by_position`` (with their defaults) and then ``var_positional``'s elements
    by position, the rest by keyword."""

    impl: Callable[..., Any]
    name: str
    binder: Binder
    impl_names: frozenset[str]
    any_keyword: bool  # the implementation takes **kwargs (savez's array names): every keyword goes to it
    converters: dict[str, Converter]
    writes_out: bool
    by_keyword: bool
    by_position: tuple[tuple[str, Any], ...]
    var_positional: str | None

    @property
    def signature(self) -> inspect.Signature:
        return self.binder.signature


TABLE: dict[Callable[..., Any], Entry] = {}


def _names(spec: str) -> frozenset[str]:
    return frozenset(spec.split())


def implements(
    *np_funcs: Callable[..., Any], arrays: str = "", sequences: str = "", weak: str = "", dtypes: str = "dtype"
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated function for each NumPy function in ``np_funcs``; parameter groups are
    space-separated NumPy parameter names: ``arrays`` hold one array (for ``*args`` each element), ``sequences``
    a sequence of arrays, ``dtypes`` a dtype. Python scalars in ``weak`` parameters stay Python scalars, so they
    promote weakly as in NumPy 2."""

    def register(impl: Callable[..., Any]) -> Callable[..., Any]:
        for f in np_funcs:
            TABLE[f] = _entry(f, impl, _names(arrays), _names(sequences), _names(weak), _names(dtypes))
        return impl

    return register


def _entry(
    np_func: Callable[..., Any],
    impl: Callable[..., Any],
    arrays: frozenset[str],
    sequences: frozenset[str],
    weak: frozenset[str],
    dtypes: frozenset[str],
) -> Entry:
    signature = inspect.signature(np_func)
    params = list(inspect.signature(impl).parameters.values())
    converters = {}
    for p in params:  # by the implementation's names: a NumPy **kwargs entry (einsum's dtype) converts too
        np_param = signature.parameters.get(p.name)
        starred = np_param is not None and np_param.kind is _P.VAR_POSITIONAL
        converter = _converter(p.name in arrays, p.name in sequences, p.name in dtypes, p.name in weak, starred)
        if converter is not None:
            converters[p.name] = converter
    # parameters before *args, and positional-only ones, cannot be passed by keyword (a namespace function
    # registered directly may have positional-only parameters)
    star = next((i for i, p in enumerate(params) if p.kind is _P.VAR_POSITIONAL), None)
    by_position = params[:star] if star is not None else [p for p in params if p.kind is _P.POSITIONAL_ONLY]
    any_keyword = any(p.kind is _P.VAR_KEYWORD for p in params)
    return Entry(
        impl=impl,
        name=qualname(np_func),
        binder=Binder(signature),
        impl_names=frozenset(p.name for p in params),
        any_keyword=any_keyword,
        converters=converters,
        writes_out=not any_keyword and "out" not in {p.name for p in params},
        by_keyword=star is None and not by_position,
        by_position=tuple((p.name, p.default) for p in by_position),
        var_positional=None if star is None else params[star].name,
    )


def _converter(array: bool, sequence: bool, dtype: bool, weak: bool, star: bool) -> Converter | None:
    if array:
        return (_weak_arrays if weak else _arrays) if star else (_weak_array if weak else _array)
    if sequence:
        return _sequence
    return _dtype if dtype else None


def _array(value: Any, call: tuple[tuple[Any, ...], dict[str, Any]], func: str, arg: str) -> Any:
    if value is None or isinstance(value, NeuronArray):  # as as_array: as they are
        return value
    return as_array(value, call_device(*call))


def _weak_array(value: Any, call: tuple[tuple[Any, ...], dict[str, Any]], func: str, arg: str) -> Any:
    if value is None or isinstance(value, NeuronArray):
        return value
    return as_array(value, call_device(*call), weak=True)


def _arrays(value: Any, call: tuple[tuple[Any, ...], dict[str, Any]], func: str, arg: str) -> Any:
    return as_arrays(value, call_device(*call))


def _weak_arrays(value: Any, call: tuple[tuple[Any, ...], dict[str, Any]], func: str, arg: str) -> Any:
    return as_arrays(value, call_device(*call), weak=True)


def _sequence(value: Any, call: tuple[tuple[Any, ...], dict[str, Any]], func: str, arg: str) -> Any:
    if type(value) in _SEQUENCES and all(isinstance(x, NeuronArray) for x in value):
        return list(value)  # what as_array would make of each: the arrays themselves
    device = call_device(*call)
    return [as_array(x, device) for x in value]  # an array iterates over its first axis, as in NumPy


_SEQUENCES = (list, tuple)


def _dtype(value: Any, call: tuple[tuple[Any, ...], dict[str, Any]], func: str, arg: str) -> Any:
    return to_dtype(value, func, arg)


def qualname(func: Any) -> str:
    """``numpy.sum``, ``numpy.linalg.norm``: the name users call a NumPy function by."""
    module = getattr(func, "__module__", None) or "numpy"
    return f"{module}.{func.__name__}"


def dispatch(func: Any, types: Iterable[type], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """NEP 18 entry: run ``func`` on the namespace; a function outside the table runs in NumPy on host arrays
    (``fallback``); NotImplemented where another array type takes part (NumPy then asks it)."""
    entry = TABLE.get(func)
    if entry is None:
        return fallback(func, types, args, kwargs)
    for t in types:
        if not issubclass(t, _HANDLED_TYPES):
            return NotImplemented
    try:
        values = entry.binder.given(*args, **kwargs)
    except TypeError:  # raised by the binding of the call: Signature.bind's error, or its answer (``Binder``)
        values = entry.binder.bind(args, kwargs)
    out = values.pop("out", None) if entry.writes_out else None
    if not entry.any_keyword and not entry.impl_names.issuperset(values):
        values = _supported(values, entry)
    for k, convert in entry.converters.items():
        if k in values:
            values[k] = convert(values[k], (args, kwargs), entry.name, k)
    if out is not None:
        check_writeable(out, entry.name)
    result = _call(entry, values)
    return result if out is None else write_out(result, out, entry.name)


def method(func: Any, x: NeuronArray, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """ndarray's method of ``func``'s name on ``x`` (``x.sum(axis=0)``): the table's implementation called
    directly where the call needs none of ``dispatch``'s work (only keyword arguments, each one the
    implementation takes and none to convert), else ``dispatch``, which gives the same answer with more work."""
    fast = _METHOD_FAST.get(func, _UNSET)
    if fast is _UNSET:
        fast = _METHOD_FAST[func] = _fast_method(func)
    if fast is not None and not args and kwargs.keys() <= fast[1]:
        return fast[0](x, **kwargs)
    return dispatch(func, (), (x, *args), kwargs)


# NumPy function -> (its implementation, the keywords it takes with no conversion), where the implementation takes
# the array first and everything else by keyword (None: ``method`` always dispatches); filled on first use
_METHOD_FAST: dict[Any, Any] = {}


def _fast_method(func: Any) -> tuple[Callable[..., Any], frozenset[str]] | None:
    entry = TABLE.get(func)
    if entry is None or not entry.by_keyword or entry.any_keyword:
        return None
    first = next(iter(entry.signature.parameters.values()), None)
    if first is None or first.kind not in _POSITIONAL or first.name not in entry.impl_names:
        return None
    return entry.impl, frozenset(entry.impl_names - set(entry.converters) - {first.name})


def check_writeable(out: Any, func: str) -> None:
    """A read-only ``out=`` (a NeuronArray, or a tuple of them) is NumPy's ValueError, raised before anything is
    computed or cast, as NumPy checks it first."""
    for o in out if isinstance(out, tuple) else (out,):
        if isinstance(o, NeuronArray):
            o._check_writeable(f"{func}(out=...)", "out")


# --- the host fallback: NumPy functions and ufuncs outside the tables ---


def on_host(x: NeuronArray) -> bool:
    """Whether ``x`` lives in host memory, so that ``np.asarray(x)`` is a view of it rather than a copy (a sharded
    array's device is its ``Sharding``: never)."""
    device = x.device
    return isinstance(device, torch.device) and device.type == "cpu"


class _Views:
    """The NeuronArrays of a call replaced by NumPy views of their memory (``np.asarray(x)``); ``found`` counts
    them. A view is writeable exactly where the NeuronArray is; an array that NumPy cannot view (a lazy conjugate,
    torch's ``conj()``) is a read-only copy, so that NumPy refuses a write into it rather than losing it.
    ``read_only`` says why each read-only view is so, for the error."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.found = 0
        self.read_only: list[str] = []

    def convert(self, value: Any) -> Any:
        """``value`` with every NeuronArray replaced, searched through tuples, lists and dicts; a NeuronArray
        off the host is a TypeError (its NumPy view would be a copy, and NumPy's writes would be lost)."""
        if isinstance(value, NeuronArray):
            if not on_host(value):
                raise TypeError(
                    f"{self.name} is not supported on NeuronArray on device {value.device}: "
                    "np.asarray(x) copies x to the host, where NumPy runs it; docs/numpy.md lists "
                    "the functions that run on the device"
                )
            self.found += 1
            a = np.asarray(value)
            if not a.flags.writeable:
                t = value._t
                self.read_only.append(
                    f"a NeuronArray of shape {value.shape} is a lazy conjugate (torch's conj()), which NumPy sees "
                    "as a read-only copy; resolve it first: xp.asarray(x, copy=True)"
                    if t.is_conj() or t.is_neg()
                    else f"a NeuronArray of shape {value.shape} is read-only (x.flags.writeable is False)"
                )
            return a
        if isinstance(value, (tuple, list)):
            items = [self.convert(v) for v in value]
            if all(a is b for a, b in zip(items, value, strict=True)):
                return value
            if isinstance(value, list):
                return items if type(value) is list else type(value)(items)
            return tuple(items) if type(value) is tuple else _same_tuple_type(value, items)
        if isinstance(value, dict):
            converted = {k: self.convert(v) for k, v in value.items()}
            if all(converted[k] is v for k, v in value.items()):
                return value
            return converted if type(value) is dict else type(value)(converted)
        return value


def _same_tuple_type(value: tuple[Any, ...], items: list[Any]) -> tuple[Any, ...]:
    """A tuple subclass rebuilt with new items: namedtuples take them as arguments, others as one iterable."""
    make = getattr(type(value), "_make", None)
    return make(items) if make is not None else type(value)(items)


def host_views(
    name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any], _Views]:
    """``args`` and ``kwargs`` with their NeuronArrays as NumPy views (see ``_Views.convert``)."""
    views = _Views(name)
    return views.convert(args), views.convert(kwargs), views


def run_on_host(name: str, call: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``call`` (a NumPy function or ufunc method) on the host views of the call's NeuronArrays: NumPy's own
    result, except that an ``out=`` NeuronArray comes back as itself, as NumPy returns ``out``."""
    new_args, new_kwargs, views = host_views(name, args, kwargs)
    if views.found == 0:
        # NumPy saw a NeuronArray that this search cannot reach: like=, or one inside another kind of object
        raise TypeError(
            f"{name} has no NeuronArray implementation, and its NeuronArray argument is not one the "
            "host fallback converts (like= is handled only by the functions docs/numpy.md lists; "
            "arrays are searched for in tuples, lists and dicts)"
        )
    try:
        result = call(*new_args, **new_kwargs)
    except ValueError as e:
        if views.read_only and "read-only" in str(e):  # NumPy's own refusal: say which array and why
            why = "; ".join(dict.fromkeys(views.read_only))
            raise ValueError(f"{name}: assignment destination is read-only (NumPy: {e}): {why}") from None
        raise
    out = kwargs.get("out")
    return result if out is None else _as_out(result, out, new_kwargs["out"])


def _as_out(result: Any, out: Any, out_views: Any) -> Any:
    """``result`` with the views of ``out=`` NeuronArrays (NumPy returns ``out``) replaced by the arrays."""
    outs = out if isinstance(out, tuple) else (out,)
    views = out_views if isinstance(out_views, tuple) else (out_views,)
    originals = {id(v): o for o, v in zip(outs, views, strict=False) if isinstance(o, NeuronArray)}
    if isinstance(result, tuple):
        return tuple(originals.get(id(r), r) for r in result)
    return originals.get(id(result), result)


def fallback(func: Any, types: Iterable[type], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """A NumPy function outside the table: with every NeuronArray of the call on the host, NumPy runs it on
    their zero-copy views (what it does for any array-like; ``out=`` writes land in the NeuronArray) and its
    result comes back unwrapped; a NeuronArray on another device is a TypeError, as NumPy's view of it would be
    a copy. Another array type with its own ``__array_function__`` gets its turn (NotImplemented)."""
    for t in types:
        if not issubclass(t, _HANDLED_TYPES):
            return NotImplemented
    return run_on_host(qualname(func), func, args, kwargs)


# What NumPy does for parameters whose signature default is its ``_NoValue`` placeholder.
_IMPLICIT_DEFAULTS: dict[str, Any] = {"where": True, "keepdims": False}


def _is_default(value: Any, param: inspect.Parameter | None) -> bool:
    if param is None or param.default is _P.empty:
        return False
    default = _IMPLICIT_DEFAULTS.get(param.name, param.default) if param.default is np._NoValue else param.default
    return value is default or (
        type(value) is type(default) and isinstance(value, (*PY_SCALARS, str)) and value == default
    )


def _supported(given: dict[str, Any], entry: Entry) -> dict[str, Any]:
    """``given`` without the arguments the implementation lacks, each of which must be at NumPy's default."""
    params = entry.signature.parameters
    for k, v in given.items():
        if k not in entry.impl_names and not _is_default(v, params.get(k)):
            raise TypeError(
                f"{entry.name}() on NeuronArray does not support the argument {k}={_short(v)}; leave it at its default"
            )
    return {k: v for k, v in given.items() if k in entry.impl_names}


def _short(value: Any) -> str:
    if isinstance(value, (NeuronArray, np.ndarray, torch.Tensor)):
        return f"<{type(value).__name__} of shape {tuple(value.shape)}>"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _call(entry: Entry, values: dict[str, Any]) -> Any:
    """Call the implementation with NumPy-named values (see ``Entry``); a parameter passed by position that
    was not given takes its default, as it would by keyword."""
    if entry.by_keyword:
        return entry.impl(**values)
    args: list[Any] = []
    for name, default in entry.by_position:
        if name in values:
            args.append(values.pop(name))
        elif default is not _P.empty:
            args.append(default)
        else:  # NumPy's signature lets the call leave out what the implementation needs: a table bug
            raise TypeError(f"{entry.name}() on NeuronArray needs the argument {name}")
    if entry.var_positional is not None:
        args.extend(values.pop(entry.var_positional, ()))
    return entry.impl(*args, **values)


# --- conversions ---


def device_of(values: Any) -> torch.device:
    """The device of the first NeuronArray in ``values`` (searched through tuples, lists and dicts); for a
    sharded array the device of its blocks (NumPy operands then count as replicated, not partitioned)."""
    if isinstance(values, (tuple, list)) and values and isinstance(values[0], NeuronArray):
        return values[0]._t.device  # the common case, and what the search finds first
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


def call_device(args: tuple[Any, ...], rest: Any) -> torch.device:
    """``device_of((args, rest))`` without its search when an element of ``args`` is a NeuronArray: the first
    such is what the search finds, since it looks at every element of ``args`` before anything inside them
    or in ``rest``."""
    for x in args:
        if isinstance(x, NeuronArray):
            return x._t.device
    return device_of((args, rest))


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
    return tuple([as_array(v, device, weak=weak) for v in values])


@overload
def to_dtype(value: None, func: str, arg: str = "dtype") -> None: ...
@overload
def to_dtype(value: Any, func: str, arg: str = "dtype") -> torch.dtype: ...
def to_dtype(value: Any, func: str, arg: str = "dtype") -> torch.dtype | None:
    """A NumPy dtype spelling (``np.float64``, ``"float32"``, ``np.dtype``, ``float``) or a torch dtype as the
    tensor dtype the implementations work in; None stays None."""
    if value is None:
        return None
    return _dtypes.to_dtype(value, f"{func}() {arg}")


def numpy_dtype(dtype: torch.dtype) -> np.dtype:
    return _dtypes.PUBLIC[dtype]


@functools.cache  # a few dtypes and castings; NumPy's answer costs microseconds a call
def can_cast(src: torch.dtype, dst: torch.dtype, casting: str = "same_kind") -> bool:
    """NumPy's casting rule between two namespace dtypes."""
    return bool(np.can_cast(numpy_dtype(src), numpy_dtype(dst), casting))  # type: ignore[arg-type]  # any str: NumPy checks it


def write_out(result: Any, out: Any, func: str, *, broadcast: bool = False, casting: str = "same_kind") -> NeuronArray:
    """Write ``result`` into the NeuronArray ``out`` (under NumPy's ``casting`` rule, same_kind unless the function
    takes casting=; the result broadcasts to ``out``'s shape only where ``broadcast``, as for ufuncs) and return
    ``out``."""
    if isinstance(out, tuple):
        if len(out) != 1:
            raise TypeError(f"{func}(): out= must hold one array, got {len(out)}")
        (out,) = out
    if not isinstance(out, NeuronArray):
        raise TypeError(
            f"{func}(): out= must be a NeuronArray, got {type(out).__name__} (writing a NeuronArray "
            "result into it would copy device data to the host)"
        )
    check_writeable(out, func)
    if not isinstance(result, NeuronArray):
        raise TypeError(f"{func}(): out= needs a function with one array result")
    if result.device != out.device:
        raise ValueError(f"{func}(): out is on {out.device}, the result on {result.device}")
    if not can_cast(result._t.dtype, out._t.dtype, casting):
        raise TypeError(
            f"{func}(): cannot write a {_dtypes.name(result.dtype)} result into out of dtype "
            f"{_dtypes.name(out.dtype)} under NumPy's {casting} casting"
            + ("; pass casting='same_kind' to round into out" if casting == "safe" else "")
        )
    if result.shape != out.shape and not broadcast:
        raise ValueError(f"{func}(): out has shape {out.shape}, the result {result.shape}")
    t = result._t if result.shape == out.shape else xp.broadcast_to(result, out.shape)._t
    # a result that is a view of out (einsum "ij->ji", out=x) is read whole before out changes, as in NumPy
    out._write(_dtypes.cast(t, out._t.dtype), f"{func}(out=...)")
    return out
