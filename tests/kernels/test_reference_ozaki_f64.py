"""ozaki's float64 route by rectangles of digit windows (kernels/reference/_ozaki_f64.py): the cover of the kept
digit pairs, the windows, and the results, bit for bit against the prefix-and-levels route it replaces and the fp32
engine route of devices without float64 GEMMs, whatever the blocking, pieces and tiles."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from trn_backend.kernels import reference
from trn_backend.kernels.reference import _ozaki_f64

RECTANGLE_CASES = [(s, k) for s in range(1, 17) for k in (1, 7, 48, 480, 512, 2100, 8159, 8160, 2**20, 3 * 10**6)]


@pytest.mark.parametrize("slices, k", RECTANGLE_CASES)
def test_rectangles_cover_every_kept_pair_once_and_sum_exactly(slices, k):
    groups = _ozaki_f64.rectangles(slices, k)
    assert groups is not None
    pairs = [(i, j) for g in groups for i0, a, j0, b in g for i in range(i0, i0 + a) for j in range(j0, j0 + b)]
    assert sorted(pairs) == [(i, j) for i in range(1, slices + 1) for j in range(1, slices + 2 - i)]
    for group in groups:
        finest = _ozaki_f64._finest(group)
        total = 0
        for i0, a, j0, b in group:
            bound = k * _ozaki_f64._window_bound(i0, a) * _ozaki_f64._window_bound(j0, b)
            assert bound <= 2**53
            total += bound << (8 * (finest - (i0 + a + j0 + b - 2)))
        assert total <= 2**53
    # the route runs up to 9 slices (float64's default is 8) at every K here; beyond, the levels' route may stay
    if slices <= 9:
        assert _ozaki_f64._exact_errors(slices, k, groups)
    # no more GEMMs than the prefix and levels took
    start = _ozaki_f64.prefix_start(slices, k)
    assert sum(map(len, groups)) <= slices + (start - 1) * (start - 2) // 2


def test_rectangles_need_fewer_gemms_where_the_levels_took_many():
    assert sum(map(len, _ozaki_f64.rectangles(8, 512))) == 11  # the levels and prefix: 18
    assert _ozaki_f64._takes_rectangles(8, 512, _ozaki_f64.prefix_start(8, 512), _ozaki_f64.rectangles(8, 512))
    # float32's 4 slices: the prefix alone, 4 GEMMs either way: the prefix's bands stay
    assert not _ozaki_f64._takes_rectangles(4, 4096, 2, _ozaki_f64.rectangles(4, 4096))


def _window_cases():
    return st.tuples(st.integers(1, 16), st.integers(0, 2**32 - 1))


@settings(max_examples=40, deadline=None, derandomize=True)
@given(_window_cases())
def test_windows_are_the_digits_sums(case):
    slices, seed = case
    g = np.random.default_rng(seed)
    x = torch.from_numpy((g.random(300) * 2 - 1) * 2.0 ** g.integers(-60, 1, 300))
    x[:4] = torch.tensor([1 - 2**-10, -(1 - 2**-10), 0.5 / 256, 0.5], dtype=torch.float64)  # digits of +-256, 128
    digits = reference._ozaki._digits(x, slices)
    windows = [(i0, a) for i0 in range(1, slices + 1) for a in range(1, slices + 2 - i0)]
    outs = [torch.empty_like(x) for _ in windows]
    _ozaki_f64._fill_windows(x.clone(), [(i0, a, 2.0**-16, out) for (i0, a), out in zip(windows, outs, strict=True)])
    for (i0, a), out in zip(windows, outs, strict=True):
        expected = sum(digits[t - 1] * 2.0 ** (8 * (i0 + a - 1 - t)) for t in range(i0, i0 + a)) * 2.0**-16
        assert torch.equal(out, expected), (i0, a)


def _operands(batch, m, k, n, dtype, spread, seed):
    g = np.random.default_rng(seed)
    lead = () if batch is None else (batch,)
    a = g.standard_normal((*lead, m, k)) * 2.0 ** g.integers(-spread, spread + 1, (*lead, m, k))
    b = g.standard_normal((*lead, k, n)) * 2.0 ** g.integers(-spread, spread + 1, (*lead, k, n))
    a *= 2.0 ** g.integers(-spread, spread + 1, (*lead, m, 1))
    return torch.from_numpy(a).to(dtype), torch.from_numpy(b).to(dtype)


def _rectangles_wherever_exact(patch: pytest.MonkeyPatch) -> None:
    """The rectangles' route wherever it vouches for the bits (not only where it needs fewer GEMMs)."""
    exact = _ozaki_f64._exact_errors
    patch.setattr(
        _ozaki_f64,
        "_takes_rectangles",
        lambda slices, k, start, groups: groups is not None and exact(slices, k, groups),
    )


