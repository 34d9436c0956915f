"""Mode native: the operand dtype and the device's own arithmetic, exact for integers and bool."""

from __future__ import annotations

import cmath

import torch

from .. import dtypes as _dtypes


def native(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The operand dtype and the device's own arithmetic; integer and bool products are exact (modular for
    integers, logical for bool, as in NumPy)."""
    if a.is_complex():
        return _textbook_specials(torch.matmul(a, b), a, b)
    if a.is_floating_point():
        return torch.matmul(a, b)
    return _exact(a, b)


def _textbook_specials(c: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """A complex product ``c`` with the entries an inf or nan input feeds set as IEEE arithmetic on the textbook
    formula sets them (Re = sum ar br - ai bi, Im = sum ar bi + ai br: NumPy's and Python's ``inf+nanj`` for
    (inf+0j)(1+0j)). torch's complex GEMM makes all of them nan+nanj; four real products keep the pattern,
    and the emulated modes, which are four real products, give it too."""
    if _no_special_values(a, b):
        return c
    # view_as_real reinterprets memory, which torch refuses on a lazy conjugate view (vecdot's conj(x1))
    a, b = (x.resolve_conj().resolve_neg() for x in (a, b))
    # both parts at once, as reals (complex isfinite is several passes)
    rows = torch.isfinite(torch.view_as_real(a)).flatten(-2).all(-1)
    cols = torch.isfinite(torch.view_as_real(b)).all(-1).all(-2)
    # contiguous parts: a GEMM of every other float (the .real view's stride 2) is about 8x slower
    ar, ai, br, bi = (x.contiguous() for x in (a.real, a.imag, b.real, b.imag))
    textbook = torch.complex(torch.matmul(ar, br) - torch.matmul(ai, bi), torch.matmul(ar, bi) + torch.matmul(ai, br))
    return torch.where(rows.unsqueeze(-1) & cols.unsqueeze(-2), c, textbook)


def _no_special_values(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether both operands are surely free of inf and nan, from one sum of each (a single pass and no
    temporaries, unlike isfinite): a sum is inf or nan whenever a term is (inf + x is inf, inf - inf and nan + x
    are nan), so a finite sum proves every term finite. Finite operands whose sum overflows answer False: a
    false alarm, which only sends the caller to its exact per-row check."""
    return cmath.isfinite(a.sum().item() + b.sum().item())


def _exact(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Integer GEMM in a dtype torch supports (uint16/32/64 wrap back exactly, bool counts true products). torch
    has integer GEMM only on the CPU; elsewhere a broadcast multiply-sum (M*K*N memory) keeps it exact."""
    dtype = a.dtype
    if dtype is torch.bool:
        a, b = a.to(torch.int64), b.to(torch.int64)
    else:
        a, b = _dtypes.compute(a), _dtypes.compute(b)
    c = torch.matmul(a, b) if a.device.type == "cpu" else _multiply_sum(a, b)
    return c > 0 if dtype is torch.bool else _dtypes.restore(c, dtype)


def _multiply_sum(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """[..., M, K] x [..., K, N] as a broadcast product summed over K: exact integer arithmetic on any device."""
    return (a.unsqueeze(-1) * b.unsqueeze(-3)).sum(-2)
