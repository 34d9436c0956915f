"""The emulated precision modes measured against exact references: every mode stays within its published bound
on normal, uniform positive and heavily cancelling inputs, the modes rank in order, and the edge cases (inf/nan,
bf16 operands, complex, batches, K = 0, dynamic range) behave as documented."""

from __future__ import annotations

import cmath
import functools
import itertools
import math
import sys
import warnings
from fractions import Fraction

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import trn_backend as xp
from trn_backend import _precision, kernels
from trn_backend.kernels import reference

KS = (16, 512, 4096)
KINDS = ("normal", "uniform", "cancel")
LADDER = ("fast", "dd", "bf16x6", "ozaki", "fp64")


@functools.cache
def operands(kind: str, K: int, dtype: torch.dtype, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """32 x K and K x 32 test operands; "cancel" rows carry large equal-and-opposite terms (L r, -L r against
    two equal rows of B), so |C| is far below |A||B|."""
    g = np.random.default_rng(seed + K)
    if kind == "uniform":
        a, b = g.random((32, K)), g.random((K, 32))
    else:
        a, b = g.standard_normal((32, K)), g.standard_normal((K, 32))
    if kind == "cancel":
        r = 1e4 * g.standard_normal(32)
        a[:, 0], a[:, 1], b[1] = r, -r, b[0]
    return torch.from_numpy(a).to(dtype), torch.from_numpy(b).to(dtype)


@functools.cache
def exact(kind: str, K: int, dtype: torch.dtype) -> tuple[np.ndarray, np.ndarray]:
    """A @ B and |A| @ |B| in extended precision (error ~K 2**-64, far below every bound tested)."""
    a, b = (t.double().numpy().astype(np.longdouble) for t in operands(kind, K, dtype))
    return a @ b, np.abs(a) @ np.abs(b)


def measured(c: torch.Tensor, kind: str, K: int, dtype: torch.dtype) -> float:
    """max_ij |C^ - C| / (|A||B|)_ij."""
    ref, scale = exact(kind, K, dtype)
    return float(np.max(np.abs(c.double().numpy().astype(np.longdouble) - ref) / scale))


@functools.cache
def errors(kind: str, K: int, dtype: torch.dtype) -> dict[str, float]:
    a, b = operands(kind, K, dtype)
    return {mode: measured(reference.MODES[mode](a, b), kind, K, dtype) for mode in ("native",) + LADDER}


@pytest.mark.heavy
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("K", KS)
@pytest.mark.parametrize("kind", KINDS)
def test_every_mode_within_its_bound(kind, K, dtype):
    for mode, error in errors(kind, K, dtype).items():
        assert error <= _precision.error_bound(mode, dtype, K), (mode, error)


@pytest.mark.parametrize("K", KS)
@pytest.mark.parametrize("kind", KINDS)
def test_modes_rank_in_order(kind, K):
    e = errors(kind, K, torch.float32)
    assert e["fast"] > e["dd"] > e["bf16x6"] >= e["ozaki"] >= e["fp64"], e
    e = errors(kind, K, torch.float64)
    assert e["fast"] > e["dd"] > e["bf16x6"] > e["ozaki"], e
    assert e["fp64"] < e["bf16x6"], e


@pytest.mark.parametrize("kind", KINDS)
def test_dd_reaches_1e_5_at_K_4096(kind):
    assert errors(kind, 4096, torch.float32)["dd"] <= 1e-5


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("K", KS)
@pytest.mark.parametrize("kind", KINDS)
def test_bf16x6_at_least_as_accurate_as_sgemm(kind, K, seed):
    a, b = operands(kind, K, torch.float32, seed)
    ref, scale = (np.asarray(x) for x in (a.double() @ b.double(), a.double().abs() @ b.double().abs()))
    err = {
        mode: np.max(np.abs(reference.MODES[mode](a, b).double().numpy() - ref) / scale)
        for mode in ("bf16x6", "native")
    }
    assert err["bf16x6"] <= err["native"], err


@pytest.mark.heavy
@pytest.mark.parametrize("K", KS)
@pytest.mark.parametrize("kind", KINDS)
def test_ozaki_float64_meets_1e_12_with_the_selected_slices(kind, K):
    chosen = _precision.select_precision(torch.float64, K, 1e-12, device="xla")  # Neuron: no float64 arithmetic
    assert chosen.mode == "ozaki"
    a, b = operands(kind, K, torch.float64)
    assert measured(kernels.matmul(a, b, "ozaki", **chosen.kwargs), kind, K, torch.float64) <= 1e-12


def test_ozaki_adds_slices_where_the_dynamic_range_needs_them():
    a, b = operands("cancel", 512, torch.float32)
    assert reference.ozaki_slices(a, b, 4) > 4
    # a row spanning 2**40: four slices alone would drop the small entry, whose product is all of C
    a = torch.tensor([[1.0, 2.0**-40]])
    b = torch.tensor([[0.0], [1.0]])
    assert reference.ozaki_slices(a, b) > reference.ozaki_default_slices(torch.float32)
    assert reference.ozaki(a, b).item() == 2.0**-40


def test_ozaki_refuses_a_dynamic_range_beyond_its_slices():
    a = torch.tensor([[1.0, 2.0**-200]], dtype=torch.float64)
    b = torch.tensor([[0.0], [1.0]], dtype=torch.float64)
    with pytest.raises(ValueError, match="ozaki.*more than 16 slices.*fp64"):
        reference.ozaki(a, b)


def test_ozaki_handles_the_float64_range():
    a = torch.tensor([[1e300, -1e300], [1e-300, 3e-300]], dtype=torch.float64)
    b = torch.tensor([[2.0, 1.0], [1.0, 1.0]], dtype=torch.float64)
    np.testing.assert_allclose(reference.ozaki(a, b).numpy(), (a @ b).numpy(), rtol=1e-15)


# --- stochastic rounding ---


def _biased(dtype: torch.dtype, frac: float) -> tuple[torch.Tensor, torch.Tensor, float]:
    """16x2 @ 2x16 whose exact entries are 1 + a quarter ulp of ``dtype`` at 1: nearest rounding always loses it."""
    quarter = frac * torch.finfo(dtype).eps
    a = torch.ones(16, 2, dtype=dtype)
    b = torch.tensor([[1.0] * 16, [quarter] * 16], dtype=dtype)
    return a, b, 1 + quarter


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_sr_is_unbiased_where_nearest_is_not(dtype):
    a, b, value = _biased(dtype, 0.25)
    g = torch.Generator().manual_seed(1)
    samples = torch.stack([kernels.matmul(a, b, "sr", generator=g) for _ in range(100)]).double()
    nearest = kernels.matmul(a, b, "fast").double()
    ulp = torch.finfo(dtype).eps
    assert set(samples.unique().tolist()) == {1.0, 1.0 + ulp}  # always a neighbour of the exact value
    noise = ulp * (0.25 * 0.75) ** 0.5 / samples.numel() ** 0.5  # standard error of the mean
    assert abs(samples.mean().item() - value) < 5 * noise
    assert abs(nearest.mean().item() - value) > 50 * noise


def test_sr_same_seed_same_result():
    a, b, _ = _biased(torch.bfloat16, 0.5)
    runs = [kernels.matmul(a, b, "sr", generator=torch.Generator().manual_seed(s)) for s in (7, 7, 8)]
    assert torch.equal(runs[0], runs[1])
    assert not torch.equal(runs[0], runs[2])


def test_sr_equals_fast_for_float32_outputs():
    a, b = operands("normal", 512, torch.float32)
    g = torch.Generator().manual_seed(3)
    state = g.get_state()
    assert torch.equal(reference.sr(a, b, generator=g), reference.fast(a, b))
    assert torch.equal(g.get_state(), state)  # nothing to randomise, nothing drawn


# --- inf and nan ---


def _nonfinite_operands(dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    inf, nan = float("inf"), float("nan")
    a = torch.tensor(
        [[inf, 1.0, 2.0], [inf, -inf, 1.0], [0.5, nan, 1.0], [inf, 0.0, 3.0], [1.0, 2.0, 3.0]], dtype=dtype
    )
    b = torch.tensor([[1.0, 0.0, -2.0], [1.0, 1.0, 1.0], [1.5, 2.0, 0.1]], dtype=dtype)
    return a, b


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("mode", ["fast", "sr", "dd", "bf16x6", "ozaki", "fp64"])
def test_inf_and_nan_exactly_as_native(mode, dtype):
    a, b = _nonfinite_operands(dtype)
    got, want = kernels.matmul(a, b, mode), torch.matmul(a, b)
    assert torch.equal(torch.isnan(got), torch.isnan(want))
    assert torch.equal(torch.isposinf(got), torch.isposinf(want))
    assert torch.equal(torch.isneginf(got), torch.isneginf(want))
    finite = torch.isfinite(want)
    torch.testing.assert_close(got[finite], want[finite], rtol=1e-2, atol=0)


SPECIAL_VALUES = (0.0, 1.0, -2.0, math.inf, -math.inf, math.nan)


def _textbook(a: list, b: list) -> list:
    """A @ B in Python floats, term by term: Re += ar br - ai bi, Im += ar bi + ai br (IEEE arithmetic)."""
    out = []
    for row in a:
        out.append([])
        for j in range(len(b[0])):
            re = im = 0.0
            for x, y in zip(row, (r[j] for r in b), strict=True):
                x, y = complex(x), complex(y)
                re += x.real * y.real - x.imag * y.imag
                im += x.real * y.imag + x.imag * y.real
            out[-1].append(complex(re, im))
    return out


def _special_pattern(v: complex, parts: int) -> tuple:
    return tuple((math.isnan(p), p == math.inf, p == -math.inf) for p in (v.real, v.imag)[:parts])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64, torch.complex128])
