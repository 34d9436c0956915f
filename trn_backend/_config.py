"""``trn_backend.config``: settings that change where contractions run, not what they compute. They are the kernel
layer's routing settings, defined in ``trn_backend.kernels.config`` (the kernels read them there)."""

from __future__ import annotations

from .kernels.config import NKI_CHOICES, Config, _from_environment, config  # noqa: F401  (_from_environment: tests)

__all__ = ["Config", "config", "NKI_CHOICES"]
