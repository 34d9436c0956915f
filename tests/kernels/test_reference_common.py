"""The reference's blocked paths (output tiles and K-blocks, kernels/reference/): with the blocking thresholds
lowered so that small products run in many blocks, every emulated mode stays within its published bound on hard
inputs (against an extended-precision reference), gives what one block gives up to its documented freedom (ozaki
and fast bit for bit, fp64 to its bound), and holds at most 2x (inputs + output) of extra memory, measured with
the benchmark's profiler helper."""

from __future__ import annotations

import importlib.util
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from trn_backend import _precision, kernels
from trn_backend.kernels import reference

_spec = importlib.util.spec_from_file_location(
    "bench_emulation", Path(__file__).parents[2] / "benchmarks" / "bench_emulation.py"
)
bench_emulation = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_emulation)

MODES = ("fast", "dd", "bf16x6", "ozaki", "fp64")


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of at most 1/16 of the problem, down to 2**10 elements: the products below run in several output
    tiles or K-blocks (bf16x6's K-blocks stay whole chunks of 256)."""
    monkeypatch.setattr(reference._common, "MIN_BLOCK_ELEMENTS", 2**10)


def operands(kind: str, shape: tuple[int, ...], dtype: torch.dtype, seed: int = 0):
    *lead, m, k, n = shape
    g = np.random.default_rng(seed)
    a, b = g.standard_normal((*lead, m, k)), g.standard_normal((*lead, k, n))
    if kind == "uniform":
        a, b = np.abs(a), np.abs(b)
    if kind == "cancel":  # large equal-and-opposite terms: |C| far below |A||B|
        big = 1e4 * g.standard_normal((*lead, m))
        a[..., 0], a[..., 1] = big, -big
        b[..., 1, :] = b[..., 0, :]
    if kind == "range":  # rows and columns scaled across float32's range
        a *= 10.0 ** g.integers(-15, 15, (*lead, m, 1))
        b *= 10.0 ** g.integers(-15, 15, (*lead, 1, n))
    return torch.from_numpy(a).to(dtype), torch.from_numpy(b).to(dtype)


def relative_error(c: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> float:
    a_ld, b_ld = (x.double().numpy().astype(np.longdouble) for x in (a, b))
    exact, scale = a_ld @ b_ld, np.abs(a_ld) @ np.abs(b_ld)
    return float(np.max(np.abs(c.double().numpy().astype(np.longdouble) - exact) / scale))


def run(mode: str, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (kernels.bmm if a.dim() == 3 else kernels.matmul)(a, b, mode)


def test_the_plan_blocks_small_products_when_lowered(small_blocks):
    plan = reference._common.Tiling(1, 200, 300, 160)
    assert len(list(plan.tiles())) > 1 and len(plan.depth) > 1
    chunked = reference._common.Tiling(1, 64, 3000, 48, align=256)
    assert len(chunked.depth) > 3 and {ks.start % 256 for ks in chunked.depth} == {0}
    tiling = reference._common.Tiling
    assert len(tiling(1, 64, 3000, 48, share=4).depth) > 3 * len(tiling(1, 64, 3000, 48).depth)


# 'range' in float32 only: float64 operands take the float64 scaled path whatever their range ('cancel' covers it)
@pytest.mark.heavy
@pytest.mark.parametrize(
    "kind, dtype", [("cancel", torch.float32), ("cancel", torch.float64), ("range", torch.float32)]
)
@pytest.mark.parametrize("shape", [(200, 300, 160), (64, 3000, 48), (3, 20, 2100, 30)])
@pytest.mark.parametrize("mode", MODES)
def test_blocked_modes_stay_within_their_bounds(mode, kind, shape, dtype, small_blocks):
    a, b = operands(kind, shape, dtype)
    c = run(mode, a, b)
    assert c.shape == (*shape[:-3], shape[-3], shape[-1]) and c.dtype == dtype
    assert relative_error(c, a, b) <= _precision.error_bound(mode, dtype, shape[-2]), mode


@pytest.mark.heavy
@pytest.mark.parametrize("mode", MODES)
def test_blocked_results_agree_with_one_block(mode, monkeypatch):
    """ozaki's level sums are exact, so blocking changes no bit of them; the others add in another order (any
    order is within their bounds): within twice their bound of each other."""
    a, b = operands("cancel", (64, 3000, 48), torch.float32, seed=3)
    whole = run(mode, a, b)
    monkeypatch.setattr(reference._common, "MIN_BLOCK_ELEMENTS", 2**10)
    blocked = run(mode, a, b)
    if mode == "ozaki":
        assert torch.equal(blocked, whole)
    else:
        scale = a.double().abs() @ b.double().abs()
        gap = ((blocked.double() - whole.double()).abs() / scale).max().item()
        assert gap <= 2 * _precision.error_bound(mode, torch.float32, 3000), gap


# --- the split modes' shortcuts: each gives the bits of the general path it stands in for ---


def _spread(shape: tuple[int, ...], dtype: torch.dtype, low: int, high: int, rows: int, seed: int = 0) -> torch.Tensor:
    """Entries +-[1, 2) times 2**e, e uniform in [low, high) per entry, rows scaled by 2**[-rows, rows)."""
    g = np.random.default_rng(seed)
    x = np.where(g.random(shape) < 0.5, -1, 1) * (1 + g.random(shape)) * 2.0 ** g.integers(low, high, shape)
    return torch.from_numpy(x * 2.0 ** g.integers(-rows, rows, (*shape[:-1], 1))).to(dtype)


SHORTCUT_SHAPES = [(48, 48, 48, 48), (5, 8, 8, 8), (256, 1, 256), (5, 40, 1, 30), (40, 300, 24), (24, 3000, 20)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape", SHORTCUT_SHAPES)
@pytest.mark.parametrize("mode", ["fast", "dd", "bf16x6"])
def test_the_unscaled_split_gives_the_scaled_splits_bits(mode, shape, dtype, monkeypatch):
    """Operands of a moderate range (entries within 2**3 of their row's, rows at scales 2**-3 to 2**3) split
    unscaled, which _unscaled_exact vouches gives exactly the scaled split's result: the same bits as scaling
    the rows and columns and scaling the result back. A wide range takes the scaled split."""
    *lead, m, k, n = shape
    a, b = _spread((*lead, m, k), dtype, -3, 0, 3), _spread((*lead, n, k), dtype, -3, 0, 3, seed=1).transpose(-1, -2)
    decisions = []
    check = reference._common._unscaled_exact
    monkeypatch.setattr(
        reference._common, "_unscaled_exact", lambda *args: decisions.append(check(*args)) or decisions[-1]
    )
    unscaled = run(mode, a, b)
    assert decisions == [True]
    monkeypatch.setattr(reference._common, "_unscaled_exact", lambda *args: False)
    assert torch.equal(unscaled, run(mode, a, b))
    assert not check(dtype, 2, k, [2.0**-120, 1.0], [1.0, 1.0])  # rests of 2**-145 are no normal bf16 values


@pytest.mark.parametrize("rows, route", [(30, 0), (80, 1)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape", SHORTCUT_SHAPES)
@pytest.mark.parametrize("mode", ["fast", "dd", "bf16x6"])
def test_scaling_back_by_two_products_gives_ldexps_bits(mode, shape, dtype, rows, route, monkeypatch):
    """The engine result scaled back by a row and a column factor in place (in float32 where the row scales
    span 2**60, in float64 where they span 2**160) equals the reference's _ldexp in float64 rounded once."""
    *lead, m, k, n = shape
    a, b = _spread((*lead, m, k), dtype, -10, 10, rows), _spread((*lead, k, n), dtype, -10, 10, 10, seed=1)
    monkeypatch.setattr(reference._common, "_unscaled_exact", lambda *args: False)
    routes, finish_scales = [], reference._common._Scaled._finish_scales

    def spy(self, *args):
        finish_scales(self, *args)
        routes.append(self.fp32_scales is None if dtype is torch.float32 else self.fp64_scales is None)

    monkeypatch.setattr(reference._common._Scaled, "_finish_scales", spy)
    two_products = run(mode, a, b)
    assert routes == [dtype is torch.float32 and route == 1]
    monkeypatch.setattr(
        reference._common._Scaled,
        "_finish_scales",
        lambda self, *args: setattr(self, "fp32_scales", None) or setattr(self, "fp64_scales", None),
    )
    assert torch.equal(two_products, run(mode, a, b))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.floats(2.0**-126, 1.0) | st.floats(-1.0, -(2.0**-126)) | st.just(0.0) | st.just(-0.0),
        min_size=1,
        max_size=40,
    )
)
def test_float64_bit_pattern_split_rounds_to_nearest_ties_away(values):
    """The float64 words' bit-pattern rounding (for rests in bf16's normal range) is the exact nearest bf16
    value, ties away from zero, as the frexp route gives it."""
    x = torch.tensor(values, dtype=torch.float64)
    got = reference._common._nearest_bf16_bits(x)
    assert got.tolist() == [_nearest_ties_away(v) for v in values]
    assert torch.equal(torch.signbit(got), torch.signbit(x))
    ties = torch.tensor([1 + 2**-8, -(1 + 3 * 2**-8), 2.0**-126 * (1 + 2**-8), 1 - 2**-10], dtype=torch.float64)
    assert reference._common._nearest_bf16_bits(ties).tolist() == [_nearest_ties_away(v) for v in ties.tolist()]


def _nearest_ties_away(x: float) -> float:
    """The nearest bf16 value to x (a normal one: 8 significant bits), ties away from zero, in exact arithmetic."""
    if x == 0:
        return x
    quantum = Fraction(2) ** (math.frexp(abs(x))[1] - 8)
    return math.copysign(float(math.floor(Fraction(abs(x)) / quantum + Fraction(1, 2)) * quantum), x)


def _sum2_chunks_float32(sums: np.ndarray, group: int) -> np.ndarray:
    """bf16x6's combination of chunk sums [c, ...] in NumPy float32, one operation at a time: ``group``
    consecutive sums added left to right, the group sums combined by TwoSum in order, hi + lo at the end."""
    hi = lo = None
    for start in range(0, len(sums), group):
        part = sums[start]
        for s in sums[start + 1 : start + group]:
            part = np.float32(part + s)
        if hi is None:
            hi, lo = part, np.zeros_like(part)
            continue
        total = np.float32(hi + part)
        back = np.float32(total - hi)
        err = np.float32(np.float32(hi - np.float32(total - back)) + np.float32(part - back))
        hi, lo = total, np.float32(lo + err)
    return np.float32(hi + lo)


@pytest.mark.parametrize("batches", [[11], [1] * 11, [4, 4, 3], [3, 8], [8, 3], [2, 4, 5]])
def test_chunk_sums_combine_in_k_order_however_they_arrive(batches):
    """_Sum2Chunks gives the float32 result of adding each group in order and combining the groups by TwoSum in
    K order, whether the chunk sums come all at once (whole groups added at once), one by one or in batches
    that split groups."""
    g = np.random.default_rng(2)
    sums = (g.standard_normal((11, 2, 3, 4)) * 2.0 ** g.integers(-30, 30, (11, 1, 1, 1))).astype(np.float32)
    state, start = reference._split._Sum2Chunks(4), 0
    for count in batches:
        state.add(torch.from_numpy(sums[start : start + count].copy()).transpose(0, 1))  # [b, c, m, n]
        start += count
    assert np.array_equal(state.result().numpy(), _sum2_chunks_float32(sums, 4))


LAYOUTS = ("b repeated", "a repeated", "a transposed", "b transposed")


def _laid_out(layout: str, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    a, b = operands("cancel", (7, 30, 48, 20), dtype, seed=4)
    if layout == "b repeated":
        return a, b[:1].expand(7, 48, 20)
    if layout == "a repeated":
        return a[:1].expand(7, 30, 48), b
    if layout == "a transposed":
        return a.transpose(1, 2).contiguous().transpose(1, 2), b
    return a, b.transpose(1, 2).contiguous().transpose(1, 2)


@pytest.mark.heavy
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("mode", MODES)
def test_repeated_and_transposed_operands(mode, layout):
    """An operand that repeats one matrix over the batch (a stride-0 batch, as einsum's broadcasts give) runs as
    one product of the other's rows (or columns) with that matrix, and a transposed operand is laid out by rows
    first: within the mode's bound, ozaki's result bit for bit that of the materialized operands, and a float32
    result its float64 result rounded once (what contraction/posteriori.py relies on)."""
    params = {"slices": 4} if mode == "ozaki" else {}
    for dtype in (torch.float32, torch.float64):
        a, b = _laid_out(layout, dtype)
        c = kernels.bmm(a, b, mode, **params)
        assert relative_error(c, a, b) <= _precision.error_bound(mode, dtype, 48, **params), (mode, dtype)
        if mode == "ozaki":
            assert torch.equal(c, kernels.bmm(a.contiguous(), b.contiguous(), mode, **params))
    a, b = _laid_out(layout, torch.float32)
    assert torch.equal(kernels.bmm(a, b, mode, **params), kernels.bmm(a.double(), b.double(), mode, **params).float())


def test_empty_batches_give_empty_results():
    for mode in MODES:
        c = run(mode, torch.ones(0, 3, 4), torch.ones(0, 4, 2))
        assert c.shape == (0, 3, 2) and c.dtype is torch.float32


@pytest.mark.heavy
@pytest.mark.parametrize("slices, k, start", [(4, 700, 2), (4, 9000, 3), (5, 2100, 3), (8, 48, 6), (16, 2100, 14)])
def test_ozaki_float64_route_gives_the_fp32_engine_levels_bits(slices, k, start, monkeypatch):
    """On the CPU ozaki's level sums run as float64 GEMMs: the levels that sum exactly in float64 (from ``start``
    up) as one GEMM against bands of B's digits, each lower level as one GEMM and one TwoSum step. That gives the
    bits of the fp32 engine chunks' level sums combined by Sum2 (the route of devices without float64 GEMMs),
    digits of +-256 and 128 included, for A larger than B and B larger than A (computed as (B^T A^T)^T)."""
    assert reference._ozaki_f64.prefix_start(slices, k) == start
    g = torch.Generator().manual_seed(1)
    a = torch.rand(2, 9, k, generator=g, dtype=torch.float64) * 2 - 1
    b = torch.randint(-(2**15), 2**15, (2, k, 5), generator=g).double() / 2**15  # 16 bits: later digits 0
    a[0, 0, :4] = torch.tensor([1 - 2**-10, -(1 - 2**-10), 0.5 / 256, 0.5])  # first digits 256 and -256, then 128s
    assert {256.0, -256.0, 128.0} <= set(torch.cat([d.flatten() for d in reference._ozaki._digits(a, slices)]).tolist())
    for x, y in ((a, b), (b.mT, a.mT)):
        assert reference.ozaki_slices(x, y, slices) == slices
        got = reference.ozaki(x, y, slices=slices)
        with monkeypatch.context() as patch:
            patch.setattr(reference._ozaki, "_FLOAT64_GEMMS", ())
            assert torch.equal(got, reference.ozaki(x, y, slices=slices))


@pytest.mark.parametrize("k", [8159, 8160])
def test_ozaki_float64_route_is_exact_at_the_edge_of_its_prefix(k, monkeypatch):
    """Digits as large as they get and of one sign, (255, 127, 127, 127) on both sides, sum to the most the
    float64 prefix allows at K = 8159 (4 slices: all levels in one exact sum) and just beyond it at 8160 (the
    lowest level apart): the result is the exact sum of the kept digit pairs rounded once, as the fp32 engine
    route gives it."""
    value = Fraction(255, 2**8) + Fraction(127, 2**16) + Fraction(127, 2**24) + Fraction(127, 2**32)
    a = torch.full((1, k), float(value), dtype=torch.float64)
    digits = [255, 127, 127, 127]
    kept = sum(Fraction(digits[i] * digits[j], 2 ** (8 * (i + j + 2))) for i in range(4) for j in range(4 - i))
    assert reference._ozaki_f64.prefix_start(4, k) == (2 if k == 8159 else 3)
    got = reference.ozaki(a, a.mT, slices=4)
    assert got.item() == float(k * kept)
    with monkeypatch.context() as patch:
        patch.setattr(reference._ozaki, "_FLOAT64_GEMMS", ())
        assert torch.equal(got, reference.ozaki(a, a.mT, slices=4))


@pytest.mark.heavy
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape", [(96, 2048, 80), (4, 32, 1024, 24)])
@pytest.mark.parametrize("mode", MODES + ("native",))
def test_peak_extra_memory_within_twice_inputs_and_output(mode, shape, dtype, small_blocks):
    a, b = operands("normal", shape, dtype)
    result, extra = bench_emulation.peak_extra_bytes(lambda: run(mode, a, b))
    limit = 2 * sum(x.untyped_storage().nbytes() for x in (a, b, result))
    assert 0 <= extra <= limit, (mode, extra / limit)


def test_the_memory_helper_sees_temporaries():
    a = torch.ones(256, 256)

    def twice():
        doubled = a * 2  # 256 KiB held while the sum runs
        return (doubled + 1).sum()

    _, extra = bench_emulation.peak_extra_bytes(twice)
    assert extra >= 2 * a.untyped_storage().nbytes()
