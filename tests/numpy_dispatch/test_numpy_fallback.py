"""NumPy's host fallback for NeuronArray: NumPy functions and ufunc methods outside the dispatch tables run in
NumPy on the zero-copy views of host NeuronArrays (a function's results are NumPy's, a ufunc's come back as
NeuronArrays; writes through ``out=``, ``ufunc.at`` and in-place functions land in the NeuronArrays), and are a
TypeError naming the function and the device for arrays elsewhere. Another array type with its own
``__array_function__`` still gets its turn.
"""

from __future__ import annotations

import re
from collections import namedtuple
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import trn_backend as xp
from tests.support import from_numpy, to_numpy
from trn_backend.numpy_dispatch import _registry
from trn_backend.numpy_dispatch._registry import TABLE, host_views, on_host
from trn_backend.numpy_dispatch.ufuncs import UFUNCS, methods

rng = np.random.default_rng(3)
V = np.linspace(0.0, 20.0, 12)
M = rng.standard_normal((3, 4))
BITS = rng.integers(0, 2, 16).astype(np.uint8)
INTS = rng.integers(1, 50, 8)


def _neuron(value: Any) -> Any:
    """ndarrays (also inside lists, tuples and dicts) as NeuronArrays holding copies of them."""
    if isinstance(value, np.ndarray):
        return from_numpy(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_neuron(v) for v in value)
    if isinstance(value, dict):
        return {k: _neuron(v) for k, v in value.items()}
    return value


def _outside_the_tables(func: Any) -> bool:
    if isinstance(func, np.ufunc):
        return "__call__" not in methods(func) if func in UFUNCS else True
    method = getattr(func, "__name__", "")
    owner = getattr(func, "__self__", None)
    if isinstance(owner, np.ufunc):
        return owner not in UFUNCS or method not in methods(owner)
    return func not in TABLE


def _same(ours: Any, theirs: Any, wrapped: bool) -> None:
    """NumPy's result on the ndarrays: as it is for a NumPy function, as NeuronArrays for a ufunc (``wrapped``:
    each ndarray or NumPy scalar a NeuronArray of its dtype, shape and values)."""
    if isinstance(theirs, (tuple, list)):
        assert type(ours) is type(theirs) and len(ours) == len(theirs)
        for o, t in zip(ours, theirs, strict=True):
            _same(o, t, wrapped)
        return
    if wrapped and isinstance(theirs, (np.ndarray, np.generic)):
        assert type(ours) is xp.NeuronArray, type(ours)
        assert ours.dtype == theirs.dtype and ours.shape == np.shape(theirs) and ours.device == torch.device("cpu")
        np.testing.assert_array_equal(to_numpy(ours), theirs)
        return
    assert not isinstance(ours, xp.NeuronArray), "the fallback's result is NumPy's"
    assert type(ours) is type(theirs), (type(ours), type(theirs))
    if isinstance(theirs, np.ndarray):
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
        np.testing.assert_array_equal(ours, theirs)
    else:
        assert ours == theirs or (ours != ours and theirs != theirs)


def _is_ufunc(func: Any) -> bool:
    return isinstance(func, np.ufunc) or isinstance(getattr(func, "__self__", None), np.ufunc)


# (NumPy function or ufunc method, arguments): none of them in the tables
CASES: list[tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]] = [
    (np.fmod, (V, 3.0), {}),
    (np.divmod, (V, 3.0), {}),
    (np.heaviside, (V - 10, 0.5), {}),
    (np.cbrt, (V,), {}),
    (np.ldexp, (V, 2), {}),
    (np.frexp, (V,), {}),
    (np.gcd, (INTS, 12), {}),
    (np.float_power, (V, 1.5), {}),
    (np.modf, (V / 3,), {}),
    (np.logaddexp2, (V, V[::-1]), {}),
    (np.subtract.reduce, (V,), {}),
    (np.maximum.accumulate, (V[::-1],), {}),
    (np.add.reduceat, (V, [0, 4, 8]), {}),
    (np.packbits, (BITS,), {}),
    (np.unpackbits, (np.packbits(BITS),), {}),
    (np.unwrap, (V,), {}),
    (np.digitize, (V, [0.0, 5.0, 10.0]), {}),
    (np.real_if_close, (V + 1e-20j,), {}),
    (np.trim_zeros, (np.array([0.0, 0.0, 1.0, 2.0, 0.0]),), {}),
    (np.polyfit, (V, 3 * V + 1, 1), {}),
    (np.vander, (V[:5], 3), {}),
    (np.sinc, (V,), {}),
    (np.piecewise, (V, [V > 5]), {"funclist": [lambda v: 2 * v, 0.0]}),
    (np.i0, (V,), {}),
    (np.apply_along_axis, (np.sum, 1, M), {}),
]


