"""The NEP 18 table and its dispatcher (trn_backend/numpy_dispatch/_registry.py, and the listing of
numpy_dispatch/__init__.py): every handled function has a case in a section's table, results stay NeuronArrays,
the generated docs list is current; the dispatch rules (arguments bound as NumPy's signature binds them, refused
unless at NumPy's default, dtype spellings, NumPy inputs joining the NeuronArrays' device, Python scalars weak,
``out=``).

NumPy's host fallback for NeuronArray: NumPy functions and ufunc methods outside the dispatch tables run in
NumPy on the zero-copy views of host NeuronArrays (a function's results are NumPy's, a ufunc's come back as
NeuronArrays; writes through ``out=``, ``ufunc.at`` and in-place functions land in the NeuronArrays), and are a
TypeError naming the function and the device for arrays elsewhere. Another array type with its own
``__array_function__`` still gets its turn.
"""

from __future__ import annotations

import importlib
import inspect
import itertools
import pathlib
import re
from collections import namedtuple
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
import torch

import trn_backend as xp
from tests.numpy_dispatch.calls import F32, OTHER_ORDER, SPD, SQ, I, M, N, W
from tests.support import assert_same, assert_same_array, assert_same_results, from_numpy, to_numpy
from trn_backend.numpy_dispatch import BEGIN, END, _registry, handled_functions, markdown
from trn_backend.numpy_dispatch._registry import TABLE, Binder, host_views, on_host, qualname
from trn_backend.numpy_dispatch.ufuncs import UFUNCS, methods

rng = np.random.default_rng(3)
V = np.linspace(0.0, 20.0, 12)
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
        assert type(ours) is xp.NeuronArray and ours.device == torch.device("cpu"), (type(ours), ours.device)
        assert_same(ours, theirs)
        return
    assert not isinstance(ours, xp.NeuronArray), "the fallback's result is NumPy's"
    assert type(ours) is type(theirs), (type(ours), type(theirs))
    if isinstance(theirs, np.ndarray):
        assert_same_array(ours, theirs)
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


