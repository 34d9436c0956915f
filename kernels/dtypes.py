"""The integer compute dtypes the kernels need: torch stores uint16/32/64 but implements few kernels for them, so
their arithmetic runs in a wider (or same-width signed) dtype and is wrapped back, which is exact for the modular
semantics of unsigned integers. ``trn_backend._dtypes`` publishes these for the rest of the package."""

from __future__ import annotations

import torch

COMPUTE = {torch.uint16: torch.int32, torch.uint32: torch.int64, torch.uint64: torch.int64}


def compute(t: torch.Tensor) -> torch.Tensor:
    """The tensor in a dtype torch fully supports. uint64 keeps its bit pattern as int64 (modular arithmetic,
    bitwise operations and equality are then exact; ordering needs ``ordered``)."""
    if t.dtype is torch.uint64:
        return t.view(torch.int64)
    c = COMPUTE.get(t.dtype)
    return t if c is None else t.to(c)


def restore(t: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Back from the compute dtype to ``dtype``, wrapping modulo 2**bits for unsigned types."""
    if t.dtype is dtype:
        return t
    if dtype is torch.uint64 and t.dtype is torch.int64:
        return t.view(torch.uint64)
    return t.to(dtype)
