"""Mode fast: inputs rounded to bf16, one engine pass."""

from __future__ import annotations

import torch

from ._common import _emulated
from ._split import _split_fp32


@_emulated
def fast(a: torch.Tensor, b: torch.Tensor, *, engine=torch.matmul) -> torch.Tensor:
    """Inputs rounded to bf16, one engine pass (fp32 accumulation), rounded to the operand dtype. ``engine``
    runs the pass on fp32 tensors holding bf16 values (the kernel layer's NKI route passes the NKI kernel)."""
    return _split_fp32(a, b, 1, "fast", engine=engine)
