"""Torch reference implementations of the precision modes: the executable specification of each mode.

Each takes [..., M, K] and [..., K, N] tensors (2-D or batched 3-D) and returns the product. They run on any
torch device (CPU, CUDA, Neuron through torch-neuronx).
"""

from __future__ import annotations

import torch


def native(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The operand dtype and the device's own arithmetic."""
    return torch.matmul(a, b)


MODES = {
    "native": native,
}