@pytest.mark.parametrize(
    ("func", "args", "kwargs"), CASES, ids=[getattr(f, "__qualname__", getattr(f, "__name__", "")) for f, _, _ in CASES]
)
def test_functions_outside_the_tables_run_in_numpy_on_host_arrays(
    func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
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


@pytest.mark.parametrize(
    ("func", "call", "name"),
    [
        (np.polyfit, lambda x: np.polyfit(x, x, 1), "numpy.polyfit"),
        (np.unwrap, lambda x: np.unwrap(x, period=7.0), "numpy.unwrap"),
        (np.piecewise, lambda x: np.piecewise(x, [V > 1], [1.0, 0.0]), "numpy.piecewise"),
        (np.histogram2d, lambda x: np.histogram2d(V, V, bins=3, weights=x), "numpy.histogram2d"),
        (np.fmod, lambda x: np.fmod(x, 3.0), "numpy.fmod"),
        (np.fmod, lambda x: np.fmod(V, 3.0, out=x), "numpy.fmod"),
        (np.add.at, lambda x: np.add.at(x, [0], 1.0), "numpy.add.at"),
        (np.maximum.accumulate, lambda x: np.maximum.accumulate(x), "numpy.maximum.accumulate"),
        (np.divmod, lambda x: np.divmod(x, 2.0), "numpy.divmod"),
    ],
)
def test_arrays_off_the_host_are_refused_naming_function_and_device(
    func: Any, call: Callable[[Any], Any], name: str
) -> None:
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


# ---------------------------------------------------------------- the table

REGISTERED = [
    "numpy.diag",
    "numpy.diagflat",
    "numpy.interp",
    "numpy.gradient",
    "numpy.ediff1d",
    "numpy.convolve",
    "numpy.correlate",
    "numpy.cross",
    "numpy.pad",
    "numpy.rot90",
    "numpy.append",
    "numpy.insert",
    "numpy.delete",
    "numpy.argwhere",
    "numpy.select",
    "numpy.lexsort",
    "numpy.linalg.lstsq",
    "numpy.polyval",
    "numpy.may_share_memory",
    "numpy.shares_memory",
    "numpy.save",
    "numpy.savez",
    "numpy.savez_compressed",
    "numpy.savetxt",
]


def test_registered_names() -> None:
    assert set(REGISTERED) <= set(handled_functions())


# The section files' tables (CASES), and the test files with tables of their own for the entries they cover
# (a function named there as np.<name> counts).
_SECTIONS = (
    "creation",
    "einsum",
    "fft",
    "indexing",
    "joins",
    "linalg",
    "logic",
    "mathematical",
    "reductions",
    "sets",
    "shape",
    "sorting",
    "statistics",
)
_OWN_TABLES = (
    "test_statistics.py",
    "test_nan_functions.py",
    "test_creation.py",
    "test_indexing.py",
    "test_mathematical.py",
    "test_joins.py",
    "test_shape.py",
    "test_sorting.py",
    "test_linalg.py",
    "test_polynomials.py",
    "test_memory.py",
    "test_io.py",
    "../ecosystem/test_dask.py",
    "test_special_values.py",
    "test_fill_values.py",
)


def test_every_handled_function_has_a_case() -> None:
    covered = {
        str(case)
        for section in _SECTIONS
        for case in importlib.import_module(f"tests.numpy_dispatch.test_{section}").CASES
    }
    here = pathlib.Path(__file__).parent
    elsewhere = "\n".join((here / name).read_text() for name in _OWN_TABLES)
    missing = [f for f in set(handled_functions()) - covered if f"np.{f.removeprefix('numpy.')}" not in elsewhere]
    assert not missing, sorted(missing)


def test_results_stay_neuron_arrays() -> None:
    a = from_numpy(M)
    for result in (np.sum(a), np.einsum("ij->j", a), np.linalg.norm(a), np.sort(a), np.fft.fft(a)):
        assert isinstance(result, xp.NeuronArray)
    for part in np.linalg.svd(from_numpy(SQ)):
        assert isinstance(part, xp.NeuronArray)


ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_docs_list_is_generated_from_the_table() -> None:
    text = (ROOT / "docs" / "numpy.md").read_text()
    start, end = BEGIN, END
    assert start in text and end in text
    generated = text.split(start, 1)[1].split(end, 1)[0]
    assert generated == markdown(), (
        "docs/numpy.md is out of date: regenerate it with python -m trn_backend.numpy_dispatch --write"
    )


# ---------------------------------------------------------------- dispatch rules


def test_incompatible_shapes_name_the_function_and_both_shapes() -> None:
    x, y = from_numpy(np.ones((2, 6))), from_numpy(np.ones(5))
    shapes_ = re.escape("shapes (2, 6) and (5,) cannot be broadcast together")
    for call, name in (
        (lambda: np.isclose(x, y), "numpy.isclose"),
        (lambda: np.allclose(x, y), "numpy.allclose"),
        (lambda: np.isclose(x, np.ones(5)), "numpy.isclose"),
        (lambda: np.clip(x, y, 2.0), "clip"),
        (lambda: np.where(x > 0, x, y), "where"),
        (lambda: np.where(x > 0, x, np.ones(5)), "where"),
    ):
        with pytest.raises(ValueError, match=f"{re.escape(name)}\\(\\): {shapes_}"):
            call()


@pytest.mark.parametrize(
    ("call", "argument"),
    [
        (lambda a: np.sum(a, where=np.ones(4, dtype=bool)), "where="),
        (lambda a: np.mean(a, where=a > 0), "where="),
        (lambda a: np.reshape(a, (4, 3), order="F"), "order='F'"),
        (lambda a: np.unique(a, axis=0), "axis=0"),
        (lambda a: np.linalg.svd(a, hermitian=True), "hermitian=True"),
        (lambda a: np.einsum("ij->", a, order="F"), "order='F'"),
        (lambda a: np.einsum_path("ij->", a, einsum_call=True), "einsum_call=True"),
        (lambda a: np.std(a, mean=np.mean(a)), "mean="),
        (lambda a: np.zeros_like(a, subok=False), "subok=False"),
    ],
)
def test_unsupported_arguments_raise_type_error_naming_them(call, argument) -> None:
    with pytest.raises(TypeError, match=re.escape(argument)):
        call(from_numpy(M))


def test_unsupported_argument_at_its_default_is_accepted() -> None:
    a = from_numpy(M)
    assert_same_results(np.sum(a, where=True), np.sum(M), rtol=OTHER_ORDER)
    assert_same_results(np.reshape(a, (4, 3), order="C"), np.reshape(M, (4, 3)), rtol=OTHER_ORDER)
    assert_same_results(np.sort(a, kind="quicksort", order=None), np.sort(M), rtol=OTHER_ORDER)


def test_bad_values_raise() -> None:
    a = from_numpy(M)
    with pytest.raises(TypeError, match="dtype float128 is not supported on NeuronArray"):
        np.sum(a, dtype=np.longdouble)
    with pytest.raises(TypeError, match="cannot cast float64 to int32"):
        np.concatenate([a, a], dtype=np.int32)
    with pytest.raises(ValueError, match="both x and y"):
        np.where(a > 0, a)
    with pytest.raises(ValueError, match="ddof= or correction="):
        np.var(a, ddof=1, correction=1)
    with pytest.raises(ValueError, match="mode='raw'"):
        np.linalg.qr(a, mode="raw")
    with pytest.raises(ValueError, match="UPLO"):
        np.linalg.eigh(from_numpy(SPD), UPLO="X")
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        np.vsplit(from_numpy(W), 2)
    with pytest.raises(ValueError, match="a has 12 elements but b has 4"):
        np.vdot(a, from_numpy(W))
    with pytest.raises(ValueError, match="unknown kind"):
        np.sort(a, kind="bogo")


def _bind_outcome(bind: Callable[[], dict[str, Any]]) -> Any:
    try:
        return bind()
    except TypeError as e:
        return f"TypeError: {e}"


def _calls(signature: inspect.Signature) -> Iterator[tuple[tuple[Any, ...], dict[str, Any]]]:
    """Calls of every shape against ``signature``: 0 to 2 more positional arguments than it has positional
    parameters, with no, one or two keywords from its names and one it lacks; values are fresh objects, and
    some are NumPy's ``_NoValue`` placeholder (not given)."""
    names = [*signature.parameters, "not_a_parameter"]
    n_positional = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in signature.parameters.values())
    for n in range(n_positional + 3):
        args = tuple(object() for _ in range(n))
        for k in range(3):
            for keys in itertools.combinations(names, k):
                yield args, {key: object() for key in keys}
        if n:
            yield (np._NoValue, *args[1:]), {names[-2]: np._NoValue}


