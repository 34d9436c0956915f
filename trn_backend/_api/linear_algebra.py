"""Linear-algebra functions of the standard: matmul, matrix_transpose, tensordot, vecdot.

The three contractions are the contraction engine's front doors (``trn_backend.contraction.api``: one planned
matmul or bmm in the kernel layer each), with keyword-only ``precision=`` / ``target_forward_error=`` /
``target_relative_error=`` (one of them) beyond the standard's signatures; matrix_transpose is a view.
"""

from __future__ import annotations

from .._helpers import NeuronArray, tensor, wrap
from ..contraction.api import matmul, tensordot, vecdot

__all__ = ["matmul", "matrix_transpose", "tensordot", "vecdot"]


def matrix_transpose(x: NeuronArray, /) -> NeuronArray:
    """Swap the last two axes (a view, no copy)."""
    t = tensor(x, "matrix_transpose")
    if t.dim() < 2:
        raise ValueError(f"matrix_transpose(): x needs at least 2 dimensions, got shape {tuple(t.shape)}")
    return wrap(t.transpose(-1, -2))
