"""Mode fp64 (formerly "kahan"): one product in float64 on the host, rounded to the operand dtype."""

from __future__ import annotations

import torch

from ._common import Tiling, _batched, _mac, _operands, _round_to
from ._native import native


def fp64(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Promotion to float64 (complex128) on the host, one product there, rounded to the operand dtype. Real
    operands run tile by tile and K-block by K-block (float64 copies of one block at a time; any summation order
    keeps gamma_K)."""
    a, b = _operands(a, b, "fp64")
    if a.is_complex():
        return native(a.to(torch.complex128), b.to(torch.complex128)).to(a.dtype)
    a3, b3, restore = _batched(a, b)
    if 0 in (*a3.shape, b3.shape[-1]):
        return torch.matmul(a, b)
    batch, m, k = a3.shape
    plan = Tiling(batch, m, k, b3.shape[-1])
    out = a3.new_empty(a3.shape[0], a3.shape[1], b3.shape[2])
    for bs, ms, ns in plan.tiles():
        total = None
        for ks in plan.depth:
            total = _mac(total, a3[bs, ms, ks].double(), b3[bs, ks, ns].double())
        assert total is not None  # K > 0: the plan has a K-block
        out[bs, ms, ns] = _round_to(total, a.dtype)
    return restore(out)