@pytest.mark.parametrize("mode", ["native", "fast", "sr", "dd", "bf16x6", "ozaki", "fp64"])
def test_special_values_on_a_grid_follow_the_textbook_formula(mode, dtype):
    """Every pair of special values (real and imaginary parts from 0, 1, -2, inf, -inf, nan) at K = 1, and
    random draws of them at K = 2 and 3: nan and the sign of each inf, per part, as IEEE arithmetic on the
    textbook formula (what NumPy and Python give) has them; torch's own complex GEMM would give nan+nanj."""
    values = (
        [complex(r, i) for r in SPECIAL_VALUES for i in SPECIAL_VALUES] if dtype.is_complex else list(SPECIAL_VALUES)
    )
    pool, n = torch.tensor(values, dtype=dtype), len(values)
    g = torch.Generator().manual_seed(0)
    cases = [(pool.reshape(n, 1), pool.reshape(1, n))] + [
        (pool[torch.randint(0, n, (40, k), generator=g)], pool[torch.randint(0, n, (k, 40), generator=g)])
        for k in (2, 3)
    ]
    parts = 2 if dtype.is_complex else 1
    for a, b in cases:
        got, want = kernels.matmul(a, b, mode).tolist(), _textbook(a.tolist(), b.tolist())
        for got_row, want_row in zip(got, want, strict=True):
            for x, y in zip(got_row, want_row, strict=True):
                assert _special_pattern(complex(x), parts) == _special_pattern(y, parts), (mode, x, y)