def test_prepared_binding_agrees_with_signature_bind() -> None:
    """The binding prepared at registration gives what ``inspect.Signature.bind`` gives (the reference), for
    every function in the table and calls of every shape, errors included."""
    checked = 0
    for func, entry in TABLE.items():
        for args, kwargs in _calls(inspect.signature(func)):
            fast = _bind_outcome(lambda: entry.binder(args, kwargs))  # noqa: B023 (called at once)
            reference = _bind_outcome(lambda: entry.binder.bind(args, kwargs))  # noqa: B023
            assert fast == reference, (qualname(func), args, kwargs)
            checked += 1
    assert checked > 10 * len(TABLE)


def _signature_shapes(a, /, b, c=None, *d, e, f=np._NoValue, **g): ...


def _no_star(a, b=1, /, *, c=2): ...


def _star_only(*operands, out=None): ...


def _reserved_names(_given, _unset=None, *, _novalue=None, _bind_call=None): ...


def _required_keyword(*, a, b=None): ...


@pytest.mark.parametrize("func", [_signature_shapes, _no_star, _star_only, _reserved_names, _required_keyword])
def test_the_generated_binding_agrees_with_signature_bind(func) -> None:
    """The binding function generated from a signature (Python's own argument binding, every default a "not
    given" placeholder) gives what ``inspect.Signature.bind`` gives for signatures of every parameter kind, and
    for parameter names the generated code uses itself (which keep ``Signature.bind``); errors included."""
    binder = Binder(inspect.signature(func))
    for args, kwargs in _calls(inspect.signature(func)):
        # the lambdas run at once, inside this iteration
        assert _bind_outcome(lambda: binder(args, kwargs)) == _bind_outcome(lambda: binder.bind(args, kwargs)), (  # noqa: B023
            args,
            kwargs,
        )  # noqa: B023 (called at once)


