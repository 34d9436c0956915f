"""Precision through the contraction engine: per-step resolution, explain's modes and bounds, multi_einsum's
batching, and target_relative_error's a posteriori checks, with every error path."""

from __future__ import annotations

import threading
from fractions import Fraction

import numpy as np
import pytest
import torch

import trn_backend as xp
from tests.support import from_numpy, to_numpy
from trn_backend import kernels
from trn_backend._precision import error_bound, select_precision

f32, f64 = torch.float32, torch.float64
CHAIN = "ij,jk,kl->il"
STEPS = [(0, 1), (0, 1)]


def _normal(*shape, dtype=np.float32, seed=0):
    return from_numpy(np.random.default_rng(seed).standard_normal(shape).astype(dtype))


def _chain():
    """Three operands whose two steps contract K = 16, then K = 4096."""
    return _normal(8, 16, seed=1), _normal(16, 4096, seed=2), _normal(4096, 8, seed=3)


# --- per-step resolution ---


def test_each_step_resolves_its_mode_from_its_own_K(basis):
    # target 1e-4: on the CPU, K = 16 runs native and K = 4096 fp64 (native's bound there is 2.4e-4); by pass
    # count dd and bf16x6. The product of the contracted sizes would put the first step on the second mode too.
    target = 1e-4
    first, second = {"calibration": ("native", "fp64"), "pass count": ("dd", "bf16x6")}[basis]
    assert [select_precision(f32, K, target).mode for K in (16, 4096, 16 * 4096)] == [first, second, second]
    a, b, c = _chain()
    with kernels.count_calls() as calls:
        xp.einsum(CHAIN, a, b, c, optimize=STEPS, target_forward_error=target)
        with xp.precision(target_forward_error=target):
            xp.contract(CHAIN, a, b, c, optimize=STEPS)
        xp.contract_expression(CHAIN, (8, 16), (16, 4096), (4096, 8), optimize=STEPS, target_forward_error=target)(
            a, b, c
        )
    assert calls == {("matmul", first): 3, ("matmul", second): 3}


def test_explain_shows_each_steps_mode_with_its_parameters_and_the_registrys_bound():
    e = xp.explain(CHAIN, (8, 16), (16, 4096), (4096, 8), optimize=STEPS, dtype=xp.float32, target_forward_error=1e-4)
    assert [p.resolved.mode for p in e.steps] == ["native", "fp64"]
    for p, K in zip(e.steps, (16, 4096), strict=True):
        assert p.resolved.bound == error_bound(p.resolved.mode, f32, K) and f"{p.resolved.bound:.2g}" in str(e)
    e64 = xp.explain(
        CHAIN, (8, 16), (16, 4096), (4096, 8), optimize=STEPS, dtype=xp.float64, target_forward_error=1e-14
    )  # float64's own bound meets it at K = 16, not at 4096
    assert [p.resolved.label for p in e64.steps] == ["native", "ozaki(slices=7)"]
    assert [p.resolved.bound for p in e64.steps] == [
        error_bound("native", f64, 16),
        error_bound("ozaki", f64, 4096, slices=7),
    ]
    assert "ozaki(slices=7)" in str(e64)
    with xp.precision(target_relative_error=1e-3):
        checked = xp.explain("ij,jk->ik", (8, 512), (512, 8))
    assert checked.steps[0].resolved.target_relative_error == 1e-3 and "native, checked to rel 0.001" in str(checked)


# --- target_relative_error ---


