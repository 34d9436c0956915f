"""The one comparison of a call on NeuronArrays with the same call on ndarrays (NumPy 2 is the reference).

Arrays are compared by tests/support.py's ``assert_same_array``, the policy of ``assert_same`` (dtype and shape
always, values exact unless a tolerance is stated, NaNs in the same places); a drawn call here can also raise,
return tuples, scalars, Python values or an ndarray (itself a finding), and must be checked for what it did to its
operands' memory. So this module takes any outcome:

- an exception: NumPy's class or a subclass of it, on both sides or neither (unless differences.py relaxes it);
- a NeuronArray against an ndarray: through np.asarray, the same dtype, shape and values; values exact except for
  the inexact results of the entry points the recipes mark ``close`` (transcendental functions, reductions summed
  in another order, decompositions), which get assert_same's ``ulps=close, scaled=True``: ``close`` units of their
  dtype's eps, relative and of the largest finite magnitude of the answer;
- an ndarray where NumPy returns one for NeuronArray input: a finding (the result should be a NeuronArray);
- tuples and lists element by element; other values (Python scalars, dtypes, shapes) by equality;
- afterwards, the base arrays of every operand, exactly: a write lands in the same places on both sides, and an
  operand that NumPy leaves unchanged stays unchanged.
"""

from __future__ import annotations

import warnings
from typing import Any

import hypothesis
import numpy as np

import trn_backend as xp
from tests.support import assert_same_array, eps, is_inexact

from .draws import Operand


def note(message: str) -> None:
    """hypothesis' note inside a drawn test; printed (pytest shows it on failure) in a pinned one."""
    try:
        hypothesis.note(message)
    except hypothesis.errors.InvalidArgument:
        print(message)


class Raised:
    """An exception as an outcome."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def __repr__(self) -> str:
        return f"Raised({type(self.exc).__name__}: {self.exc})"


_PUBLIC_EXCEPTIONS = {
    getattr(np.exceptions, n) for n in dir(np.exceptions) if isinstance(getattr(np.exceptions, n), type)
} | {np.linalg.LinAlgError}


def public_class(cls: type[BaseException]) -> type[BaseException]:
    """The class NumPy documents for an exception: the first in its MRO that is a builtin or one of NumPy's public
    ones (np.exceptions, np.linalg.LinAlgError). NumPy's internal subclasses (UFuncTypeError and its casting and
    no-loop errors) are not part of its API; their public base (TypeError) is what callers catch."""
    for c in cls.__mro__:
        if c.__module__ == "builtins" or c in _PUBLIC_EXCEPTIONS:
            return c
    return Exception


def outcome(fn, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``, or the exception it raised, with NumPy's floating-point warnings silenced."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - any exception is an outcome to compare
            return Raised(exc)


def side(obj: Any, which: str) -> Any:
    """A call's arguments for one side: each Operand as its ndarray ("np") or NeuronArray ("xp") view."""
    if isinstance(obj, Operand):
        return getattr(obj, which)
    if isinstance(obj, tuple):
        return tuple(side(o, which) for o in obj)
    if isinstance(obj, list):
        return [side(o, which) for o in obj]
    if isinstance(obj, dict):
        return {k: side(v, which) for k, v in obj.items()}
    return obj


def assert_arrays(got: np.ndarray, want: np.ndarray, *, close: float | None, relax: set[str], what: str) -> None:
    if "dtype" in relax and got.dtype != want.dtype and is_inexact(got.dtype) and is_inexact(want.dtype):
        # a documented other result dtype: both compared in the narrower of the two, within two of its eps more
        # than the operation's own (the extra rounding)
        narrow = got.dtype if eps(got.dtype) >= eps(want.dtype) else want.dtype
        got, want, close = got.astype(narrow), want.astype(narrow), (close or 0.0) + 2.0
    assert_same_array(got, want, ulps=close, scaled=close is not None, what=what)


# What assert_matches answers where a documented difference decided the comparison (else None).
RAISED = "raised as documented"
NO_REFERENCE = "NumPy has no answer"


