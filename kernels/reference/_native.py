"""Mode native: the operand dtype and the device's own arithmetic, exact for integers and bool."""

from __future__ import annotations

import cmath

import torch

from .. import dtypes as _dtypes


def native(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The operand dtype and the device's own arithmetic; integer and bool products are exact (modular for
    integers, logical for bool, as in NumPy)."""
    if a.is_complex():
        return textbook_specials(torch.matmul(a, b), a, b)
    if a.is_floating_point():
        return torch.matmul(a, b)
    return _exact(a, b)


def textbook_specials(c: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """A complex product ``c = a @ b`` with the entries an inf or nan input feeds set as IEEE arithmetic on the
    textbook formula sets them (Re = sum ar br - ai bi, Im = sum ar bi + ai br: NumPy's and Python's ``inf+nanj``
    for (inf+0j)(1+0j)). torch's complex GEMM makes all of them nan+nanj; four real products keep the pattern,
    and the emulated modes, which are four real products, give it too.

    The check costs one sum of the product, not of the operands: a GEMM adds every term a_ik b_kj into c_ij, and
    a term with an inf or nan factor is inf or nan whatever the other factor (inf * 0 is nan), as is any sum
    holding one, so an inf or nan operand entry that feeds an entry of c leaves that entry non-finite; a finite
    sum of c proves every entry finite and nothing to fix. Entries that overflow from finite operands also answer
    "not finite", a false alarm that only sends the call to its exact per-row check. Where the operands have
    fewer entries than the product (an expanding step), their sums are the cheaper proof, as sound: a sum is inf
    or nan whenever a term is, so finite sums prove every operand entry finite."""
    if c.numel() <= a.numel() + b.numel():
        if cmath.isfinite(c.sum().item()):
            return c
    elif cmath.isfinite((a.sum() + b.sum()).item()):
        return c
    # view_as_real reinterprets memory, which torch refuses on a lazy conjugate view (vecdot's conj(x1))
    a, b = (x.resolve_conj().resolve_neg() for x in (a, b))
    # both parts at once, as reals (complex isfinite is several passes)
    rows = torch.isfinite(torch.view_as_real(a)).flatten(-2).all(-1)
    cols = torch.isfinite(torch.view_as_real(b)).all(-1).all(-2)
    if bool(rows.all()) and bool(cols.all()):
        return c  # finite operands: c's inf entries are overflows, which the textbook formula shares
    # contiguous parts: a GEMM of every other float (the .real view's stride 2) is about 8x slower
    ar, ai, br, bi = (x.contiguous() for x in (a.real, a.imag, b.real, b.imag))
    textbook = torch.complex(torch.matmul(ar, br) - torch.matmul(ai, bi), torch.matmul(ar, bi) + torch.matmul(ai, br))
    return torch.where(rows.unsqueeze(-1) & cols.unsqueeze(-2), c, textbook)


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
