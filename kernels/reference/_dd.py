"""Mode dd: a two-word bf16 split, three engine passes."""

from __future__ import annotations

import torch

from ._common import _emulated
from ._split import _split_fp32


@_emulated
def dd(a: torch.Tensor, b: torch.Tensor, *, fused=None) -> torch.Tensor:
    """Two-word bf16 split, three products (hi*hi, hi*lo, lo*hi), fp32 accumulation smallest products first:
    three engine passes. ``fused``: see _split_fp32 (the kernel layer's NKI route)."""
    return _split_fp32(a, b, 2, "dd", fused=fused)
