"""Precision modes: the registry, the active-mode context, and resolution of a mode for one contraction.

(First cut: only "native" is registered; the precision work adds the other modes behind the same ``resolve``.)
"""

from __future__ import annotations

import dataclasses

import torch


@dataclasses.dataclass(frozen=True)
class Resolved:
    """The mode one binary contraction runs under: kernel mode name, its parameters, and its error bound
    (componentwise, in units of |A||B|; None where no bound is published)."""

    mode: str
    params: tuple[tuple[str, object], ...] = ()
    bound: float | None = None

    @property
    def kwargs(self) -> dict[str, object]:
        return dict(self.params)


def resolve(dtype: torch.dtype, K: int, device: torch.device, *, precision: str | None = None,
            target_forward_error: float | None = None) -> Resolved:
    """The mode for one binary contraction of contracted length ``K`` on ``device``."""
    if precision is not None and target_forward_error is not None:
        raise ValueError("give precision= or target_forward_error=, not both")
    if precision not in (None, "native"):
        raise ValueError(f"unknown precision mode {precision!r}; known: native")
    return Resolved("native")