@settings(max_examples=60)
@given(st.integers(2, 9), st.integers(1, 9), st.integers(1, 9), st.data())
def test_one_special_value_anywhere_in_complex_operands_is_found(m, k, n, data):
    """Native complex products look for inf/nan with one cheap test of the product and patch only then: a
    single special part at any position of either operand, among finite entries, must still give the
    textbook pattern in its row (or column), and the finite entries their plain values."""
    g = torch.Generator().manual_seed(m * 100 + k * 10 + n)
    a, b = (
        torch.randn(m, k, dtype=torch.complex128, generator=g),
        torch.randn(k, n, dtype=torch.complex128, generator=g),
    )
    target = data.draw(st.sampled_from([a, b]), label="operand")
    row, col = data.draw(st.integers(0, target.shape[0] - 1)), data.draw(st.integers(0, target.shape[1] - 1))
    special = data.draw(st.sampled_from([math.inf, -math.inf, math.nan]))
    part = data.draw(st.sampled_from(["real", "imag"]))
    target[row, col] = complex(special, 0.5) if part == "real" else complex(0.5, special)
    got, want = kernels.matmul(a, b, "native").tolist(), _textbook(a.tolist(), b.tolist())
    for got_row, want_row in zip(got, want, strict=True):
        for x, y in zip(got_row, want_row, strict=True):
            assert _special_pattern(complex(x), 2) == _special_pattern(y, 2), (x, y)
            if cmath.isfinite(y):
                assert cmath.isclose(x, y, rel_tol=1e-12, abs_tol=1e-12)


