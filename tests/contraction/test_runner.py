"""The runner (``contraction.runner``): inf and nan through complex programs on every entry point.

A complex program checks its native products' inf and nan entries once, on its result, and runs again with every
step checked where that result is not finite (``runner.partial``). Whatever the route, the result must be what
the textbook complex product gives along the same path. The oracle runs that path in NumPy: opt_einsum's
contraction list for the path, each pairwise step ``numpy.einsum(..., optimize=False)``, whose loop sums NumPy's
elementwise complex products (ar br - ai bi) + (ar bi + ai br)j without BLAS. Where an inf or nan lands in a step
does not depend on the order of its sum, so the comparison is exact for non-finite parts and within a relative
1e-12 for finite ones. The networks are the tensor networks of cotengra and quimb: every label in two operands,
or in one operand and the output (no label summed within one operand, no repeated label in a term), so that no
route sums within an operand first, which the textbook product of the whole step would not.

``ROUTES`` has an adapter for every entry point of ``contraction.ENTRY_POINTS``
(``test_every_entry_point_has_a_route`` fails until a new one has one).
"""

from __future__ import annotations

from collections.abc import Callable

import cotengra as ctg
import numpy as np
import opt_einsum as oe
import pytest
from hypothesis import given
from hypothesis import strategies as st

import trn_backend as xp
from trn_backend import contraction
from trn_backend.kernels import reference

FINITE = (1.0, -2.0, 0.5, 0.0, 3.0)
SPECIAL = (np.inf, -np.inf, np.nan)
LABELS = "abcdef"


def _complex(re: list[float], im: list[float]) -> np.ndarray:
    out = np.empty(len(re), dtype=np.complex128)
    out.real, out.imag = re, im  # part by part: re + 1j * im would turn inf * 1j into nan + infj
    return out


@st.composite
def networks(draw, min_operands: int = 2, max_operands: int = 4):
    """(subscripts, complex128 operands): each label in two operands, or in one operand and the output; finite
    values, with one to three parts of entries set to inf or nan in about half of the networks (where a lone
    special value lands is where the textbook product and a GEMM differ most)."""
    n = draw(st.integers(min_operands, max_operands))
    terms: list[list[str]] = [[] for _ in range(n)]
    output: list[str] = []
    for c in LABELS[: draw(st.integers(n - 1, len(LABELS)))]:
        if draw(st.booleans()):
            i, j = draw(st.lists(st.integers(0, n - 1), min_size=2, max_size=2, unique=True))
            terms[i].append(c)
            terms[j].append(c)
        else:
            terms[draw(st.integers(0, n - 1))].append(c)
            output.append(c)
    sizes = {c: draw(st.integers(1, 3)) for c in LABELS}
    operands = []
    for term in terms:
        shape = tuple(sizes[c] for c in term)
        count = int(np.prod(shape, dtype=int))
        parts = [draw(st.lists(st.sampled_from(FINITE), min_size=count, max_size=count)) for _ in range(2)]
        operands.append(_complex(*parts).reshape(shape))
    if draw(st.booleans()):
        for _ in range(draw(st.integers(1, 3))):
            x = operands[draw(st.integers(0, n - 1))].reshape(-1)  # a view
            part = x.real if draw(st.booleans()) else x.imag
            part[draw(st.integers(0, x.size - 1))] = draw(st.sampled_from(SPECIAL))
    order = draw(st.permutations(output))
    return ",".join("".join(t) for t in terms) + "->" + "".join(order), operands


@st.composite
def paths(draw, operands: int) -> list[tuple[int, int]]:
    """A pairwise path in opt_einsum's form: the positions of the pair contracted at each step."""
    path = []
    for remaining in range(operands, 1, -1):
        path.append(tuple(sorted(draw(st.lists(st.integers(0, remaining - 1), min_size=2, max_size=2, unique=True)))))
    return path


def textbook(subscripts: str, operands: list[np.ndarray], path: object) -> np.ndarray:
    """The contraction along ``path`` (opt_einsum's optimizer argument), each step NumPy's textbook loop."""
    _, info = oe.contract_path(subscripts, *operands, optimize=path)
    held = list(operands)
    for positions, _, step, _, _ in info.contraction_list:
        taken = [held.pop(i) for i in sorted(positions, reverse=True)]
        with np.errstate(all="ignore"):
            held.append(np.einsum(step, *taken, optimize=False))
    return held[0]


def assert_like_textbook(result: object, expected: np.ndarray) -> None:
    got = np.asarray(result)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    for part in ("real", "imag"):
        g, e = getattr(got, part), getattr(expected, part)
        assert np.array_equal(np.isnan(g), np.isnan(e)), (part, got, expected)
        assert np.array_equal(np.isposinf(g), np.isposinf(e)) and np.array_equal(np.isneginf(g), np.isneginf(e)), (
            part,
            got,
            expected,
        )
        finite = np.isfinite(e)
        np.testing.assert_allclose(g[finite], e[finite], rtol=1e-12, atol=1e-12)


# --- one adapter per entry point: (call on NeuronArrays, the path the call takes) ---


