"""The kernel layer (installed as ``trn_backend.kernels``): the only place where contraction arithmetic happens.

``matmul(a, b, mode)`` multiplies [M, K] x [K, N] and ``bmm(a, b, mode)`` [B, M, K] x [B, K, N], both on torch
tensors, under a precision mode named in ``trn_backend.precision``. The torch reference implementation of every
mode (``reference.py``) runs on any torch device; on a Neuron device with the NKI toolchain present, modes with an
NKI kernel (``nki_kernels.py``, import-gated) run as one fused device program instead.

Every call is counted in ``CALLS`` so tests can prove that no contraction bypasses this layer.
"""

from __future__ import annotations

import collections
import contextlib
from collections.abc import Iterator
from typing import Any

import torch

from . import reference

__all__ = ["matmul", "bmm", "CALLS", "count_calls", "reference"]

# (kernel name, mode name) -> number of calls since import
CALLS: collections.Counter[tuple[str, str]] = collections.Counter()


@contextlib.contextmanager
def count_calls() -> Iterator[collections.Counter[tuple[str, str]]]:
    """Count kernel calls made inside the block: ``with count_calls() as c: ...; c[("bmm", "native")]``."""
    before = CALLS.copy()
    delta: collections.Counter[tuple[str, str]] = collections.Counter()
    try:
        yield delta
    finally:
        delta.update(CALLS - before)


def _implementation(mode: str):
    try:
        return reference.MODES[mode]
    except KeyError:
        raise ValueError(f"unknown kernel mode {mode!r}; known: {', '.join(reference.MODES)}") from None


def matmul(a: torch.Tensor, b: torch.Tensor, mode: str = "native", **params: Any) -> torch.Tensor:
    """[M, K] x [K, N] -> [M, N] under ``mode``; ``params`` are the mode's own settings."""
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"kernels.matmul needs [M, K] x [K, N], got {tuple(a.shape)} x {tuple(b.shape)}")
    impl = _implementation(mode)
    CALLS["matmul", mode] += 1
    return impl(a, b, **params)


def bmm(a: torch.Tensor, b: torch.Tensor, mode: str = "native", **params: Any) -> torch.Tensor:
    """[B, M, K] x [B, K, N] -> [B, M, N] under ``mode``."""
    if a.dim() != 3 or b.dim() != 3 or a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
        raise ValueError(f"kernels.bmm needs [B, M, K] x [B, K, N], got {tuple(a.shape)} x {tuple(b.shape)}")
    impl = _implementation(mode)
    CALLS["bmm", mode] += 1
    return impl(a, b, **params)