@pytest.mark.parametrize(("func", "args", "kwargs"), CASES,
                         ids=[getattr(f, "__qualname__", getattr(f, "__name__", "")) for f, _, _ in CASES])
def test_functions_outside_the_tables_run_in_numpy_on_host_arrays(func: Callable[..., Any], args: tuple[Any, ...],
                                                                   kwargs: dict[str, Any]) -> None:
    assert _outside_the_tables(func), f"{func} has an entry in the tables now: pick another function here"
    _same(func(*_neuron(args), **_neuron(kwargs)), func(*args, **kwargs), wrapped=_is_ufunc(func))


def test_may_share_memory_sees_the_neuron_array_memory() -> None:
    # through the fallback, or an entry of the tables: either way on x's memory
    x = from_numpy(V)
    assert np.may_share_memory(x, x[2:5]) and np.shares_memory(x, x[2:5])
    assert not np.shares_memory(x, from_numpy(V))
    assert np.shares_memory(x, np.asarray(x))  # NumPy's view of x is x's memory


def test_ufunc_at_writes_into_the_neuron_array() -> None:
    x, expected = from_numpy(V), V.copy()
    assert np.add.at(x, [0, 0, 3], 1.5) is None
    np.add.at(expected, [0, 0, 3], 1.5)
    np.testing.assert_array_equal(to_numpy(x), expected)
    np.multiply.at(x, (slice(1, 3),), from_numpy(np.array([2.0, 3.0])))
    np.multiply.at(expected, (slice(1, 3),), np.array([2.0, 3.0]))
    np.testing.assert_array_equal(to_numpy(x), expected)