def test_finite_complex_operands_whose_sums_overflow_keep_their_plain_product():
    """Finite complex64 operands near the top of the range overflow a plain sum of their entries (a false
    alarm of the cheap test): the exact per-row check then finds every entry finite and keeps the product,
    which here is finite (the oracle is the product of the float64-exact values in Python complex)."""
    big = 3e38
    a = torch.tensor([[big, big, -big, -big]], dtype=torch.complex64)
    b = torch.tensor([[1e-38], [1e-38], [1e-38], [1e-38j]], dtype=torch.complex64)
    want = sum(complex(x) * complex(y) for x, y in zip(a[0].tolist(), b[:, 0].tolist(), strict=True))
    got = complex(kernels.matmul(a, b, "native")[0, 0])
    assert cmath.isfinite(got) and cmath.isclose(got, want, rel_tol=1e-5)


@pytest.mark.parametrize("mode", ["fast", "sr", "dd", "bf16x6", "ozaki"])
def test_finite_operands_overflow_only_where_the_exact_result_does(mode):
    """The emulated modes scale rows and columns, so no intermediate overflows (fp64 and native are float64
    arithmetic on float64 data, and overflow where it does). The oracle is the exact product in rationals:
    1.1e41 (beyond float32, within float64), 0 (whose float64 products 1e600 overflow), and -1e320 and 7e320
    (beyond float64: the correctly rounded result is an infinity). Nothing is assumed of the BLAS."""
    rows = [[1e20, 2e20], [1e300, 1e300]]
    cols = [[3e20, 1e300], [4e20, -1e300]]
    a, b = torch.tensor(rows, dtype=torch.float64), torch.tensor(cols, dtype=torch.float64)
    exact = [[sum(Fraction(rows[i][k]) * Fraction(cols[k][j]) for k in range(2)) for j in range(2)] for i in range(2)]
    c = kernels.matmul(a, b, mode)
    bound = _precision.error_bound(mode, torch.float64, 2)
    for i, j in itertools.product(range(2), range(2)):
        if abs(exact[i][j]) > Fraction(sys.float_info.max):
            assert c[i, j].item() == (math.inf if exact[i][j] > 0 else -math.inf)
        else:
            assert abs(Fraction(c[i, j].item()) - exact[i][j]) <= Fraction(bound) * abs(exact[i][j])
    assert exact[0][0] > Fraction(float(np.finfo(np.float32).max))
    assert kernels.matmul(a.float(), b.float(), mode)[0, 0].item() == math.inf  # 1.1e41 overflows float32


@pytest.mark.parametrize("mode", ["fast", "sr", "dd", "bf16x6", "ozaki", "fp64", "native"])
def test_products_beyond_the_fp32_range_keep_the_published_bound(mode):
    """Products far above and below fp32's range, as float64 operands."""
    for scale in (1e20, 1e-25, 1e150, 1e-150):
        a = torch.tensor([[1.0, 2.0]], dtype=torch.float64) * scale
        b = torch.tensor([[3.0], [4.0]], dtype=torch.float64) * scale
        got = kernels.matmul(a, b, mode).item()
        assert abs(got - 11 * scale * scale) <= _precision.error_bound(mode, torch.float64, 2) * 11 * scale**2


