"""The inspection API of the standard: ``__array_namespace_info__()`` and what it reports.

Every one of the standard's 13 dtypes works on every device this namespace runs on (uint16/32/64 through
torch's compute dtypes), so ``dtypes()`` lists all of them, filtered by kind as in ``isdtype``; the extension
dtypes float16 and bfloat16 are not listed. Dtypes are NumPy dtype objects, devices torch.device objects.
"""

from __future__ import annotations

import numpy as np
import torch

from .. import _device, _dtypes

__all__ = ["__array_namespace_info__"]

# torch refuses tensors of more than 64 dimensions in reductions, flips and other kernels.
_MAX_DIMENSIONS = 64


class Devices(tuple):
    """The tuple of devices that the 2025.12 standard asks ``devices()`` for. Until 2024.12 it was a list, and
    code written for that (SciPy's test fixtures: ``devices() + [None]``) concatenates a list to it: ``+`` with
    a list gives a list, as it did then."""

    __slots__ = ()

    def __add__(self, other: tuple | list) -> tuple | list:  # type: ignore[override]
        if isinstance(other, list):
            return list(self) + other
        return tuple.__add__(self, other)


class Info:
    """The inspection namespace: capabilities, devices and dtypes of trn_backend."""

    __slots__ = ()

    def capabilities(self) -> dict[str, bool | int | None]:
        """Boolean indexing and data-dependent shapes (nonzero, unique_*) work; rank is limited by torch."""
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": _MAX_DIMENSIONS}

    def default_device(self) -> torch.device:
        """The device arrays are created on when no device is given (Neuron when present, else the CPU)."""
        return _device.default_device()

    def devices(self) -> Devices:
        """The devices available at runtime: the CPU, any GPUs, the Neuron device and the default device."""
        return Devices(_device.available_devices())

    def default_dtypes(self, *, device: torch.device | str | None = None) -> dict[str, np.dtype]:
        """The default real, complex, integral and index dtypes on ``device`` (the default device if None):
        float64 and complex128 as in NumPy, except on Neuron (no float64 there): float32 and complex64."""
        dev = _device.default_device() if device is None else _check_device(device, "default_dtypes")
        return {
            "real floating": _dtypes.PUBLIC[_dtypes.default_float(dev)],
            "complex floating": _dtypes.PUBLIC[_dtypes.default_complex(dev)],
            "integral": _dtypes.PUBLIC[_dtypes.default_int()],
            "indexing": _dtypes.PUBLIC[_dtypes.default_int()],
        }

    def dtypes(
        self, *, device: torch.device | str | None = None, kind: str | tuple[str, ...] | None = None
    ) -> dict[str, np.dtype]:
        """The supported dtypes by canonical name; kind ('bool', 'signed integer', 'numeric', ...) or a tuple
        of kinds selects their union."""
        _check_device(device, "dtypes")
        if kind is None:
            selected = set(_dtypes.STANDARD)
        else:
            kinds = kind if isinstance(kind, tuple) else (kind,)
            selected = set().union(*(_kind(k) for k in kinds))
        return {_dtypes.name(d): _dtypes.PUBLIC[d] for d in _dtypes.STANDARD if d in selected}

    def __repr__(self) -> str:
        return "trn_backend.__array_namespace_info__()"


def _kind(kind: object) -> tuple[torch.dtype, ...]:
    if not isinstance(kind, str):
        raise TypeError(f"dtypes(): kind must be a string or a tuple of strings, got {type(kind).__name__}")
    try:
        return _dtypes.KINDS[kind]
    except KeyError:
        known = ", ".join(map(repr, _dtypes.KINDS))
        raise ValueError(f"dtypes(): unknown kind {kind!r}; known kinds: {known}") from None


def _check_device(device: object, func: str) -> torch.device | None:
    """None is the default device; anything else must be one of devices()."""
    if device is None:
        return None
    d = _device.normalize(device, func)
    if not any(_device.same(d, known) for known in _device.available_devices()):
        raise ValueError(f"{func}(): device {d} is not available here; devices() lists the available ones")
    return d


def __array_namespace_info__() -> Info:
    """The inspection namespace of the standard: ``info.capabilities()``, ``info.dtypes(kind=...)``, ..."""
    return Info()
