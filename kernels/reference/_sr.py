"""Mode sr: fast, with stochastic rounding of a bf16/fp16 result."""

from __future__ import annotations

import torch

from ._common import _emulated
from ._split import _split_fp32


def _stochastic_round(y: torch.Tensor, dtype: torch.dtype, generator: torch.Generator | None) -> torch.Tensor:
    """y (float32 or float64) rounded to ``dtype`` up or down to a neighbour, up with probability equal to the
    fractional distance: unbiased. Exact values, inf, nan and overflow round as round-to-nearest does (a cast
    that rounds twice still lands on one of y's two neighbours, which is all ``nearest`` is used for)."""
    nearest = y.to(dtype)
    down = torch.nextafter(nearest, nearest.new_tensor(-torch.inf))
    below = torch.where(nearest.to(y.dtype) > y, down, nearest)
    above = torch.nextafter(below, below.new_tensor(torch.inf))
    fraction = (y - below.to(y.dtype)) / (above.to(y.dtype) - below.to(y.dtype))
    draw = torch.rand(y.shape, generator=generator, device=y.device)
    rounded = torch.where(draw < fraction, above, below)
    return torch.where(torch.isfinite(nearest), rounded, nearest)


@_emulated
def sr(a: torch.Tensor, b: torch.Tensor, *, generator: torch.Generator | None = None) -> torch.Tensor:
    """fast, with stochastic rounding of the fp32 result when the output dtype is bf16 or fp16 (``generator``
    seeds it; tile by tile, in tile order); for float32/float64 outputs there is no rounding to randomise and sr
    equals fast."""
    if torch.finfo(a.dtype).eps <= torch.finfo(torch.float32).eps:
        return _split_fp32(a, b, 1, "sr")
    return _split_fp32(a, b, 1, "sr", finish=lambda y: _stochastic_round(y, a.dtype, generator))