def test_split_modes_certify_their_underflow_or_refuse():
    """Entries 2**-100 beside 1 in one row (and column): fine where the large terms dominate every |A||B|
    entry, a ValueError where an entry rests on tiny terms alone (their bf16 words and fp32 products underflow
    after scaling)."""
    tiny = 2.0**-100
    a = torch.tensor([[1.0, tiny], [1.0, 1.0]], dtype=torch.float64)
    b = torch.tensor([[1.0, 1.0], [tiny, 1.0]], dtype=torch.float64)
    exact = [[1 + tiny * tiny, 1 + tiny], [1 + tiny, 2.0]]
    for mode in ("fast", "sr", "dd", "bf16x6"):
        got = kernels.matmul(a, b, mode)
        bound = _precision.error_bound(mode, torch.float64, 2)
        assert np.all(np.abs(got.numpy() - np.array(exact)) <= bound * np.abs(np.array(exact)))
    # (1, tiny, 0) . (0, tiny, 1) = tiny**2 = 2**-200 rests on the tiny terms alone, beside scales of 1
    a, b = (
        torch.tensor([[1.0, tiny, 0.0]], dtype=torch.float64),
        torch.tensor([[0.0], [tiny], [1.0]], dtype=torch.float64),
    )
    for mode in ("fast", "sr", "dd", "bf16x6"):
        with pytest.raises(ValueError, match=f"mode '{mode}' cannot vouch for its bound on these operands"):
            kernels.matmul(a, b, mode)
    assert kernels.matmul(a, b, "fp64").item() == 2.0**-200


# --- operand kinds ---


def test_float64_operands_are_rounded_to_bf16_once():
    # nearest bf16 of 1 + 2**-8 + 2**-40 is 1 + 2**-7; rounding through float32 first would tie down to 1
    a = torch.tensor([[1 + 2.0**-8 + 2.0**-40]], dtype=torch.float64)
    assert kernels.matmul(a, torch.ones(1, 1, dtype=torch.float64), "fast").item() == 1 + 2.0**-7


def test_bf16_operands_run_split_modes_as_fast_and_warn_once():
    a, b = (t.to(torch.bfloat16) for t in operands("normal", 16, torch.float32))
    reference._common._WARNED.discard("dd")
    with pytest.warns(reference.PrecisionWarning, match="'dd' runs as 'fast'"):
        first = kernels.matmul(a, b, "dd")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert torch.equal(kernels.matmul(a, b, "dd"), first)
    assert torch.equal(first, kernels.matmul(a, b, "fast"))
    assert first.dtype is torch.bfloat16


@pytest.mark.parametrize("mode", LADDER)
def test_batched_operands(mode):
    a = torch.stack([operands(kind, 512, torch.float32)[0] for kind in KINDS])
    b = torch.stack([operands(kind, 512, torch.float32)[1] for kind in KINDS])
    c = kernels.bmm(a, b, mode)
    assert c.shape == (3, 32, 32) and c.dtype is torch.float32
    for i, kind in enumerate(KINDS):
        assert measured(c[i], kind, 512, torch.float32) <= _precision.error_bound(mode, torch.float32, 512)


@pytest.mark.parametrize("mode", LADDER + ("sr",))
def test_complex_operands_within_the_complex_bound(mode):
    g = np.random.default_rng(5)
    a = g.standard_normal((8, 300)) + 1j * g.standard_normal((8, 300))
    b = g.standard_normal((300, 8)) + 1j * g.standard_normal((300, 8))
    c = kernels.matmul(torch.from_numpy(a).to(torch.complex64), torch.from_numpy(b).to(torch.complex64), mode)
    assert c.dtype is torch.complex64
    a, b = a.astype(np.complex64).astype(np.clongdouble), b.astype(np.complex64).astype(np.clongdouble)
    error = np.max(np.abs(c.numpy().astype(np.clongdouble) - a @ b) / (np.abs(a) @ np.abs(b)))
    assert error <= _precision.error_bound(mode, torch.complex64, 300)