def assert_matches(
    got: Any, want: Any, *, close: float | None = None, relax: set[str] = frozenset(), what: str = "result"
) -> str | None:
    """``got`` (the NeuronArray side's outcome) matches ``want`` (NumPy's), under the relaxations given. Returns
    RAISED where the NeuronArray side raised an exception differences.py allows where NumPy answers (the caller
    then checks that nothing was written: assert_bases(..., unchanged=True)), NO_REFERENCE where NumPy has no
    answer to compare with or where its values are documented as not comparable ("skip": nor is what a write left
    in memory)."""
    raises = {name for r in relax if r.startswith("raises:") for name in r.split(":", 1)[1].split("|")}
    if "reference" in relax and (
        (isinstance(want, Raised) and isinstance(want.exc, TypeError | OverflowError))
        or getattr(want, "dtype", None) == np.dtype(object)
    ):
        return NO_REFERENCE  # the reference has no answer (see differences.py)
    if "skip" in relax and not isinstance(want, Raised) and not isinstance(got, Raised):
        return NO_REFERENCE  # documented as not comparable: nor is what a write left in memory
    if isinstance(want, Raised):
        assert isinstance(got, Raised), f"{what}: NumPy raises {want!r}, got {type(got).__name__} {got!r}"
        expected = public_class(type(want.exc))
        assert isinstance(got.exc, expected), f"{what}: NumPy raises {expected.__name__} ({want!r}), got {got!r}"
        return
    if isinstance(got, Raised):
        if any(c.__name__ in raises for c in type(got.exc).__mro__):
            return RAISED
        raise AssertionError(f"{what}: raised {got!r} where NumPy answers {want!r}") from got.exc
    if "unordered" in relax and isinstance(want, tuple) and isinstance(got, tuple) and len(got) == len(want):
        # a documented other order (sorted where NumPy's is not): each result as a sorted multiset
        got, want = tuple(_multiset(g) for g in got), tuple(_multiset(w) for w in want)
    elif "unordered" in relax and isinstance(want, np.ndarray):
        got, want = _multiset(got), _multiset(want)
    if isinstance(want, np.ndarray):
        assert not isinstance(got, np.ndarray), f"{what}: an ndarray where NumPy returns one: should be a NeuronArray"
        assert isinstance(got, xp.NeuronArray), f"{what}: {type(got).__name__} where NumPy returns an ndarray"
        assert_arrays(np.asarray(got), want, close=close, relax=relax, what=what)
        return
    if isinstance(want, np.generic | int | float | complex) and not isinstance(want, bool | np.bool_):
        if isinstance(got, xp.NeuronArray) and "scalar" in relax and got.ndim == 0:
            want = np.asarray(want) if isinstance(want, np.generic) else np.asarray(want, dtype=np.asarray(got).dtype)
            assert_arrays(np.asarray(got), want, close=close, relax=relax, what=what)
            return
        assert type(got) is type(want), f"{what}: {type(got).__name__} {got!r}, NumPy {type(want).__name__} {want!r}"
        assert_arrays(np.asarray(got), np.asarray(want), close=close, relax=relax, what=what)
        return
    if isinstance(want, bool | np.bool_):
        if isinstance(got, xp.NeuronArray) and "scalar" in relax and got.ndim == 0:
            got = np.asarray(got)[()]
        assert bool(got) == bool(want) and isinstance(got, bool | np.bool_), f"{what}: {got!r}, NumPy {want!r}"
        return
    if isinstance(want, tuple | list):
        assert isinstance(got, tuple | list), f"{what}: {type(got).__name__}, NumPy {type(want).__name__}"
        assert len(got) == len(want), f"{what}: {len(got)} results, NumPy {len(want)}"
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_matches(g, w, close=close, relax=relax, what=f"{what}[{i}]")
        return
    assert got == want, f"{what}: {got!r}, NumPy {want!r}"


def _multiset(a: Any) -> Any:
    """The values sorted (a NeuronArray stays one, so the type check still applies)."""
    if isinstance(a, xp.NeuronArray):
        return xp.asarray(np.sort(np.asarray(a).reshape(-1)))
    return np.sort(np.asarray(a).reshape(-1)) if isinstance(a, np.ndarray) else a


def assert_bases(
    operands: list[Operand], what: str = "memory", *, unchanged: bool = False, close: float | None = None
) -> None:
    """After a call: each operand's base is the same on both sides (writes landed in the same places, and
    nothing changed that NumPy left alone); with ``unchanged`` (the call raised as documented where NumPy wrote),
    each NeuronArray base is as it was before the call; ``close``: values within that many eps of the dtype (a
    documented rounding difference), as assert_arrays."""
    for i, op in enumerate(operands):
        want = op.before if unchanged else op.np_base
        got = outcome(np.asarray, op.xp_base)
        assert not isinstance(got, Raised), f"{what}: operand {i} base unreadable: {got!r}"
        assert_arrays(np.array(got), want, close=close, relax=set(), what=f"{what}: operand {i} ({op.layout}) base")