def _tensordot_axes(subscripts: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    a, b = subscripts.split("->")[0].split(",")
    shared = [c for c in a if c in b]
    return tuple(a.index(c) for c in shared), tuple(b.index(c) for c in shared)


def _tensordot_subscripts(subscripts: str) -> str:
    """The same pair with tensordot's output order (x1's free labels, then x2's)."""
    a, b = subscripts.split("->")[0].split(",")
    return f"{a},{b}->" + "".join(c for c in a + b if (a + b).count(c) == 1)


Route = Callable[[st.DataObject], None]


def _multi_step(call: Callable[[str, list, object], object], count: tuple[int, int] = (2, 4)) -> Route:
    """A route that takes an explicit path: a drawn network (``count``: the fewest and most operands) along a
    drawn path."""

    def route(data: st.DataObject) -> None:
        subscripts, operands = data.draw(networks(*count))
        path = data.draw(paths(len(operands)))
        result = call(subscripts, [xp.asarray(x) for x in operands], path)
        assert_like_textbook(result, textbook(subscripts, operands, path))

    return route


def _default_path(call: Callable[[str, list], object]) -> Route:
    """A route without a path argument: its default, opt_einsum's "auto", for the oracle too."""

    def route(data: st.DataObject) -> None:
        subscripts, operands = data.draw(networks())
        result = call(subscripts, [xp.asarray(x) for x in operands])
        assert_like_textbook(result, textbook(subscripts, operands, "auto"))

    return route


def _tensordot(data: st.DataObject) -> None:
    subscripts, operands = data.draw(networks(2, 2))
    subscripts = _tensordot_subscripts(subscripts)
    result = xp.tensordot(*(xp.asarray(x) for x in operands), axes=_tensordot_axes(subscripts))
    assert_like_textbook(result, textbook(subscripts, operands, "auto"))


def _matmul(data: st.DataObject) -> None:
    m, k, n = (data.draw(st.integers(1, 3)) for _ in range(3))
    values = st.sampled_from(FINITE + SPECIAL)
    a, b = (
        _complex(*(data.draw(st.lists(values, min_size=r * c, max_size=r * c)) for _ in range(2))).reshape(r, c)
        for r, c in ((m, k), (k, n))
    )
    assert_like_textbook(xp.matmul(xp.asarray(a), xp.asarray(b)), textbook("ik,kj->ij", [a, b], "auto"))


def _vecdot(data: st.DataObject) -> None:
    k = data.draw(st.integers(1, 4))
    values = st.sampled_from(FINITE + SPECIAL)
    a, b = (_complex(*(data.draw(st.lists(values, min_size=k, max_size=k)) for _ in range(2))) for _ in range(2))
    assert_like_textbook(xp.vecdot(xp.asarray(a), xp.asarray(b)), textbook("i,i->", [np.conj(a), b], "auto"))


ROUTES: dict[str, Route] = {
    "einsum()": _multi_step(lambda s, ops, path: xp.einsum(s, *ops, optimize=path)),
    "contract()": _multi_step(lambda s, ops, path: xp.contract(s, *ops, optimize=path)),
    "contract_expression(...)()": _multi_step(
        lambda s, ops, path: xp.contract_expression(s, *(x.shape for x in ops), optimize=path)(*ops)
    ),
    "numpy.einsum": _multi_step(lambda s, ops, path: np.einsum(s, *ops, optimize=["einsum_path", *path])),
    "opt_einsum backend: einsum": _multi_step(lambda s, ops, path: oe.contract(s, *ops, optimize=path, backend="trn")),
    "opt_einsum backend: tensordot": _multi_step(
        lambda s, ops, path: oe.contract(s, *ops, optimize=path, backend="trn"), count=(2, 2)
    ),
    "multi_einsum()": _default_path(lambda s, ops: xp.multi_einsum((s, *ops))[0]),
    "tensordot()": _tensordot,
    "matmul()": _matmul,
    "vecdot()": _vecdot,
}


def test_every_entry_point_has_a_route():
    assert set(ROUTES) == set(contraction.ENTRY_POINTS), (
        "a contraction entry point without a route here is not tested for its inf and nan entries"
    )


@pytest.mark.parametrize("name", sorted(ROUTES))
@given(data=st.data())
def test_inf_and_nan_land_as_the_textbook_product_puts_them(name: str, data: st.DataObject) -> None:
    ROUTES[name](data)


LAYOUTS = ("constants", "out", "numpy.einsum out", "numpy.einsum dtype")


def _in_layout(layout: str, subscripts: str, operands: list[np.ndarray], path: list) -> object:
    """The contraction along ``path`` with folded constants (operand 0), out=, or NumPy's out= or dtype=."""
    ops = [xp.asarray(x) for x in operands]
    shape = textbook(subscripts, operands, path).shape
    if layout == "constants":
        expr = xp.contract_expression(
            subscripts, operands[0], *(x.shape for x in ops[1:]), constants=[0], optimize=path
        )
        return expr(*ops[1:])
    if layout == "out":
        result = xp.zeros(shape, dtype=xp.complex128)
        xp.contract(subscripts, *ops, optimize=path, out=result)
        return result
    if layout == "numpy.einsum out":
        result = xp.zeros(shape, dtype=xp.complex128)
        np.einsum(subscripts, *ops, optimize=["einsum_path", *path], out=result)
        return result
    return np.einsum(subscripts, *ops, optimize=["einsum_path", *path], dtype=np.complex128)


@pytest.mark.parametrize("layout", LAYOUTS)
@given(data=st.data())
def test_the_layouts_of_a_program_keep_the_textbook_pattern(layout: str, data: st.DataObject) -> None:
    """Folded constants (steps run before the call, checked each), a final rounding into out= and NumPy's dtype=
    around the deferred check: the same inf and nan as the textbook product along the path."""
    subscripts, operands = data.draw(networks())
    path = data.draw(paths(len(operands)))
    assert_like_textbook(_in_layout(layout, subscripts, operands, path), textbook(subscripts, operands, path))


# --- the deferred check itself ---

CHAIN = "ab,bc,cd->ad"


def _chain(special: float | None) -> list[np.ndarray]:
    rng = np.random.default_rng(5)
    ops = [rng.normal(size=(3, 3)) + 1j * rng.normal(size=(3, 3)) for _ in range(3)]
    if special is not None:
        ops[1][1, 2] = complex(special, 0.0)
    return ops


def test_a_finite_complex_program_checks_only_its_result(monkeypatch):
    checks = []
    real = reference.textbook_specials
    monkeypatch.setattr(reference, "textbook_specials", lambda c, a, b: checks.append(1) or real(c, a, b))
    ops = _chain(None)
    result = xp.einsum(CHAIN, *(xp.asarray(x) for x in ops), optimize=[(0, 1), (0, 1)])
    assert checks == []
    np.testing.assert_allclose(np.asarray(result), ops[0] @ ops[1] @ ops[2], rtol=1e-12)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("special", [np.inf, -np.inf, np.nan])
def test_an_inf_in_the_chain_lands_as_the_textbook_product_puts_it_in_every_layout(layout, special):
    ops, path = _chain(special), [(0, 1), (0, 1)]
    assert_like_textbook(_in_layout(layout, CHAIN, ops, path), textbook(CHAIN, ops, path))


@pytest.mark.parametrize("special", [np.inf, -np.inf, np.nan])
def test_an_inf_or_nan_operand_runs_the_program_again_with_every_step_checked(monkeypatch, special):
    checks = []
    real = reference.textbook_specials
    monkeypatch.setattr(reference, "textbook_specials", lambda c, a, b: checks.append(1) or real(c, a, b))
    ops = _chain(special)
    path = [(0, 1), (0, 1)]
    result = xp.einsum(CHAIN, *(xp.asarray(x) for x in ops), optimize=path)
    assert len(checks) == 2  # the second run: both steps
    assert_like_textbook(result, textbook(CHAIN, ops, path))


def test_an_overflow_from_finite_operands_is_kept_as_the_product_gives_it():
    # the result is not finite, so the program runs again checked: finite operands, nothing to change
    big = np.full((2, 2), 1e300 + 1e300j)
    result = xp.einsum("ab,bc,cd->ad", *(xp.asarray(x) for x in (big, big, big)), optimize=[(0, 1), (0, 1)])
    assert not np.isfinite(np.asarray(result)).any()


def test_inside_shared_intermediates_every_step_is_checked(monkeypatch):
    checks = []
    real = reference.textbook_specials
    monkeypatch.setattr(reference, "textbook_specials", lambda c, a, b: checks.append(1) or real(c, a, b))
    ops = [xp.asarray(x) for x in _chain(None)]
    expr = xp.contract_expression(CHAIN, *(x.shape for x in ops), optimize=[(0, 1), (0, 1)])
    with oe.shared_intermediates():
        expr(*ops)
    assert len(checks) == 2  # the cache keeps every step's result for later contractions: each one checked


@given(data=st.data())
def test_sliced_programs_sum_slices_as_the_textbook_product_puts_inf_and_nan(data: st.DataObject) -> None:
    # b, contracted by the first step, sliced: each slice is the path on A[:, b], B[b, :], C, and the slices
    # are summed (an association the unsliced path does not have, so the oracle slices too)
    ops = _chain(None)
    for _ in range(data.draw(st.integers(0, 3))):
        x = ops[data.draw(st.integers(0, 2))].reshape(-1)
        part = x.real if data.draw(st.booleans()) else x.imag
        part[data.draw(st.integers(0, x.size - 1))] = data.draw(st.sampled_from(SPECIAL))
    path = [(0, 1), (0, 1)]
    inputs = [tuple("ab"), tuple("bc"), tuple("cd")]
    tree = ctg.ContractionTree.from_path(inputs, tuple("ad"), dict.fromkeys("abcd", 3), path=path).remove_ind("b")
    result = xp.contract(CHAIN, *(xp.asarray(x) for x in ops), memory_limit=10**6, optimize=tree)
    slices = [textbook(CHAIN, [ops[0][:, [b]], ops[1][[b], :], ops[2]], path) for b in range(3)]
    with np.errstate(all="ignore"):
        expected = np.sum(slices, axis=0)
    assert_like_textbook(result, expected)