def test_out_writes_into_the_neuron_array_and_returns_it() -> None:
    x, out = from_numpy(V), from_numpy(np.zeros_like(V))
    assert np.fmod(x, 3.0, out=out) is out
    np.testing.assert_array_equal(to_numpy(out), np.fmod(V, 3.0))
    quotient, remainder = from_numpy(np.zeros_like(V)), from_numpy(np.zeros_like(V))
    result = np.divmod(x, 4.0, out=(quotient, remainder))
    assert result[0] is quotient and result[1] is remainder
    np.testing.assert_array_equal(to_numpy(quotient), V // 4.0)
    np.testing.assert_array_equal(to_numpy(remainder), V % 4.0)
    partial = from_numpy(np.zeros(3))
    assert np.add.reduceat(x, [0, 4, 8], out=partial) is partial
    np.testing.assert_array_equal(to_numpy(partial), np.add.reduceat(V, [0, 4, 8]))


def test_in_place_functions_write_into_the_neuron_array() -> None:
    x, expected = from_numpy(M), M.copy()
    np.fill_diagonal(x, 7.0)
    np.fill_diagonal(expected, 7.0)
    np.put(x, [0, 5], [-1.0, -2.0])
    np.put(expected, [0, 5], [-1.0, -2.0])
    np.copyto(x[2], from_numpy(np.arange(4.0)))
    np.copyto(expected[2], np.arange(4.0))
    np.testing.assert_array_equal(to_numpy(x), expected)


def test_arrays_in_keyword_arguments_are_converted() -> None:
    assert _outside_the_tables(np.histogram2d)
    x, y, w = from_numpy(V), from_numpy(V[::-1].copy()), from_numpy(V / 2)
    ours = np.histogram2d(x, y=y, bins=3, weights=w)
    theirs = np.histogram2d(V, y=V[::-1], bins=3, weights=V / 2)
    for a, b in zip(ours, theirs, strict=True):
        _same(a, b, wrapped=False)


def test_host_views_search_tuples_lists_and_dicts() -> None:
    x = from_numpy(V)
    pair = namedtuple("pair", "first second")
    args, kwargs, views = host_views("numpy.f", (x, [1, (x, {"k": x})], pair(x, 2)), {"out": (x,), "n": 3})
    assert views.found == 5
    assert isinstance(args[0], np.ndarray) and np.shares_memory(args[0], V) is False
    assert np.shares_memory(args[0], np.asarray(x))
    assert isinstance(args[1][1][1]["k"], np.ndarray) and args[1][0] == 1
    assert type(args[2]) is pair and isinstance(args[2].first, np.ndarray)
    assert isinstance(kwargs["out"][0], np.ndarray) and kwargs["n"] == 3
    untouched = ([1, 2], {"a": 1})
    assert host_views("numpy.f", untouched, {})[0] is untouched  # nothing to convert: the same objects


# ---------------------------------------------------------------- arrays off the host

class _Elsewhere(xp.NeuronArray):
    """A NeuronArray that reports another device (a stand-in for a GPU or Neuron array on this CPU machine)."""

    __slots__ = ()

    @property
    def device(self) -> Any:
        return torch.device("cuda", 1)


def _elsewhere(a: np.ndarray) -> _Elsewhere:
    x = object.__new__(_Elsewhere)
    x._t = torch.from_numpy(a.copy())
    return x


@pytest.mark.parametrize(("func", "call", "name"), [
    (np.polyfit, lambda x: np.polyfit(x, x, 1), "numpy.polyfit"),
    (np.unwrap, lambda x: np.unwrap(x, period=7.0), "numpy.unwrap"),
    (np.piecewise, lambda x: np.piecewise(x, [V > 1], [1.0, 0.0]), "numpy.piecewise"),
    (np.histogram2d, lambda x: np.histogram2d(V, V, bins=3, weights=x), "numpy.histogram2d"),
    (np.fmod, lambda x: np.fmod(x, 3.0), "numpy.fmod"),
    (np.fmod, lambda x: np.fmod(V, 3.0, out=x), "numpy.fmod"),
    (np.add.at, lambda x: np.add.at(x, [0], 1.0), "numpy.add.at"),
    (np.maximum.accumulate, lambda x: np.maximum.accumulate(x), "numpy.maximum.accumulate"),
    (np.divmod, lambda x: np.divmod(x, 2.0), "numpy.divmod"),
])
def test_arrays_off_the_host_are_refused_naming_function_and_device(func: Any, call: Callable[[Any], Any],
                                                                     name: str) -> None:
    assert _outside_the_tables(func), f"{name} has an entry in the tables now: pick another function here"
    x = _elsewhere(V)
    with pytest.raises(TypeError) as error:
        call(x)
    message = str(error.value)
    assert message.startswith(f"{name} is not supported on NeuronArray on device cuda:1"), message
    assert "np.asarray(x)" in message and "docs/numpy.md" in message
    assert repr(float(V[1]))[:5] not in message and len(message) < 300  # no values, no array repr
    np.testing.assert_array_equal(to_numpy(x), V)  # nothing was written


def test_the_device_test_is_on_host(monkeypatch: pytest.MonkeyPatch) -> None:
    x = from_numpy(V)
    assert on_host(x) and not on_host(_elsewhere(V))
    monkeypatch.setattr(_registry, "on_host", lambda array: False)  # as if x lived on an accelerator
    with pytest.raises(TypeError, match=re.escape("numpy.unwrap is not supported on NeuronArray on device cpu")):
        np.unwrap(x)
    with pytest.raises(TypeError, match=re.escape("numpy.add.at is not supported on NeuronArray on device cpu")):
        np.add.at(x, [0], 1.0)
    assert isinstance(np.sum(x), xp.NeuronArray)  # the table does not ask where arrays live


def test_a_call_whose_neuron_array_cannot_be_reached_is_refused() -> None:
    # what NumPy passes for like=x: x among the types, not among the arguments
    with pytest.raises(TypeError, match=r"numpy.frombuffer has no NeuronArray implementation.*like="):
        _registry.fallback(np.frombuffer, (xp.NeuronArray,), (b"\x00" * 8,), {})


def test_sharded_arrays_are_refused_naming_their_sharding() -> None:
    # imported here, as the other distributed tests do: importing trn_backend.distributed wraps the namespace
    import trn_backend.distributed as td
    from tests.distributed_support import spmd

    def body(rank: int) -> str:
        x = td.shard(xp.asarray(V), 0, td.default_mesh())
        with pytest.raises(TypeError) as error:
            np.fmod(x, 3.0)
        return str(error.value)

    for message in spmd(2, body):
        assert message.startswith("numpy.fmod is not supported on NeuronArray on device Sharding("), message


# ---------------------------------------------------------------- other array types keep their turn

class _Deferring:
    """An array-like with its own __array_function__ / __array_ufunc__ that handles everything."""

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> str:
        return f"handled {func.__name__}"

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> str:
        return f"handled {ufunc.__name__}.{method}"


class _Refusing:
    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        return NotImplemented


def test_other_array_types_get_their_turn() -> None:
    x = from_numpy(V)
    assert np.polyfit(x, _Deferring(), 1) == "handled polyfit"
    assert np.fmod(x, _Deferring()) == "handled fmod.__call__"
    assert np.add.at(x, [0], _Deferring()) == "handled add.at"
    with pytest.raises(TypeError, match="no implementation found for 'numpy.polyfit'"):
        np.polyfit(x, _Refusing(), 1)
    np.testing.assert_array_equal(to_numpy(x), V)
