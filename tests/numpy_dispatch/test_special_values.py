"""inf and nan through the products and correlations: conjugated complex products (vecdot, numpy.vdot) and
lazily conjugated inputs in every precision mode, and numpy.convolve / numpy.correlate, whose edges sum only
overlapping entries. Oracles: NumPy's elementwise arithmetic on the same data (the textbook complex product,
summed directly), and NumPy's convolve and correlate themselves for real data."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import trn_backend as xp
from tests.support import assert_same

MODES = ("native", "fast", "sr", "dd", "bf16x6", "ozaki", "fp64")
SPECIAL = (0.0, 1.0, -2.0, 0.5, np.inf, -np.inf, np.nan)


def _textbook_dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """sum of a * b with NumPy's elementwise complex product ((ar br - ai bi) + (ar bi + ai br)j), summed
    part by part: where an inf or nan lands does not depend on the order of the sum."""
    with np.errstate(all="ignore"):
        products = a * b
    if not np.iscomplexobj(products):
        return np.asarray(np.sum(products))
    return _complex([np.sum(products.real)], [np.sum(products.imag)]).reshape(())


def _parts(n: int) -> st.SearchStrategy:
    return st.lists(st.sampled_from(SPECIAL), min_size=n, max_size=n)


def _complex(re: list[float], im: list[float]) -> np.ndarray:
    out = np.empty(len(re), dtype=np.complex128)
    out.real, out.imag = re, im  # assigned part by part: re + 1j * im would turn inf * 1j into nan + infj
    return out


@pytest.mark.parametrize("mode", MODES)
@given(data=st.data())
def test_complex_vecdot_and_vdot_with_inf_and_nan(mode: str, data: st.DataObject) -> None:
    n = data.draw(st.integers(1, 4))
    a = _complex(data.draw(_parts(n)), data.draw(_parts(n)))
    b = _complex(data.draw(_parts(n)), data.draw(_parts(n)))
    expected = _textbook_dot(np.conj(a), b)
    with xp.precision(mode):
        assert_same(xp.vecdot(xp.asarray(a), xp.asarray(b)), expected, rtol=1e-12)
        assert_same(np.vdot(xp.asarray(a), xp.asarray(b)), expected, rtol=1e-12)


@pytest.mark.parametrize("mode", MODES)
def test_lazily_conjugated_operands_reach_every_mode(mode: str) -> None:
    # torch's conj() view (and the negative view of its imaginary part) cannot be reinterpreted as real data
    z = torch.tensor([[1 + 2j, np.inf - 1j], [0.5j, 3.0 + 0j]], dtype=torch.complex128)
    w = np.array([[1 - 1j], [2 + 0.25j]])
    lazy = xp.from_torch(z.conj())
    expected = np.array([_textbook_dot(np.conj(z.numpy())[i], w[:, 0]) for i in range(2)]).reshape(2, 1)
    with xp.precision(mode):
        assert_same(xp.matmul(lazy, xp.asarray(w)), expected, rtol=1e-12)
        finite = xp.from_torch(torch.tensor([[1 + 2j, 3 - 1j]], dtype=torch.complex128).conj())
        assert_same(xp.matmul(finite, xp.asarray(w)), np.array([[1 - 2j, 3 + 1j]]) @ w, rtol=1e-12)
        imag = xp.from_torch(z.conj().imag)  # a negative view
        assert_same(xp.matmul(imag, xp.asarray(w.real)), -z.numpy().imag @ w.real, rtol=1e-12)


@given(
    a=st.lists(st.sampled_from(SPECIAL), min_size=1, max_size=7),
    v=st.lists(st.sampled_from(SPECIAL), min_size=1, max_size=7),
    mode=st.sampled_from(("full", "same", "valid")),
)
def test_convolve_and_correlate_with_inf_and_nan_match_numpy(a: list[float], v: list[float], mode: str) -> None:
    a_, v_ = np.array(a), np.array(v)
    with np.errstate(all="ignore"):
        convolved, correlated = np.convolve(a_, v_, mode), np.correlate(a_, v_, mode)
    assert_same(np.convolve(xp.asarray(a_), xp.asarray(v_), mode), convolved, rtol=1e-12)
    assert_same(np.correlate(xp.asarray(a_), xp.asarray(v_), mode), correlated, rtol=1e-12)


def test_convolve_keeps_inf_at_the_edges() -> None:
    # zero padding would compute 0 * inf = nan in the first and last lags
    got = np.convolve(xp.asarray([1.0, np.inf, 2.0]), xp.asarray([1.0, 1.0]))
    assert_same(got, np.array([1.0, np.inf, np.inf, 2.0]))
    got = np.convolve(xp.asarray(np.array([1.0, 2.0], dtype=np.float32)), xp.asarray(np.array([np.inf], np.float32)))
    assert_same(got, np.array([np.inf, np.inf], dtype=np.float32))


@given(data=st.data(), mode=st.sampled_from(("full", "same", "valid")))
def test_complex_correlate_with_inf_and_nan(data: st.DataObject, mode: str) -> None:
    la, lv = data.draw(st.integers(1, 5)), data.draw(st.integers(1, 5))
    a = _complex(data.draw(_parts(la)), data.draw(_parts(la)))
    v = _complex(data.draw(_parts(lv)), data.draw(_parts(lv)))
    # the textbook products of each lag's overlapping entries (NumPy's own complex correlate sums through BLAS)
    cv = np.conj(v)
    full = np.array(
        [_textbook_dot(a[max(k, 0) : min(la, k + lv)], cv[max(-k, 0) : min(lv, la - k)]) for k in range(-(lv - 1), la)]
    )
    with np.errstate(all="ignore"):
        window = np.correlate(np.ones(la), np.ones(lv), mode).shape[0]  # the mode's lag count, NumPy's
    long, short = max(la, lv), min(la, lv)
    start = {"full": 0, "valid": short - 1, "same": short - 1 - short // 2 if la >= lv else short // 2}[mode]
    assert_same(np.correlate(xp.asarray(a), xp.asarray(v), mode), full[start : start + window], rtol=1e-12)
    assert window == {"full": la + lv - 1, "valid": long - short + 1, "same": long}[mode]