def _exact(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The exact product of small float matrices, rounded once to float64 at the end."""
    fa, fb = [[Fraction(float(x)) for x in row] for row in a], [[Fraction(float(x)) for x in col] for col in b.T]
    return np.array([[float(sum(x * y for x, y in zip(r, c, strict=True))) for c in fb] for r in fa])


def _relative_error(got: xp.NeuronArray, a: np.ndarray, b: np.ndarray) -> float:
    exact = _exact(a, b)
    return float(np.max(np.abs(to_numpy(got).astype(np.float64) - exact) / np.abs(exact)))


def _uniform(m, k, n, dtype, seed=0):
    g = np.random.default_rng(seed)
    return g.uniform(0.5, 1, (m, k)).astype(dtype), g.uniform(0.5, 1, (k, n)).astype(dtype)


def _cancelling(m, k, n, dtype, seed=0):
    """Positive data plus a pair of columns of A, 1e4 times larger, that nearly cancel against equal rows of
    B: |C| is about 300 times smaller than |A||B|, and bf16-rounded operands cancel the pair exactly."""
    a, b = _uniform(m, k, n, np.float64, seed)
    a[:, 0] *= 1e4
    a[:, 1] = a[:, 0] * (1 + 2.0**-12)
    b[1] = -b[0]
    return a.astype(dtype), b.astype(dtype)


def test_benign_products_stay_on_the_cheapest_mode_with_one_extra_fast_pass(basis):
    a, b = _uniform(16, 512, 16, np.float32)
    first = {"calibration": "native", "pass count": "dd"}[basis]
    with kernels.count_calls() as calls:
        c = xp.matmul(from_numpy(a), from_numpy(b), target_relative_error=1e-3)
    assert calls == {("matmul", "fast"): 1, ("matmul", first): 1}
    (check,) = xp.last_precision_report()
    assert (check.subscripts, check.K, check.target, check.mode) == ("ab,bc->ac", 512, 1e-3, first)
    assert len(check.tried) == 1 and check.met
    assert _relative_error(c, a, b) <= check.estimate <= 1e-3


@pytest.mark.parametrize(
    ("dtype", "target", "first", "then"),
    [
        (np.float32, 1e-4, {"calibration": "native", "pass count": "dd"}, {"calibration": ["fp64"]}),
        (
            np.float64,
            1e-13,
            {"calibration": "native", "pass count": "native"},
            {
                "calibration": ["ozaki(slices=7)", "ozaki(slices=8)"],
                "pass count": ["ozaki(slices=7)", "ozaki(slices=8)"],
            },
        ),
    ],
)
def test_cancellation_escalates_until_the_estimate_meets_the_target(dtype, target, first, then, basis):
    """|C| ~ |A||B| / 300: the a priori mode's estimate misses, and escalation (the cheapest mode with a smaller
    bound, and so on) meets the target honestly."""
    a, b = _cancelling(8, 64, 8, dtype)
    with kernels.count_calls() as calls:
        c = xp.matmul(from_numpy(a), from_numpy(b), target_relative_error=target)
    (check,) = xp.last_precision_report()
    assert check.tried[0][0] == first[basis] and check.tried[0][1] > target
    assert len(check.tried) >= 2 and check.met
    if basis in then:
        assert [mode for mode, _ in check.tried[1:]] == then[basis]
    assert calls[("matmul", "fast")] == 1 and sum(calls.values()) == 1 + len(check.tried)
    assert _relative_error(c, a, b) <= check.estimate <= target
    if basis == "pass count" and dtype is np.float32:  # dd really misses here: its relative error is above it
        assert _relative_error(xp.matmul(from_numpy(a), from_numpy(b), precision="dd"), a, b) > target


def test_an_unreachable_target_names_the_best_estimate():
    a, b = _cancelling(8, 64, 8, np.float64)
    with pytest.raises(
        ValueError,
        match=r"target_relative_error=1e-14 is out of reach for 'ab,bc->ac' \(K=64, "
        r"float64\): the best a posteriori estimate reached is .* with ozaki",
    ):
        xp.matmul(from_numpy(a), from_numpy(b), target_relative_error=1e-14)
    (check,) = xp.last_precision_report()
    assert not check.met and check.tried[-1][0] == "ozaki(slices=8)"
    with pytest.raises(ValueError, match="no mode reaches target_relative_error=1e-09 for float32"):
        xp.matmul(from_numpy(a.astype(np.float32)), from_numpy(b.astype(np.float32)), target_relative_error=1e-9)


@pytest.mark.parametrize("mode", ["fast", "dd", "bf16x6", "ozaki3", "ozaki5", "fp64"])
def test_float32_results_are_their_float64_results_rounded_once(mode):
    """What the float32 estimate relies on (see contraction/posteriori.py), bit for bit, specials included."""
    a, b = _normal(2, 8, 700, seed=5)._t, _normal(2, 700, 6, seed=6)._t
    a[0, 1, 2], b[1, 3, 4], a[1, 2] = float("inf"), float("nan"), a[1, 2] * 1e30
    name, params = (mode[:5], {"slices": int(mode[5])}) if mode.startswith("ozaki") else (mode, {})
    got = kernels.bmm(a, b, name, **params)
    expected = kernels.bmm(a.double(), b.double(), name, **params).float()
    assert torch.equal(got.isnan(), expected.isnan()) and torch.equal(got.nan_to_num(), expected.nan_to_num())


def test_every_front_door_checks_its_whole_expression(basis):
    a, b = _uniform(8, 32, 8, np.float32)
    x, y = from_numpy(a), from_numpy(b)
    calls = [
        lambda: xp.einsum("ij,jk->ik", x, y, target_relative_error=1e-3),
        lambda: xp.tensordot(x, y, axes=1, target_relative_error=1e-3),
        lambda: xp.matmul(x, y, target_relative_error=1e-3),
        lambda: xp.vecdot(x, x, target_relative_error=1e-3),
        lambda: xp.contract("ij,jk->ik", x, y, target_relative_error=1e-3),
        lambda: xp.contract_expression("ij,jk->ik", x.shape, y.shape, target_relative_error=1e-3)(x, y),
    ]
    for call in calls:
        call()
        (check,) = xp.last_precision_report()
        assert check.met and check.mode == {"calibration": "native", "pass count": "dd"}[basis]
    # a path is one expression: checked once, as a whole, over every index it sums (j and k)
    xp.einsum(CHAIN, x, y, x, optimize=STEPS, target_relative_error=1e-3)
    (check,) = xp.last_precision_report()
    assert check.met and check.subscripts == CHAIN and check.K == 32 * 8


def test_the_context_collects_a_report_and_nests():
    a, b = _uniform(8, 32, 8, np.float32)
    x, y = from_numpy(a), from_numpy(b)
    with xp.precision(target_relative_error=1e-3) as report:
        x @ y
        with xp.precision("fast"):
            xp.matmul(x, y)  # an explicit mode: no check
        with xp.precision(target_relative_error=1e-2) as inner:
            xp.matmul(x, y)
        assert xp.last_precision_report() is inner and [c.target for c in inner] == [1e-2]
        xp.einsum("ij,jk->ik", x, y, precision="fp64")  # per call overrides the block
        xp.matmul(x, y)
    assert xp.last_precision_report() is report and [c.target for c in report] == [1e-3, 1e-3]
    with xp.precision(target_relative_error=1e-3) as exact:
        xp.matmul(xp.asarray([[1, 2]]), xp.asarray([[3], [4]]))  # integers are exact: nothing to check
    assert exact == []


def test_reports_belong_to_their_thread():
    before = xp.last_precision_report()
    seen = []

    def worker():
        a, b = _uniform(4, 16, 4, np.float32)
        xp.matmul(from_numpy(a), from_numpy(b), target_relative_error=1e-3)
        seen.append(xp.last_precision_report())

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert len(seen[0]) == 1 and xp.last_precision_report() is before


def test_special_values_zeros_and_wide_ranges(basis):
    a, b = _uniform(6, 16, 5, np.float32)
    a[1, 2], a[2, 0], b[:, 3] = np.nan, np.inf, 0  # row 1 nan, row 2 inf, column 3 exact zeros
    with kernels.count_calls() as calls:
        c = xp.matmul(from_numpy(a), from_numpy(b), target_relative_error=1e-3)
    native = to_numpy(xp.matmul(from_numpy(a), from_numpy(b)))
    np.testing.assert_array_equal(np.isfinite(to_numpy(c)), np.isfinite(native))
    assert calls[("matmul", "fast")] == 1  # |A||B|: its tiny magnitudes are raised, so its zeros are exact
    assert xp.last_precision_report()[0].mode == {"calibration": "native", "pass count": "dd"}[basis]
    # float64 beyond bf16's and fp32's range: the split modes scale rows and columns, so the first mode holds
    a, b = _uniform(4, 32, 4, np.float64)
    c = xp.matmul(from_numpy(a * 1e200), from_numpy(b * 1e-100), target_relative_error=1e-6)
    (check,) = xp.last_precision_report()
    assert len(check.tried) == 1 and check.met
    assert _relative_error(c, a * 1e200, b * 1e-100) <= check.estimate


@pytest.mark.parametrize(
    ("dtype", "scale"),
    [
        (np.float32, 1e-18),
        (np.float32, 1e18),
        (np.float64, 1e-22),
        (np.float64, 1e19),
        (np.float64, 1e-150),
        (np.float64, 1e150),
    ],
)
def test_the_estimate_bounds_the_real_error_far_outside_fp32s_range(dtype, scale, basis):
    """Products of magnitude scale**2 leave fp32's range (or come near float32's own limits): every mode the
    check runs stays within its bound there, so a met target is a true one."""
    a, b = _uniform(12, 40, 10, np.float64)
    a, b = (a * scale).astype(dtype), (b * scale).astype(dtype)
    c = xp.matmul(from_numpy(a), from_numpy(b), target_relative_error=1e-6 if dtype is np.float64 else 1e-4)
    (check,) = xp.last_precision_report()
    assert check.met and _relative_error(c, a, b) <= check.estimate


def test_no_estimate_vouches_for_a_result_that_underflows(basis):
    """float32 results near 1e-43 are subnormal: rounding them loses relative accuracy no mode can win back."""
    a, b = (x * np.float32(1e-22) for x in _uniform(12, 40, 10, np.float32))
    with pytest.raises(ValueError, match="out of reach .* or underflows it"):
        xp.matmul(from_numpy(a), from_numpy(b), target_relative_error=1e-4)
    c = xp.matmul(from_numpy(a), from_numpy(b), target_relative_error=0.5)  # what the result can vouch for
    (check,) = xp.last_precision_report()
    assert _relative_error(c, a, b) <= check.estimate <= 0.5


def test_a_zero_length_contraction_under_a_relative_target_gives_zeros():
    c = xp.einsum("ij,jk->ik", xp.zeros((3, 0)), xp.zeros((0, 4)), target_relative_error=1e-6)
    assert c.shape == (3, 4) and not xp.any(c)
    (check,) = xp.last_precision_report()
    assert check.K == 0 and check.met and check.estimate == 0


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (
            lambda x: xp.einsum("ij,jk", x, x, precision="dd", target_relative_error=1e-3),
            ValueError,
            r"einsum\(\): give a precision mode or one target \(target_forward_error= or target_relative_error=\)",
        ),
        (
            lambda x: xp.tensordot(x, x, target_forward_error=1e-3, target_relative_error=1e-3),
            ValueError,
            r"tensordot\(\): give a precision mode",
        ),
        (lambda x: xp.matmul(x, x, precision="dd", target_relative_error=1e-3), ValueError, r"matmul\(\): give"),
        (lambda x: xp.vecdot(x, x, precision="dd", target_relative_error=1e-3), ValueError, r"vecdot\(\): give"),
        (
            lambda x: xp.contract("ij,jk", x, x, precision="dd", target_relative_error=1e-3),
            ValueError,
            r"contract\(\): give a precision mode",
        ),
        (
            lambda x: xp.contract_expression(
                "ij,jk", (3, 3), (3, 3), target_forward_error=1e-3, target_relative_error=1e-3
            ),
            ValueError,
            r"contract_expression\(\): give",
        ),
        (lambda x: xp.precision("dd", target_relative_error=1e-3), ValueError, "precision: give"),
        (lambda x: xp.precision(target_relative_error=1e-3, slices=3), TypeError, "parameters slices need a mode"),
        (lambda x: xp.precision(target_relative_error=0.0), ValueError, "target_relative_error must be positive"),
        (
            lambda x: xp.matmul(x, x, target_relative_error="1e-3"),
            TypeError,
            r"matmul\(\): target_relative_error must be a real number, got str",
        ),
        (lambda x: xp.matmul(x, x, target_relative_error=-1), ValueError, "must be positive, got -1"),
    ],
)
def test_target_relative_error_errors(call, error, match):
    with pytest.raises(error, match=match):
        call(_normal(3, 3))