@pytest.mark.parametrize("mode", LADDER + ("sr",))
def test_empty_contraction_is_exact_zero(mode):
    c = kernels.matmul(torch.ones(3, 0), torch.ones(0, 2), mode)
    assert c.shape == (3, 2) and c.dtype is torch.float32 and not c.any()


def test_mixed_float_operands_promote():
    c = kernels.matmul(torch.ones(2, 3), torch.ones(3, 2, dtype=torch.float64), "dd")
    assert c.dtype is torch.float64 and (c == 3).all()


@pytest.mark.parametrize("mode", ["fast", "dd", "ozaki", "fp64"])
def test_integer_operands_are_refused(mode):
    with pytest.raises(TypeError, match=f"mode '{mode}' needs floating-point operands.*native"):
        kernels.matmul(torch.ones(2, 2, dtype=torch.int64), torch.ones(2, 2, dtype=torch.int64), mode)


def test_the_former_name_kahan_runs_fp64_with_a_future_warning():
    """ "kahan" promised compensated summation the mode never ran: it is fp64 now, and the old name still runs it
    for one release, saying so, on every route that takes a mode name."""
    a, b = operands("normal", 16, torch.float32)
    want = (a.double() @ b.double()).float()
    message = (
        r"precision mode 'kahan' is deprecated .* float64 product on the host, without compensated summation; "
        r"use 'fp64'"
    )
    for call in (
        lambda: kernels.matmul(a, b, "kahan"),
        lambda: kernels.bmm(a[None], b[None], "kahan")[0],
        lambda: xp.matmul(xp.from_torch(a), xp.from_torch(b), precision="kahan").to_torch(),
    ):
        with pytest.warns(FutureWarning, match=message):
            assert torch.equal(call(), want)
    with pytest.warns(FutureWarning, match=message):
        with xp.precision("kahan"):
            assert torch.equal((xp.from_torch(a) @ xp.from_torch(b)).to_torch(), want)
    with pytest.warns(FutureWarning, match=message):
        assert xp.error_bound("kahan", "float32", 16) == xp.error_bound("fp64", "float32", 16)
    assert "kahan" not in kernels.reference.MODES and "kahan" not in str(
        xp.explain("ij,jk->ik", xp.from_torch(a), xp.from_torch(b), precision="fp64")
    )


@pytest.mark.parametrize(
    ("slices", "error", "match"),
    [
        (0, ValueError, "slices must be in 1..16, got 0"),
        (2.0, TypeError, "slices must be an int, got float"),
    ],
)
def test_ozaki_slices_are_checked(slices, error, match):
    with pytest.raises(error, match=match):
        kernels.matmul(torch.ones(2, 2), torch.ones(2, 2), "ozaki", slices=slices)


def _nearest_ties_away(x: float) -> float:
    """The nearest bf16 value to x (8 significant bits; subnormals step by 2**-133), ties away from zero, in
    exact rational arithmetic."""
    if x == 0:
        return x
    quantum = Fraction(2) ** max(math.frexp(abs(x))[1] - 8, -133)
    return math.copysign(float(math.floor(Fraction(abs(x)) / quantum + Fraction(1, 2)) * quantum), x)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-1, 1, width=32), min_size=1, max_size=40))
def test_word_split_rounds_to_nearest_ties_away(values):
    """The split's bf16 rounding (the kernels' integer trick on float32, frexp on float64) of scaled values
    (|x| <= 1, subnormals included) is the exact nearest bf16, ties away from zero, and both paths agree."""
    x = torch.tensor(values, dtype=torch.float32)
    expected = [_nearest_ties_away(v) for v in values]
    assert reference._common._nearest_bf16(x).tolist() == expected
    assert reference._common._nearest_bf16(x.double()).tolist() == expected
    ties = torch.tensor([1 + 2**-8, -(1 + 3 * 2**-8), 2.0**-130 * (1 + 2**-8)], dtype=torch.float32)
    assert reference._common._nearest_bf16(ties).tolist() == [_nearest_ties_away(v) for v in ties.tolist()]
