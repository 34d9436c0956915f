"""The native kernel's direct path on operands of every layout: batched operands whose matrices no GEMM can read
as they are (batch stride 1), transposed, broadcast (stride 0) and conjugate views, real and complex, against a
float64/complex128 product of the same values in NumPy, within the textbook bound of a dot product."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from trn_backend import kernels

LAYOUTS = ("contiguous", "batch last", "transposed", "broadcast", "conjugate")


def _view(t: torch.Tensor, layout: str) -> torch.Tensor:
    """``t`` ([B, R, C]) with the same values in another memory layout."""
    if layout == "batch last":  # [R, C, B] memory, read as [B, R, C]: matrices with no unit stride
        return t.permute(1, 2, 0).contiguous().permute(2, 0, 1)
    if layout == "transposed":
        return t.mT.contiguous().mT
    if layout == "broadcast":
        return t[:1].expand(t.shape)
    if layout == "conjugate" and t.is_complex():
        return t.conj().resolve_conj().conj()  # a lazy conjugate view holding t's values
    return t


@settings(max_examples=40)
@given(
    st.integers(1, 5),
    st.integers(1, 7),
    st.integers(1, 9),
    st.integers(1, 7),
    st.sampled_from(LAYOUTS),
    st.sampled_from(LAYOUTS),
    st.sampled_from([torch.float32, torch.float64, torch.complex64, torch.complex128]),
    st.integers(0, 2**16),
)
def test_bmm_on_every_layout_is_the_product_within_the_bound(b, m, k, n, layout_a, layout_b, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(b, m, k, dtype=dtype, generator=g)
    y = torch.randn(b, k, n, dtype=dtype, generator=g)
    va, vb = _view(a, layout_a), _view(y, layout_b)
    wide = np.complex128 if dtype.is_complex else np.float64
    want = np.matmul(va.resolve_conj().numpy().astype(wide), vb.resolve_conj().numpy().astype(wide))
    got = kernels.bmm(va, vb, "native").numpy().astype(wide)
    scale = np.matmul(np.abs(va.resolve_conj().numpy().astype(wide)), np.abs(vb.resolve_conj().numpy().astype(wide)))
    # Higham's bound of a length-k dot product in any order, gamma_k = k u / (1 - k u), and sqrt(2) gamma_(k+2) for
    # complex ones (Higham, Accuracy and Stability, 3.1 and 3.6)
    u = torch.finfo(dtype).eps / 2
    steps = k + 2 if dtype.is_complex else k
    limit = (2**0.5 if dtype.is_complex else 1) * steps * u / (1 - steps * u) * scale
    assert np.all(np.abs(got - want) <= limit), (layout_a, layout_b, dtype)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
@pytest.mark.parametrize("where", ["a", "b"])
def test_a_special_value_in_an_expanding_complex_step_gets_the_textbook_pattern(dtype, where):
    """An expanding step (fewer operand entries than product entries: the check sums the operands): an inf in
    one operand sets its row (column) as the textbook formula does, inf+nanj here, not torch's nan+nanj."""
    a, b = torch.ones(6, 1, dtype=dtype), torch.ones(1, 6, dtype=dtype)
    if where == "a":
        a[2, 0] = complex(float("inf"), 0)
    else:
        b[0, 2] = complex(float("inf"), 0)
    got = kernels.matmul(a, b, "native")
    line = got[2] if where == "a" else got[:, 2]
    assert torch.isinf(line.real).all() and torch.isnan(line.imag).all()
    rest = torch.ones(6, 6, dtype=torch.bool)
    if where == "a":
        rest[2] = False
    else:
        rest[:, 2] = False
    assert (got[rest] == 1).all()
