"""Mode bf16x6: a three-word bf16 split, six engine passes in chunked, TwoSum-combined accumulation."""

from __future__ import annotations

import torch

from ..bounds import BF16X6_CHUNK
from ._common import _emulated
from ._split import _split_fp32


@_emulated
def bf16x6(a: torch.Tensor, b: torch.Tensor, *, fused=None) -> torch.Tensor:
    """Three-word bf16 split, six products, PSUM chunks of BF16X6_CHUNK of K added in groups and combined with
    TwoSum: six engine passes, at least as accurate as an fp32 SGEMM. ``fused``: see _split_fp32."""
    return _split_fp32(a, b, 3, "bf16x6", BF16X6_CHUNK, fused=fused)
