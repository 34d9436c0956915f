"""Every precision mode on float64 operands whose rows and columns are scaled anywhere in 1e-300..1e300 (and on
float32 operands across float32's range): each entry's error, measured in exact rational arithmetic, stays
within the mode's published bound (units of |A||B|), or the mode raises. The emulated modes must not inherit
fp32's range: no inf, nan or 0 where the exact result is a finite float64."""

from __future__ import annotations

from fractions import Fraction

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from trn_backend import _precision, kernels

MODES = ("native", "fast", "sr", "dd", "bf16x6", "ozaki", "fp64")

# Entries are a sign times 0 or a magnitude in [1e-3, 4] (moderate ranges inside a row), times 10**(s + d_i)
# for row i of A and 10**(-s + e_j) for column j of B: each row and column anywhere in 1e-300..1e300, while
# every product term stays a normal float64 (|d_i + e_j| <= 280), so the exact result is a finite float64.
magnitudes = st.one_of(st.just(0.0), st.floats(1e-3, 4.0))
entries = st.builds(lambda m, negative: -m if negative else m, magnitudes, st.booleans())


@st.composite
def scaled_operands(draw, dtype: torch.dtype = torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
    """float64: rows and columns anywhere in 1e-300..1e300; float32: in 1e-17..1e17, so every product term is a
    normal float32 while the products still leave fp32's range in the split modes' unscaled arithmetic."""
    m, k, n = draw(st.integers(1, 4)), draw(st.integers(1, 6)), draw(st.integers(1, 4))
    shift, spread = (160, 140) if dtype is torch.float64 else (8, 9)
    shift = draw(st.integers(-shift, shift))
    rows = [10.0 ** (shift + draw(st.integers(-spread, spread))) for _ in range(m)]
    cols = [10.0 ** (-shift + draw(st.integers(-spread, spread))) for _ in range(n)]
    a = [[draw(entries) * rows[i] for _ in range(k)] for i in range(m)]
    b = [[draw(entries) * cols[j] for j in range(n)] for _ in range(k)]
    if draw(st.booleans()) and k >= 2:  # cancellation: the first two terms of every entry cancel exactly
        for i in range(m):
            a[i][1] = -a[i][0]
        b[1] = list(b[0])
    return torch.tensor(a, dtype=dtype), torch.tensor(b, dtype=dtype)


def _errors_within_bound(got: torch.Tensor, a: torch.Tensor, b: torch.Tensor, bound: float) -> None:
    fa = [[Fraction(x) for x in row] for row in a.tolist()]
    fb = [[Fraction(x) for x in row] for row in b.tolist()]
    for i, row in enumerate(got.tolist()):
        for j, value in enumerate(row):
            terms = [x * r[j] for x, r in zip(fa[i], fb, strict=True)]
            exact, scale = sum(terms), sum(abs(t) for t in terms)
            assert value == value and abs(value) != float("inf"), f"entry {i, j} is {value}, exact {float(exact)}"
            assert abs(Fraction(value) - exact) <= Fraction(bound) * scale, (
                f"entry {i, j}: {value!r} vs exact {float(exact)!r}, error {float(abs(Fraction(value) - exact))} "
                f"> {bound} * |A||B| = {float(Fraction(bound) * scale)}"
            )


@pytest.mark.parametrize("mode", MODES)
@given(operands=scaled_operands())
def test_every_mode_keeps_its_bound_across_the_float64_range(mode, operands):
    a, b = operands
    try:
        got = kernels.matmul(a, b, mode)
    except ValueError as e:  # a mode may refuse what it cannot vouch for, never answer wrongly
        assert "cannot vouch" in str(e) or "would need more than" in str(e), e
        return
    _errors_within_bound(got, a, b, _precision.error_bound(mode, torch.float64, a.shape[1]))


@pytest.mark.parametrize("mode", MODES)
@given(operands=scaled_operands(torch.float32))
def test_every_mode_keeps_its_bound_on_float32_operands(mode, operands):
    a, b = operands
    _errors_within_bound(kernels.matmul(a, b, mode), a, b, _precision.error_bound(mode, torch.float32, a.shape[1]))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("mode", MODES)
def test_zero_operands_give_exact_zeros(mode, dtype):
    a, b = torch.zeros(3, 4, dtype=dtype), torch.ones(4, 2, dtype=dtype)
    b[1] = 0
    for x, y in ((a, b), (b.T, a.T), (torch.ones(3, 4, dtype=dtype), b * 0)):
        assert torch.equal(kernels.matmul(x, y, mode), torch.zeros(x.shape[0], y.shape[1], dtype=dtype))
