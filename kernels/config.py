"""The kernel-routing settings, published as ``trn_backend.config``: they change where contractions run, not what
they compute.

- ``nki``: ``"auto"`` (default) runs steps on the NKI kernels on a Neuron device where the NKI toolchain is
  installed; ``"off"`` never does; ``"model"`` also sends CPU steps to the NKI kernels on the CPU model of the
  NeuronCore (slow: for tests and for seeing the routing without a device).
- ``nki_min_flops``: steps with fewer FLOPs run torch on the device, the others the kernel. ``None`` (default)
  takes the cost model's rule: its threshold for the mode (where the modelled kernel time equals the launch
  overhead), and a first call per shape that runs the kernel only when it outweighs its compile (see
  ``trn_backend.kernels``).

Defaults come from the environment variables TRN_BACKEND_NKI and TRN_BACKEND_NKI_MIN_FLOPS.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

__all__ = ["Config", "config", "NKI_CHOICES"]

NKI_CHOICES = ("auto", "off", "model")


class Config:
    """Validated settings: assigning a bad value raises and names the setting."""

    __slots__ = ("_nki", "_nki_min_flops")

    def __init__(self, nki: str = "auto", nki_min_flops: float | None = None) -> None:
        self.nki = nki
        self.nki_min_flops = nki_min_flops

    @property
    def nki(self) -> str:
        """Where contraction steps may run NKI kernels: ``"auto"`` (the default) on a Neuron device where the NKI
        toolchain is installed; ``"off"`` never; ``"model"`` CPU steps too, on the CPU model of the NeuronCore
        (slow: for tests, and for seeing the routing without a device). Environment: ``TRN_BACKEND_NKI``."""
        return self._nki

    @nki.setter
    def nki(self, value: str) -> None:
        if value not in NKI_CHOICES:
            raise ValueError(f"config.nki must be one of {', '.join(NKI_CHOICES)}, got {value!r}")
        self._nki = value

    @property
    def nki_min_flops(self) -> float | None:
        """Steps with fewer FLOPs run torch on the device, the others the NKI kernel. ``None`` (the default): the
        cost model's rule, its threshold for the mode (where the modelled kernel time equals the launch overhead),
        and a first call per shape that runs the kernel only where it outweighs its compile. Environment:
        ``TRN_BACKEND_NKI_MIN_FLOPS``."""
        return self._nki_min_flops

    @nki_min_flops.setter
    def nki_min_flops(self, value: float | None) -> None:
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
                raise ValueError(f"config.nki_min_flops must be a number >= 0 or None, got {value!r}")
            value = float(value)
        self._nki_min_flops = value

    @contextlib.contextmanager
    def set(self, **settings: object) -> Iterator[Config]:
        """Change settings inside a ``with`` block: ``with config.set(nki="off"): ...``."""
        for name in settings:
            if name not in ("nki", "nki_min_flops"):
                raise AttributeError(f"config has no setting {name!r}; settings: nki, nki_min_flops")
        before = {name: getattr(self, name) for name in settings}
        try:
            for name, value in settings.items():
                setattr(self, name, value)
            yield self
        finally:
            for name, value in before.items():
                setattr(self, name, value)

    def __repr__(self) -> str:
        return f"Config(nki={self.nki!r}, nki_min_flops={self.nki_min_flops!r})"


def _from_environment() -> Config:
    threshold = os.environ.get("TRN_BACKEND_NKI_MIN_FLOPS")
    try:
        return Config(os.environ.get("TRN_BACKEND_NKI", "auto"), None if threshold is None else float(threshold))
    except ValueError as e:
        raise ValueError(f"environment: {e} (from TRN_BACKEND_NKI / TRN_BACKEND_NKI_MIN_FLOPS)") from None


config = _from_environment()