shapes = st.tuples(st.one_of(st.none(), st.integers(1, 3)), st.integers(1, 40), st.integers(1, 300), st.integers(1, 40))


@pytest.mark.heavy
@settings(max_examples=30, deadline=None, derandomize=True)
@given(
    shapes,
    st.sampled_from([torch.float32, torch.float64]),
    st.integers(0, 12),
    st.integers(0, 2**32 - 1),
    st.sampled_from([None, 3, 5]),
)
def test_rectangles_give_the_levels_bits(shape, dtype, spread, seed, slices):
    """The rectangles' route against the prefix-and-levels route and the fp32 engine chunks, one block and blocked
    (small plans, pieces and K-pieces), bit for bit."""
    a, b = _operands(*shape, dtype, spread, seed)
    with pytest.MonkeyPatch.context() as patch:
        _rectangles_wherever_exact(patch)
        got = reference.ozaki(a, b, slices=slices)
        with pytest.MonkeyPatch.context() as small:
            small.setattr(reference._common, "MIN_BLOCK_ELEMENTS", 2**8)
            small.setattr(_ozaki_f64, "_PIECE", 37)
            small.setattr(_ozaki_f64, "_WINDOWS", 2**9)
            assert torch.equal(got, reference.ozaki(a, b, slices=slices))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_ozaki_f64, "rectangles", lambda s, k: None)
        assert torch.equal(got, reference.ozaki(a, b, slices=slices))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(reference._ozaki, "_FLOAT64_GEMMS", ())
        assert torch.equal(got, reference.ozaki(a, b, slices=slices))
    assert torch.equal(got, reference.ozaki(a, b, slices=slices))  # the default choice of route


@pytest.mark.heavy
@pytest.mark.parametrize("k", [20000, 3 * 10**5])
def test_thin_products_in_k_pieces_give_the_levels_bits(k):
    """A dot product runs its K-blocks in pieces whose windows stay in cache: the same bits."""
    a, b = _operands(None, 1, k, 1, torch.float64, 4, 0)
    with pytest.MonkeyPatch.context() as patch:
        _rectangles_wherever_exact(patch)
        calls, rect_total = [], _ozaki_f64._rect_total
        patch.setattr(_ozaki_f64, "_rect_total", lambda *args, **kwargs: calls.append(1) or rect_total(*args, **kwargs))
        got = reference.ozaki(a, b)
        assert calls  # the rectangles' route ran
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_ozaki_f64, "rectangles", lambda s, k: None)
        assert torch.equal(got, reference.ozaki(a, b))


def test_wide_exponents_and_nonfinite_entries_give_the_levels_bits():
    a, b = _operands(2, 30, 70, 20, torch.float64, 2, 1)
    a *= 2.0 ** torch.arange(-300, 300, 20, dtype=torch.float64)[:, None]  # rows across float64's range
    b *= 2.0 ** torch.arange(-1000, 1000, 100, dtype=torch.float64)  # columns too
    a[0, 0, 0], b[1, 3, 2], a[1, 5, 1] = float("inf"), float("nan"), -float("inf")
    with pytest.MonkeyPatch.context() as patch:
        _rectangles_wherever_exact(patch)
        got = reference.ozaki(a, b)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_ozaki_f64, "rectangles", lambda s, k: None)
        expected = reference.ozaki(a, b)
    assert torch.equal(torch.nan_to_num(got), torch.nan_to_num(expected))
    assert torch.equal(got.isnan(), expected.isnan())