def test_binding_reaches_the_implementation_in_every_spelling() -> None:
    """Positional, keyword and mixed spellings of one call give one answer (also for functions registered
    straight from the namespace, whose parameters are positional-only there)."""
    a = from_numpy(M)
    for calls, expected in (
        (
            (
                lambda: np.sum(a, 1, None, None, True),
                lambda: np.sum(a, axis=1, keepdims=True),
                lambda: np.sum(keepdims=True, a=a, axis=1),
            ),
            np.sum(M, axis=1, keepdims=True),
        ),
        ((lambda: np.astype(a, np.float32), lambda: np.astype(a, "float32", copy=False)), M.astype(np.float32)),
        ((lambda: np.linalg.vector_norm(a, axis=1, ord=1),), np.linalg.vector_norm(M, axis=1, ord=1)),
        (
            (
                lambda: np.einsum("ij->j", a),
                lambda: np.einsum(a, [0, 1], [1]),
                lambda: np.einsum("ij->j", a, optimize=True),
            ),
            M.sum(axis=0),
        ),
    ):
        for call in calls:
            assert_same_results(call(), expected, rtol=OTHER_ORDER)


def test_dtype_spellings_convert_the_same_every_time() -> None:
    """Converted dtype spellings are remembered; refused ones are refused every time."""
    a = from_numpy(I)
    for _ in range(2):
        for spelling in (np.float64, "float64", "f8", np.dtype("float64"), float):
            assert np.sum(a, dtype=spelling).dtype == xp.float64
        assert np.sum(a, dtype=int).dtype == xp.int64
        assert np.sum(a, dtype=np.float16).dtype == xp.float16  # an extension dtype
        for bad, message in (
            (np.longdouble, "float128 is not supported"),
            ("bogus", "'bogus' is not a dtype"),
            ([("f", "f8")], "is not supported"),
        ):
            with pytest.raises(TypeError, match=re.escape(message)):
                np.sum(a, dtype=bad)


def test_mixed_numpy_and_neuron_inputs_give_neuron_arrays() -> None:
    a = from_numpy(M)
    for result, expected in (
        (np.concatenate([a, N.T[:1]]), np.concatenate([M, N.T[:1]])),
        (np.dot(M, from_numpy(N)), np.dot(M, N)),
        (np.einsum("ij,jk->ik", M, from_numpy(N)), M @ N),
        (np.where(M > 0, a, [1.0, 2.0, 3.0, 4.0]), np.where(M > 0, M, [1.0, 2, 3, 4])),
        (np.stack([a, [[1, 2, 3, 4]] * 3]), np.stack([M, [[1, 2, 3, 4]] * 3])),
    ):
        assert_same_results(result, expected, rtol=OTHER_ORDER)


def test_numpy_inputs_move_to_the_neuron_arrays_device() -> None:
    # torch's meta device stands in for an accelerator: shapes and dtypes only, no host data
    on_device = xp.NeuronArray(torch.empty(3, dtype=torch.float64, device="meta"))
    for result in (
        np.concatenate([on_device, np.ones(2)]),
        np.einsum("i,i->", on_device, np.ones(3)),
        np.where(np.array([True, False, True]), on_device, np.zeros(3)),
    ):
        assert isinstance(result, xp.NeuronArray) and result.device.type == "meta"


def test_python_scalars_promote_weakly_numpy_scalars_strongly() -> None:
    f = from_numpy(F32)
    assert np.where(f > 0, f, 0.0).dtype == xp.float32
    assert np.where(f > 0, f, np.float64(0.0)).dtype == xp.float64
    assert np.clip(f, 0.0, 1.0).dtype == xp.float32


def test_dtype_arguments_take_numpy_spellings() -> None:
    a = from_numpy(I)
    for spelling in (np.float64, "float64", np.dtype("float64"), float, xp.float64):
        assert np.sum(a, dtype=spelling).dtype == xp.float64
    assert np.cumsum(a, dtype="uint32").dtype == xp.uint32


def test_out_argument_of_functions() -> None:
    a = from_numpy(M)
    out = xp.zeros((4,), dtype=xp.float64)
    assert np.sum(a, axis=0, out=out) is out
    assert_same_results(out, np.sum(M, axis=0), rtol=OTHER_ORDER)
    out = xp.zeros((3, 5), dtype=xp.float64)
    assert np.einsum("ij,jk->ik", a, from_numpy(N), out=out) is out
    assert_same_results(out, M @ N, rtol=OTHER_ORDER)
    with pytest.raises(ValueError, match="out has shape"):
        np.sum(a, axis=1, out=xp.zeros((4,), dtype=xp.float64))
    with pytest.raises(TypeError, match="same_kind"):
        np.sum(a, axis=0, out=xp.zeros((4,), dtype=xp.int64))
    with pytest.raises(TypeError, match="out= must be a NeuronArray"):
        np.sum(a, axis=0, out=np.zeros(4))
