"""The wrapper every public function of the namespace gets (``_overrides.public``): a function of required
positional-only parameters and keyword-only ones gets a generated wrapper with those parameters, which calls the
function without its keywords where they are all at their defaults. Each spelling of a call reaches the function
as the same call, a wrong call raises the function's own TypeError, and a registered type reaches its handler with
the call's arguments."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import trn_backend as xp
from trn_backend._overrides import OVERRIDES, public

_MARK = object()


def _f(x, y, /, *, a=None, b=1, c=_MARK):
    return x, y, a, b, c


def _required(x, /, *, k, m=2.5):
    return x, k, m


def _positional(x, y, /):
    return x, y


def _general(x, y=3, *, z=None):
    return x, y, z


def _outcome(call):
    try:
        return call()
    except TypeError as e:
        return f"TypeError: {e}"


CALLS = [
    ((1, 2), {}),
    ((1, 2), {"a": None}),
    ((1, 2), {"b": 1, "c": _MARK}),
    ((1, 2), {"b": 5}),
    ((1, 2), {"a": [3], "c": None}),
    ((1, 2), {"b": True}),
    ((1, 2), {"k": 4}),
    ((1, 2), {"k": 4, "m": 1}),
    ((1,), {"k": 4}),
    ((1,), {}),
    ((1, 2, 3), {}),
    ((1, 2), {"d": 1}),
    ((), {"x": 1, "y": 2}),
    ((1,), {"z": 0}),
]


@pytest.mark.parametrize("func", [_f, _required, _positional, _general], ids=lambda f: f.__name__)
def test_every_spelling_reaches_the_function_as_it_would_directly(func) -> None:
    """Positional arguments, keywords at their defaults or not, and wrong calls (missing, extra or unknown
    arguments): the wrapper answers as the function itself, errors included; its signature is the function's."""
    wrapped = public(func, "f")
    assert inspect.signature(wrapped) == inspect.signature(func)
    for args, kwargs in CALLS:
        assert _outcome(lambda: wrapped(*args, **kwargs)) == _outcome(lambda: func(*args, **kwargs)), (args, kwargs)  # noqa: B023 (called at once)


class _Marked:
    """An argument type registered in OVERRIDES for the test."""


@pytest.mark.parametrize("func", [_f, _general], ids=lambda f: f.__name__)
def test_a_registered_type_reaches_its_handler_with_the_call(func) -> None:
    """A registered type among the positional arguments or the keyword values sends the call to its handler,
    which gets the function, its public name, the positional arguments and the keywords the call gives (a
    keyword at its default may be left out: the same call)."""
    seen = []

    def handle(f, name, args, kwargs):
        seen.append((f, name, args, kwargs))
        return "handled"

    wrapped = public(func, "f")
    marked = _Marked()
    OVERRIDES[_Marked] = handle
    try:
        assert wrapped(marked, 2) == "handled"
        keywords = {"z": marked} if func is _general else {"a": marked, "b": 1}
        assert wrapped(1, 2, **keywords) == "handled"
        assert wrapped(1, 2) == func(1, 2)  # no registered type among the arguments: the function
    finally:
        del OVERRIDES[_Marked]
    assert seen[0] == (func, "f", (marked, 2), {})
    assert seen[1] == ((func, "f", (1, 2), {"z": marked}) if func is _general else (func, "f", (1, 2), {"a": marked}))


def test_namespace_calls_with_keywords_at_their_defaults_are_the_calls_without() -> None:
    """The reductions' keywords at their defaults, spelled or not, give NumPy's answer."""
    a = np.arange(6.0).reshape(2, 3)
    x = xp.asarray(a)
    for got in (xp.sum(x), xp.sum(x, axis=None, dtype=None, keepdims=False), xp.sum(x, keepdims=False)):
        assert float(got) == a.sum()
    np.testing.assert_array_equal(np.asarray(xp.sum(x, axis=0, keepdims=True)), a.sum(axis=0, keepdims=True))
    np.testing.assert_array_equal(np.asarray(xp.mean(x, axis=1)), a.mean(axis=1))
