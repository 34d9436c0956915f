"""Every contraction route keeps the precision it promises, against exact arithmetic.

A generated property test: every entry point of ``trn_backend.contraction.ENTRY_POINTS`` (so an entry point added
later is covered by construction: ``test_every_entry_point_has_an_adapter`` fails until it is) x operand dtype
pairs (integers, float16, bfloat16, float32, float64, complex, and mixed pairs) x precision requests (every mode,
forward and relative targets) x the layouts the entry point takes (sharded over 2 ranks, sliced, out=, dtype=,
constants=, shared intermediates). Each result is compared with the exact one:

- the oracle is rational arithmetic (``fractions.Fraction``; a complex value is a pair of them), written here
  without any code of trn_backend; complex moduli, which bounds are stated in, are evaluated by mpmath at 60
  digits;
- under a mode, every entry's error is within the bound ``explain()`` reports for that call (the whole call: its
  casts, products, pre-sums, sums over slices and ranks, final rounding), times the same expression on
  |operands|; under ``target_forward_error=t``, within t times it; under ``target_relative_error=t``, within t
  of the exact entry (opt_einsum's own loop promises what ``explain(route="opt_einsum")`` says: each call is its
  own expression);
- gradual underflow and overflow are outside relative bounds (for every kind of floating point analysis):
  results of the subnormal-product family get the allowance of ``test_whole`` for product terms that
  underflow; under a target, a result must be finite and zero or normal, or refused (the "huge" family's
  products overflow);
- a ``PrecisionError`` is a refusal, never a wrong answer: accepted, except where a plan exists that meets the
  target (a forward target of twice the final dtype's unit roundoff or more, on data of the normal range);
- the result's dtype is the promised one (the operands' promotion, dtype=, out=).

``WITNESSES`` hold one case of each class of fault this test was written against (fallbacks to opt_einsum's own
step loop, mixed dtypes with a pre-sum, uncounted casts, the range of a narrower out= or of the result under a
forward target, complex products with nothing to contract, a sharded sum under a float64 mode, and a target that
carrying float64 meets but was refused), each run by the same checks.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable
from fractions import Fraction

import ml_dtypes
import mpmath
import numpy as np
import opt_einsum as oe
import pytest
from hypothesis import event, given
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context

import trn_backend as xp
from tests.support import einsum_structures
from trn_backend import contraction

mpmath.mp.dps = 60
LABELS = "abcd"
MODES = ("native", "fast", "sr", "dd", "bf16x6", "ozaki", "fp64")
FORWARD = (1e-2, 1e-4, 1e-6, 1e-7, 1e-10, 1e-13)
RELATIVE = (1e-2, 1e-5, 1e-7, 1e-10)
BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = {
    "int32": np.dtype("int32"),
    "int64": np.dtype("int64"),
    "float16": np.dtype("float16"),
    "bfloat16": BF16,
    "float32": np.dtype("float32"),
    "float64": np.dtype("float64"),
    "complex64": np.dtype("complex64"),
    "complex128": np.dtype("complex128"),
}
PAIRS = [(d, d) for d in DTYPES] + [
    ("int64", "float32"),
    ("int32", "float32"),
    ("float32", "float64"),
    ("float32", "complex64"),
    ("float64", "complex64"),
    ("int64", "float64"),
    ("float16", "float32"),
    ("bfloat16", "float16"),
    ("int32", "complex128"),
    ("uint32", "float32"),
    ("uint64", "float64"),
]
# exponent ranges of floating entries (+-(1 + m/8) * 2**e) per family and dtype: "cancel" sums cancel, "wide" spans
# the dtype's range (products of up to four entries stay inside it), "tiny" puts products in the subnormal range,
# "huge" puts products of two entries on either side of the dtype's largest value
FAMILIES = ("cancel", "wide", "tiny", "huge")
EXPONENTS = {
    "float16": {"cancel": (-2, 2), "wide": (-3, 3), "tiny": (-7, -4), "huge": (5, 10)},
    "bfloat16": {"cancel": (-2, 2), "wide": (-28, 28), "tiny": (-45, -33), "huge": (56, 70)},
    "float32": {"cancel": (-2, 2), "wide": (-28, 28), "tiny": (-45, -33), "huge": (56, 70)},
    "float64": {"cancel": (-2, 2), "wide": (-200, 200), "tiny": (-300, -240), "huge": (500, 530)},
}
EXPONENTS["complex64"], EXPONENTS["complex128"] = EXPONENTS["float32"], EXPONENTS["float64"]


# --- cases ---


@dataclasses.dataclass
class Case:
    """One call: subscripts (the einsum the entry point computes), NumPy operands, the request as keywords, the
    layout, and what the entry point needs besides (axes, an optimize path, a memory limit, an out dtype...)."""

    subscripts: str
    operands: list[np.ndarray]
    request: dict
    layout: str = "plain"
    family: str = "cancel"
    extra: dict = dataclasses.field(default_factory=dict)
    must_meet: bool | None = None  # whether a refusal fails the case (None: ``_must_meet`` decides)

    @property
    def target(self) -> tuple[str, float] | None:
        for kind in ("target_forward_error", "target_relative_error"):
            if kind in self.request:
                return kind, self.request[kind]
        return None


def _entries(dtype: str, family: str, big: bool) -> st.SearchStrategy:
    if dtype.startswith(("int", "uint")):
        # integers: small ones, or around 2**24 where float32 stops holding them (casts round there)
        return st.integers(2**24 - 3, 2**24 + 5) if big else st.integers(0 if dtype[0] == "u" else -3, 3)
    low, high = EXPONENTS[dtype][family]
    real = st.builds(
        lambda s, m, e: (-1) ** s * (1 + m / 8) * 2.0**e, st.integers(0, 1), st.integers(0, 7), st.integers(low, high)
    )
    if dtype.startswith("complex"):
        return st.builds(complex, real, st.one_of(st.just(0.0), real))
    return real


@st.composite
def _array(draw, dtype: str, shape: tuple[int, ...], family: str, big: bool) -> np.ndarray:
    values = draw(st.lists(_entries(dtype, family, big), min_size=math.prod(shape), max_size=math.prod(shape)))
    to = DTYPES.get(dtype) or np.dtype(dtype)  # the unsigned ones appear in mixed pairs only
    return np.array(values, dtype=np.float64 if dtype == "bfloat16" else to).reshape(shape).astype(to)


@st.composite
def _request(draw, allow_relative: bool = True) -> dict:
    kinds = ["mode", "forward"] + (["relative"] if allow_relative else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "mode":
        return {"precision": draw(st.sampled_from(MODES))}
    if kind == "forward":
        return {"target_forward_error": draw(st.sampled_from(FORWARD))}
    return {"target_relative_error": draw(st.sampled_from(RELATIVE))}


@st.composite
def einsum_cases(draw, max_operands: int = 4, layouts: tuple[str, ...] = ("plain",)) -> Case:
    """A random einsum: 1 to ``max_operands`` operands, repeated labels, labels of one operand only, size-1
    broadcasting, any output order; dtypes from a pair (mixed pairs alternate)."""
    terms, shapes, output = draw(einsum_structures(LABELS, max_operands))
    n = len(terms)
    pair = draw(st.sampled_from(PAIRS))
    family = draw(st.sampled_from(FAMILIES))
    big = n <= 2 and draw(st.booleans())
    operands = [draw(_array(pair[i % 2], s, family, big)) for i, s in enumerate(shapes)]
    layout = draw(st.sampled_from(layouts))
    case = Case(f"{','.join(terms)}->{output}", operands, draw(_request(layout != "sharded")), layout, family)
    _layout_extra(draw, case)
    return case


def _layout_extra(draw, case: Case) -> None:
    """What a layout needs: a memory limit, an out dtype (equal, wider or narrower), a dtype=, constants."""
    dtypes = [op.dtype for op in case.operands]
    result = _result_dtype(dtypes)
    if case.layout == "sliced":  # the output's size or a little more: cotengra slices contracted indices to reach it
        case.extra["memory_limit"] = max(1, math.prod(_out_shape(case))) + draw(st.integers(0, 2))
    elif case.layout == "out":
        # NumPy's same_kind rule (ml_dtypes' bfloat16 also takes complex values: not here, no rounding keeps them)
        same_kind = [
            d for d in DTYPES.values() if np.can_cast(result, d, "same_kind") and (d.kind == "c" or result.kind != "c")
        ]
        case.extra["out"] = draw(st.sampled_from(same_kind))
    elif case.layout == "dtype":
        floats = [DTYPES[n] for n in ("float16", "float32", "float64", "complex64", "complex128")]
        case.extra["dtype"] = draw(
            st.sampled_from([d for d in floats if all(np.can_cast(x, d, "same_kind") for x in dtypes)] or [result])
        )
    elif case.layout == "constants":
        case.extra["constants"] = sorted(draw(st.sets(st.integers(0, len(case.operands) - 1), max_size=2)))


def _result_dtype(dtypes) -> np.dtype:
    return np.dtype(xp.result_type(*(xp.asarray(np.zeros((), d)) for d in dtypes)))


@st.composite
def tensordot_cases(draw) -> Case:
    """tensordot(x1, x2, axes): an int or a pair of axis lists, written as the einsum it computes."""
    nd_a, nd_b = draw(st.integers(0, 3)), draw(st.integers(0, 3))
    a_labels = LABELS[:nd_a]
    k = draw(st.integers(0, min(nd_a, nd_b)))
    free_b = "efg"[: nd_b - k]
    shared = draw(st.permutations(a_labels))[:k] if k else ()
    b_labels = list(shared) + list(free_b)
    b_labels = draw(st.permutations(b_labels)) if draw(st.booleans()) else b_labels
    sizes = {c: draw(st.integers(1, 3)) for c in LABELS + "efg"}
    axes = ([a_labels.index(c) for c in shared], [b_labels.index(c) for c in shared])
    output = "".join(c for c in a_labels if c not in shared) + "".join(c for c in b_labels if c not in shared)
    pair = draw(st.sampled_from(PAIRS))
    family = draw(st.sampled_from(FAMILIES))
    big = draw(st.booleans())
    operands = [
        draw(_array(pair[0], tuple(sizes[c] for c in a_labels), family, big)),
        draw(_array(pair[1], tuple(sizes[c] for c in b_labels), family, big)),
    ]
    layout = draw(st.sampled_from(("plain", "sharded")))
    case = Case(
        f"{a_labels},{''.join(b_labels)}->{output}",
        operands,
        draw(_request(layout != "sharded")),
        layout,
        family,
        {"axes": axes},
    )
    return case


@st.composite
def matmul_cases(draw, vecdot: bool = False) -> Case:
    """matmul (1-D promotion, broadcast batches) or vecdot (the last axis, conjugating x1)."""
    pair = draw(st.sampled_from(PAIRS))
    family = draw(st.sampled_from(FAMILIES))
    big = draw(st.booleans())
    m, k, n, b = (draw(st.integers(1, 3)) for _ in range(4))
    if vecdot:
        batch = draw(st.sampled_from(["", "b"]))
        a_labels, b_labels = batch + "k", draw(st.sampled_from([batch + "k", "k"]))
        output = batch
        sizes = {"b": b, "k": k}
    else:
        a_labels = draw(st.sampled_from(["k", "mk", "bmk"]))
        b_labels = draw(st.sampled_from(["k", "kn", "bkn"]))
        keep = (
            ("b" if "b" in a_labels + b_labels else "")
            + ("m" if "m" in a_labels else "")
            + ("n" if "n" in b_labels else "")
        )
        output = keep
        sizes = {"b": b, "m": m, "k": k, "n": n}
    operands = [
        draw(_array(pair[0], tuple(sizes[c] for c in a_labels), family, big)),
        draw(_array(pair[1], tuple(sizes[c] for c in b_labels), family, big)),
    ]
    layout = draw(st.sampled_from(("plain", "sharded")))
    return Case(
        f"{a_labels},{b_labels}->{output}",
        operands,
        draw(_request(layout != "sharded")),
        layout,
        family,
        {"conj": vecdot},
    )


# --- the oracle: exact values and the expression on |operands| ---


def _exact_value(x) -> tuple[Fraction, Fraction]:
    if isinstance(x, (complex, np.complexfloating)):
        return Fraction(float(np.real(x))), Fraction(float(np.imag(x)))
    if isinstance(x, (int, np.integer)):
        return Fraction(int(x)), Fraction(0)
    return Fraction(float(x)), Fraction(0)


def exact(case: Case) -> tuple[dict, dict]:
    """{output index: (re, im) exact} and {output index: S, the expression on |operands| (mpmath)}."""
    inputs, output = case.subscripts.split("->")
    terms = inputs.split(",")
    sizes: dict[str, int] = {}
    for labels, op in zip(terms, case.operands, strict=True):
        for c, d in zip(labels, op.shape, strict=True):
            sizes[c] = max(sizes.get(c, 1), d)
    names = sorted(sizes)
    tables = []
    for i, op in enumerate(case.operands):
        values = {}
        for idx, v in np.ndenumerate(op):
            re, im = _exact_value(v)
            if case.extra.get("conj") and i == 0:
                im = -im
            values[idx] = (
                re,
                im,
                mpmath.sqrt(
                    mpmath.mpf(re.numerator) / re.denominator * re + mpmath.mpf(im.numerator) / im.denominator * im
                ),
            )
        tables.append(values)
    result = {idx: (Fraction(0), Fraction(0)) for idx in itertools.product(*(range(sizes[c]) for c in output))}
    magnitude = {idx: mpmath.mpf(0) for idx in result}
    for assignment in itertools.product(*(range(sizes[c]) for c in names)):
        at = dict(zip(names, assignment, strict=True))
        re, im, mag = Fraction(1), Fraction(0), mpmath.mpf(1)
        for labels, op, table in zip(terms, case.operands, tables, strict=True):
            a, b, m = table[tuple(at[c] if d > 1 else 0 for c, d in zip(labels, op.shape, strict=True))]
            re, im, mag = re * a - im * b, re * b + im * a, mag * m
        key = tuple(at[c] for c in output)
        result[key] = (result[key][0] + re, result[key][1] + im)
        magnitude[key] += mag
    return result, magnitude


def _wrapped(value: Fraction, dtype: np.dtype) -> Fraction:
    """An integer result as its dtype holds it (modular, NumPy's integer semantics)."""
    bits = dtype.itemsize * 8
    v = int(value) % 2**bits
    return Fraction(v - 2**bits if v >= 2 ** (bits - 1) else v)


def _mp(x: Fraction) -> mpmath.mpf:
    return mpmath.mpf(x.numerator) / x.denominator


def _allowance(case: Case, promised: np.dtype) -> mpmath.mpf:
    """What gradual underflow of product terms may add beyond relative bounds (as
    ``test_whole.allowance``): the smallest normal of the narrowest dtype involved per scalar
    rounding, carried by the largest entries and every label size. Only the subnormal-product family gets it (a
    result below the normal range raises under a target: the entries this test reaches are checked as they
    are)."""
    if case.family != "tiny":
        return mpmath.mpf(0)
    sizes: dict[str, int] = {}
    for labels, op in zip(case.subscripts.split("->")[0].split(","), case.operands, strict=True):
        for c, d in zip(labels, op.shape, strict=True):
            sizes[c] = max(sizes.get(c, 1), d)
    total = math.prod(sizes.values())
    largest = math.prod(
        max(1.0, float(np.max(np.abs(op.astype(np.complex128))))) if op.size else 1.0 for op in case.operands
    )
    tiny = max(_tiny(d) for d in [promised, *(op.dtype for op in case.operands)])
    return mpmath.mpf(tiny) * (len(case.operands) + 1) * total * total * mpmath.mpf(largest)


def _tiny(dtype: np.dtype) -> float:
    """The smallest normal of an inexact dtype (0 for integers)."""
    if dtype == BF16:
        return float(ml_dtypes.finfo(BF16).tiny)
    return float(np.finfo(dtype).tiny) if dtype.kind in "fc" else 0.0


# --- the checks ---


def check(
    case: Case, run: Callable[[], object], claimed: Callable[[], float | None], *, promised_dtype: np.dtype
) -> None:
    """Run the call twice: the first compiles its program, the repeat runs the one the first kept (the front
    doors' fast paths); each result must be within what it promised, and a refusal only where no plan exists."""
    for _ in range(2):
        _check_once(case, run, claimed, promised_dtype)


def _check_once(
    case: Case, run: Callable[[], object], claimed: Callable[[], float | None], promised_dtype: np.dtype
) -> None:
    kind = case.target[0] if case.target else "mode"
    try:
        got = run()
    except xp.PrecisionError as e:
        if case.must_meet if case.must_meet is not None else _must_meet(case, promised_dtype):
            raise AssertionError(f"a target that a plan meets was refused: {case}") from e
        _event(f"{kind}: refused")
        return
    _event(f"{kind}: checked")
    got = np.asarray(got)
    assert got.dtype == promised_dtype, (got.dtype, promised_dtype, case)
    values, magnitudes = exact(case)
    computed = case.extra.get("computed", promised_dtype)
    if computed.kind in "iu":  # integer arithmetic is modular (NumPy's semantics): the reference wraps too
        values = {idx: (_wrapped(re, computed), im) for idx, (re, im) in values.items()}
    if promised_dtype.kind in "iu":
        for idx, (re, _) in values.items():
            entry = got[idx] if got.ndim else got[()]
            assert Fraction(int(entry)) == _wrapped(re, promised_dtype), (case, idx, entry)
        return
    target = case.target
    if target is None:
        if not _operands_in_range(case):
            return  # a mode's bound is published for operands within the range of the dtype they are cast to
        bound = claimed()
        if bound is None:  # no bound published (native bf16/fp16): nothing promised
            return
        limit = mpmath.mpf(bound)
    elif target[0] == "target_forward_error":
        limit = mpmath.mpf(target[1])
    else:
        limit = None
    slack = _allowance(case, promised_dtype)
    for idx, (re, im) in values.items():
        entry = got[idx] if got.ndim else got[()]
        if target is None and not _in_range(re, im, magnitudes[idx], promised_dtype):
            continue  # a mode's bound is published for results (and |A||B|) in the dtype's normal range only
        assert np.isfinite(entry), f"{case}: entry {idx} is {entry}, exact {float(re)}+{float(im)}j"
        g_re, g_im = _exact_value(entry.astype(np.complex128) if promised_dtype.kind == "c" else float(entry))
        err = mpmath.sqrt(_mp(g_re - re) ** 2 + _mp(g_im - im) ** 2)
        if limit is None:  # relative: against the exact entry, no allowance (the check must refuse underflow)
            allowed = mpmath.mpf(target[1]) * mpmath.sqrt(_mp(re) ** 2 + _mp(im) ** 2)
        else:
            allowed = limit * magnitudes[idx] + slack
        assert err <= allowed * (1 + mpmath.mpf(10) ** -40), (
            f"{case}: entry {idx} is {entry}, exact {float(re)}+{float(im)}j, error {float(err):.3g} over the "
            f"promised {float(allowed):.3g}"
        )


def _event(what: str) -> None:
    """A hypothesis event (``--hypothesis-show-statistics`` counts them), where a hypothesis test runs."""
    if currently_in_test_context():
        event(what)


def _in_range(re: Fraction, im: Fraction, magnitude: mpmath.mpf, dtype: np.dtype) -> bool:
    """Whether an exact entry and its |A||B| are finite, and the entry zero or normal, in ``dtype``."""
    real = {np.dtype(np.complex64): np.dtype(np.float32), np.dtype(np.complex128): np.dtype(np.float64)}.get(
        dtype, dtype
    )
    info = ml_dtypes.finfo(real) if real == BF16 else np.finfo(real)
    parts = [abs(re), abs(im)]
    return magnitude < float(info.max) and all(p == 0 or float(info.tiny) <= p < float(info.max) for p in parts)


def _operands_in_range(case: Case) -> bool:
    """Whether every operand entry is zero or normal in the dtype the call casts it to (dtype=, else the
    operands' promotion)."""
    to = (
        case.extra["dtype"]
        if case.layout == "dtype"
        else case.extra.get("computed") or _result_dtype([op.dtype for op in case.operands])
    )
    if to.kind not in "fc" and to != BF16:
        return True
    for op in case.operands:
        for v in np.asarray(op).astype(np.complex128).ravel():
            if not _in_range(Fraction(float(v.real)), Fraction(float(v.imag)), mpmath.mpf(0), to):
                return False
    return True


def _must_meet(case: Case, delivered: np.dtype) -> bool:
    """Whether a plan meets the target for sure: a forward target of at least twice the delivered dtype's unit
    roundoff (the final rounding, with every step carried in float64 far below it), on data whose results stay in
    the normal range of the delivered dtype (the cancelling family; float16's normal range is too short)."""
    target = case.target
    if target is None or target[0] != "target_forward_error" or case.family != "cancel":
        return False
    if delivered.kind in "iu":
        return True
    if delivered in (np.float16,):
        return False
    real = {np.dtype(np.complex64): np.dtype(np.float32), np.dtype(np.complex128): np.dtype(np.float64)}.get(
        delivered, delivered
    )
    unit = float(ml_dtypes.finfo(real).eps) / 2
    return target[1] >= 2 * unit


# --- adapters: how each entry point is called, and what it promised ---


def _arrays(case: Case) -> list[xp.NeuronArray]:
    return [xp.asarray(op) for op in case.operands]


def _path(case: Case) -> dict:
    """The explicit path a case asks for, as a keyword (none: the entry point's default)."""
    return {"optimize": case.extra["optimize"]} if "optimize" in case.extra else {}


def _explained(case: Case, ops, **kw) -> Callable[[], float | None]:
    """The bound explain() reports for this call (under a mode)."""

    def bound() -> float | None:
        return xp.explain(case.subscripts, *ops, precision=case.request["precision"], **_path(case), **kw).bound

    return bound


def _promised(case: Case) -> np.dtype:
    if "out" in case.extra:
        return np.dtype(case.extra["out"])
    if "dtype" in case.extra:
        return np.dtype(case.extra["dtype"])
    return _result_dtype([op.dtype for op in case.operands])


def _sharded(case: Case, call: Callable[[list], object], explain_kw: dict | None = None) -> None:
    """The call on 2 ranks, the first operand partitioned along its first axis (where it has one)."""
    import trn_backend.distributed as td
    from tests.distributed_support import spmd

    def body(rank: int):
        ops = _arrays(case)
        if ops and ops[0].ndim:
            ops[0] = td.shard(ops[0], 0)
        try:
            out = call(ops)
        except xp.PrecisionError as e:
            return e
        bound = None
        if "precision" in case.request:
            bound = xp.explain(
                case.subscripts, *ops, precision=case.request["precision"], **_path(case), **(explain_kw or {})
            ).bound
        return np.asarray(out), bound

    first = spmd(2, body)[0]

    def run():
        if isinstance(first, Exception):
            raise first
        return first[0]

    check(case, run, lambda: first[1], promised_dtype=_promised(case))


def _einsum(case: Case) -> None:
    if case.layout == "sharded":
        return _sharded(case, lambda ops: xp.einsum(case.subscripts, *ops, **_path(case), **case.request))
    ops = _arrays(case)
    check(
        case,
        lambda: xp.einsum(case.subscripts, *ops, **_path(case), **case.request),
        _explained(case, ops),
        promised_dtype=_promised(case),
    )


def _binary(case: Case, call: Callable[[list], object]) -> None:
    """A two-operand front door (``call`` on the NeuronArrays), plain or sharded."""
    if case.layout == "sharded":
        return _sharded(case, call)
    ops = _arrays(case)
    check(case, lambda: call(ops), _explained(case, ops), promised_dtype=_promised(case))


def _tensordot(case: Case) -> None:
    _binary(case, lambda ops: xp.tensordot(ops[0], ops[1], axes=case.extra["axes"], **case.request))


def _matmul(case: Case) -> None:
    _binary(case, lambda ops: xp.matmul(ops[0], ops[1], **case.request))


def _vecdot(case: Case) -> None:
    _binary(case, lambda ops: xp.vecdot(ops[0], ops[1], **case.request))


def _multi_einsum(case: Case) -> None:
    ops = _arrays(case)
    twice = [(case.subscripts, *ops), (case.subscripts, *ops)]  # identical: one batched program

    def run():
        first, second = xp.multi_einsum(*twice, **case.request)
        if case.request.get("precision") != "sr":  # (sr draws its own random bits for each)
            assert np.array_equal(np.asarray(first), np.asarray(second), equal_nan=True)
        return first

    check(case, run, _explained(case, ops), promised_dtype=_promised(case))


def _contract(case: Case) -> None:
    if case.layout == "sharded":
        return _sharded(case, lambda ops: xp.contract(case.subscripts, *ops, **_path(case), **case.request))
    ops = _arrays(case)
    kw, explain_kw = dict(_path(case)), {}
    if case.layout == "sliced":
        kw["memory_limit"] = explain_kw["memory_limit"] = case.extra["memory_limit"]
    elif case.layout == "unlimited":
        kw["memory_limit"] = None
    elif case.layout == "out":
        out = xp.asarray(np.zeros(_out_shape(case), dtype=case.extra["out"]))
        kw["out"], explain_kw["out"] = out, case.extra["out"]
        case.extra["computed"] = _result_dtype([op.dtype for op in case.operands])
        if not np.can_cast(_result_dtype([op.dtype for op in case.operands]), case.extra["out"], "safe"):
            return  # contract's out= takes NumPy einsum's 'safe' rule: numpy.einsum covers same_kind
    try:
        check(
            case,
            lambda: xp.contract(case.subscripts, *ops, **kw, **case.request),
            _explained(case, ops, **explain_kw),
            promised_dtype=_promised(case),
        )
    except ValueError as e:  # cotengra found no slicing within the limit: not a precision matter
        if "memory_limit" not in str(e) or isinstance(e, xp.PrecisionError):
            raise


def _out_shape(case: Case) -> tuple[int, ...]:
    values, _ = exact(dataclasses.replace(case, operands=[np.zeros(op.shape) for op in case.operands]))
    inputs, output = case.subscripts.split("->")
    sizes: dict[str, int] = {}
    for labels, op in zip(inputs.split(","), case.operands, strict=True):
        for c, d in zip(labels, op.shape, strict=True):
            sizes[c] = max(sizes.get(c, 1), d)
    return tuple(sizes[c] for c in output)


def _contract_expression(case: Case) -> None:
    ops = _arrays(case)
    constants = case.extra.get("constants", []) if case.layout == "constants" else []
    shapes = [ops[i] if i in constants else op.shape for i, op in enumerate(ops)]
    explain_kw = {}

    def run():
        expr = xp.contract_expression(case.subscripts, *shapes, constants=constants, **_path(case), **case.request)
        args = [op for i, op in enumerate(ops) if i not in constants]
        if case.layout == "out":
            if not np.can_cast(_result_dtype([op.dtype for op in case.operands]), case.extra["out"], "safe"):
                raise _Skip
            out = xp.asarray(np.zeros(_out_shape(case), dtype=case.extra["out"]))
            return expr(*args, out=out)
        if case.layout == "shared":
            with oe.shared_intermediates():
                expr(*args)
                return expr(*args)  # the second call reuses the first's steps
        first = expr(*args)
        if constants:  # the folded constants are reused: the same result again
            assert np.array_equal(np.asarray(expr(*args)), np.asarray(first), equal_nan=True)
        return first

    if case.layout == "out":
        explain_kw["out"] = case.extra["out"]
        case.extra["computed"] = _result_dtype([op.dtype for op in case.operands])
    try:
        check(case, run, _explained(case, ops, **explain_kw), promised_dtype=_promised(case))
    except _Skip:
        pass


class _Skip(Exception):
    """A case the entry point does not take (contract's out= under a rule numpy.einsum covers)."""


def _numpy_einsum(case: Case) -> None:
    ops = _arrays(case)
    kw, explain_kw = {}, {}
    if case.layout == "dtype":
        kw.update(dtype=case.extra["dtype"], casting="same_kind")
        explain_kw["dtype"] = case.extra["dtype"]
    elif case.layout == "out":
        out = xp.asarray(np.zeros(_out_shape(case), dtype=case.extra["out"]))
        kw.update(out=out, casting="same_kind")
        # as NumPy: computed in the promotion of the operands' dtypes with out's, then rounded into out
        case.extra["computed"] = _result_dtype([*(op.dtype for op in case.operands), case.extra["out"]])
        explain_kw["dtype"], explain_kw["out"] = case.extra["computed"], case.extra["out"]
    if case.extra.get("block"):  # the request as a precision block around the call, else as its keywords

        def run():
            with _in_block(case):
                return np.einsum(case.subscripts, *ops, **kw, **_path(case))
    else:

        def run():
            return np.einsum(case.subscripts, *ops, **kw, **_path(case), **case.request)

    check(case, run, _explained(case, ops, **explain_kw), promised_dtype=_promised(case))


def _in_block(case: Case):
    """A ``precision`` block of the case's request (opt_einsum's own calls take no precision keyword)."""
    request = dict(case.request)
    return xp.precision(request.pop("precision", None), **request)


def _opt_einsum_route(case: Case) -> None:
    """opt_einsum's own loop: each call its own expression (what explain(route="opt_einsum") reports)."""
    ops = _arrays(case)
    calls = len(oe.contract_path(case.subscripts, *ops)[0])
    target = case.target
    if target is not None and target[0] == "target_relative_error" and calls > 1:
        return  # a relative target holds for each call alone: nothing is promised for the whole

    def run():
        with _in_block(case):
            return oe.contract(case.subscripts, *ops, backend="trn")

    # each call computes in its own operands' promotion: a target is sure to be met where that is the whole's
    one_dtype = len({op.dtype for op in case.operands}) == 1
    if target is not None and target[0] == "target_forward_error" and calls > 1:
        # each call meets the target alone: their composition is what is promised for the whole
        composed = (1 + target[1]) ** calls - 1
        whole = dataclasses.replace(
            case, request={"target_forward_error": composed}, must_meet=one_dtype and _must_meet(case, _promised(case))
        )
        return check(whole, run, lambda: None, promised_dtype=_promised(case))
    mode = {"precision": case.request["precision"]} if "precision" in case.request else {}
    if not one_dtype:
        case = dataclasses.replace(case, must_meet=False)
    check(
        case,
        run,
        lambda: xp.explain(case.subscripts, *ops, route="opt_einsum", **mode).bound,
        promised_dtype=_promised(case),
    )


def _opt_einsum_tensordot(case: Case) -> None:
    """Two operands: opt_einsum's loop makes one call (its tensordot where the pair is BLAS-able, else its
    einsum), an expression of its own."""
    ops = _arrays(case)

    def run():
        with _in_block(case):
            return oe.contract(case.subscripts, *ops, backend="trn")

    check(case, run, _explained(case, ops), promised_dtype=_promised(case))


ADAPTERS: dict[str, tuple[Callable[[Case], None], st.SearchStrategy]] = {
    "einsum()": (_einsum, einsum_cases(layouts=("plain", "sharded"))),
    "tensordot()": (_tensordot, tensordot_cases()),
    "matmul()": (_matmul, matmul_cases()),
    "vecdot()": (_vecdot, matmul_cases(vecdot=True)),
    "multi_einsum()": (_multi_einsum, einsum_cases(max_operands=3)),
    "contract()": (_contract, einsum_cases(layouts=("plain", "sliced", "unlimited", "out", "sharded"))),
    "contract_expression(...)()": (_contract_expression, einsum_cases(layouts=("plain", "constants", "out", "shared"))),
    "numpy.einsum": (
        _numpy_einsum,
        einsum_cases(layouts=("plain", "out", "dtype")).flatmap(
            lambda case: st.booleans().map(
                lambda block: dataclasses.replace(case, extra={**case.extra, "block": block})
            )
        ),
    ),
    "opt_einsum backend: einsum": (_opt_einsum_route, einsum_cases(max_operands=3)),
    "opt_einsum backend: tensordot": (_opt_einsum_tensordot, einsum_cases(max_operands=2)),
}


def test_every_entry_point_has_an_adapter():
    assert set(ADAPTERS) == set(contraction.ENTRY_POINTS), (
        "a contraction entry point without an adapter here is not tested for its precision promise"
    )


@pytest.mark.heavy
@pytest.mark.parametrize("name", sorted(ADAPTERS))
@given(data=st.data())
def test_every_route_keeps_its_promise(name, data):
    adapter, cases = ADAPTERS[name]
    adapter(data.draw(cases))


# --- one witness per class of fault (see the module docstring) ---


def _f32(*values) -> np.ndarray:
    return np.array(values, dtype=np.float32)


# a chain whose first product rounds (1 + 2**-22 + 2**-30 and 1 - 2**-30 are no float32) and whose second cancels:
# exactly 2**-22 + 2**-29; each step alone is accurate relative to its own inputs, the whole only where it is
# carried in float64
CHAIN = (
    "ij,jk,kl->il",
    [_f32(1, 2.0**-30).reshape(1, 2), _f32(1 + 2.0**-22, 1, 1, -1).reshape(2, 2), _f32(1, -1).reshape(2, 1)],
)
LEFT_TO_RIGHT = {"optimize": [(0, 1), (0, 1)]}
# complex64 products whose textbook float32 result is 1.84 u off (the sqrt(5) u class), above fp64's K = 1 bound
Z1, Z2 = (
    np.array([-0.7185139060020447 + 0.6203960180282593j], np.complex64),
    np.array([-0.704086422920227 - 0.8082969784736633j], np.complex64),
)
WITNESSES = {
    # 1. fallbacks to opt_einsum's own loop: constants=, out=, shared intermediates, memory_limit=None
    "constants": (
        _contract_expression,
        Case(*CHAIN, {"target_relative_error": 1e-6}, "constants", extra={"constants": [0, 1], **LEFT_TO_RIGHT}),
    ),
    "expression out=": (
        _contract_expression,
        Case(*CHAIN, {"target_relative_error": 1e-6}, "out", extra={"out": np.dtype("float32"), **LEFT_TO_RIGHT}),
    ),
    "shared intermediates": (
        _contract_expression,
        Case(*CHAIN, {"target_relative_error": 1e-6}, "shared", extra=dict(LEFT_TO_RIGHT)),
    ),
    "memory_limit=None": (
        _contract,
        Case(*CHAIN, {"target_relative_error": 1e-6}, "unlimited", extra=dict(LEFT_TO_RIGHT)),
    ),
    # 2. two operands with a pre-sum, mixed dtypes
    "float32 x complex64": (
        _einsum,
        Case(
            "ij,k->k",
            [_f32(1, 2, 3, 4).reshape(2, 2), np.array([1 + 1j, 2 - 3j], np.complex64)],
            {"target_relative_error": 1e-3},
            must_meet=True,
        ),
    ),
    "int64 x float64": (
        _einsum,
        Case(
            "ij,k->k",
            [np.arange(4).reshape(2, 2), np.array([1.0, 2.0])],
            {"target_relative_error": 1e-3},
            must_meet=True,
        ),
    ),
    "float32 x float64": (
        _einsum,
        Case(
            "ij,k->k",
            [_f32(1, 2, 3, 4).reshape(2, 2), np.array([1.0, 2.0 + 2.0**-40])],
            {"target_relative_error": 1e-10},
            must_meet=True,
        ),
    ),
    # 3. casts nobody counted
    "int64 to float32": (
        _einsum,
        Case("i,i->", [np.array([2**24 + 1, -(2**24) + 2], np.int64), _f32(1, 1)], {"target_relative_error": 1e-6}),
    ),
    # (each float64 operand a little under 1 + u_fp32: rounded to float32, each loses u, the product 2u)
    "dtype=float32 on float64": (
        _numpy_einsum,
        Case(
            "i,i->",
            [np.array([1 + 2.0**-24 - 2.0**-40]), np.array([1 + 2.0**-24 - 2.0**-40])],
            {"target_forward_error": 1e-7},
            "dtype",
            extra={"dtype": np.dtype("float32"), "block": True},
        ),
    ),
    "integer result into float32 out=": (
        _numpy_einsum,
        Case(
            "i,i->",
            [np.array([2**24 + 1, 2], np.int64), np.array([1, 1], np.int64)],
            {"target_relative_error": 1e-9},
            "out",
            extra={"out": np.dtype("float32"), "block": True},
        ),
    ),
    # 4. the range of a narrower out=
    "float16 out= overflows": (
        _numpy_einsum,
        Case(
            "i,i->",
            [np.array([300.0, 300.0]), np.array([300.0, 300.0])],
            {"target_relative_error": 1e-2},
            "out",
            extra={"out": np.dtype("float16"), "block": True},
        ),
    ),
    "float16 out= subnormal": (
        _numpy_einsum,
        Case(
            "i,i->",
            [np.array([2.0**-13, 0.0]), np.array([2.0**-10 * 1.3, 0.0])],
            {"target_relative_error": 1e-2},
            "out",
            extra={"out": np.dtype("float16"), "block": True},
        ),
    ),
    # and under a forward target, where no cast rounds: a result beyond float32's range came back inf, inf - inf
    # of overflowing products came back nan (exactly 3), and a result below float32's normal range came back 40%
    # off (|A||B| is as small)
    "forward target, result overflows": (
        _matmul,
        Case(
            "mk,kn->mn",
            [_f32(3e19, 2e19).reshape(1, 2), _f32(1e19, 1e19).reshape(2, 1)],
            {"target_forward_error": 1e-2},
            must_meet=False,
        ),
    ),
    "forward target, products overflow": (
        _einsum,
        Case("k,k->", [_f32(1e20, 1e20, 3.0), _f32(1e20, -1e20, 1.0)], {"target_forward_error": 1e-6}, must_meet=False),
    ),
    "forward target, subnormal result": (
        _matmul,
        Case(
            "mk,kn->mn",
            [_f32(1e-25, 1e-25).reshape(1, 2), _f32(3e-25, 1e-20).reshape(2, 1)],
            {"target_forward_error": 1e-2},
            must_meet=False,
        ),
    ),
    # 5. complex products with nothing to contract
    "complex Hadamard under fp64": (_einsum, Case("i,i->i", [Z1, Z2], {"precision": "fp64"})),
    "complex outer product under a target": (
        _tensordot,
        Case("a,e->ae", [Z1, Z2], {"target_forward_error": 1e-7}, extra={"axes": ([], [])}, must_meet=True),
    ),
    # 6. a sharded one-operand sum under a float64 mode: each rank's partial sum rounded to float32, then their
    # sum, was 1.04e-7 off against fp64's 6e-8
    "sharded sum under fp64": (
        _einsum,
        Case(
            "ij->j",
            [np.array([[1.0, 1.0], [2.0**-24, -(2.0**-25)], [2.0**-25, 2.0**-26], [2.0**-26, 1.0]], np.float32)],
            {"precision": "fp64"},
            "sharded",
        ),
    ),
    # and the opposite fault, a target that carrying float64 meets: 1e-7 on float32 data with a pre-sum, or sliced
    "1e-7 with a pre-sum": (
        _einsum,
        Case("ij,j->j", [_f32(1, 2, 3, 4).reshape(2, 2), _f32(1, 2)], {"target_forward_error": 1e-7}, must_meet=True),
    ),
    "1e-7 sliced": (
        _contract,
        Case(
            *CHAIN, {"target_forward_error": 1e-7}, "sliced", extra={"memory_limit": 1, **LEFT_TO_RIGHT}, must_meet=True
        ),
    ),
}


@pytest.mark.parametrize("name", sorted(WITNESSES))
def test_each_class_of_fault(name):
    adapter, case = WITNESSES[name]
    adapter(case)
