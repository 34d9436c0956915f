"""Devices: torch.device objects, the default device, and the Neuron device when the toolchain is present.

Device objects are ``torch.device`` (they compare with ``==``). The default is the Neuron device when
torch-neuronx is importable, else the CPU; ``TRN_BACKEND_DEVICE`` (e.g. ``cpu``, ``cuda:0``) overrides both.
"""

from __future__ import annotations

import functools
import importlib.util
import os

import torch

ENV_VAR = "TRN_BACKEND_DEVICE"


@functools.cache
def neuron_available() -> bool:
    """True when torch-neuronx (the Neuron PyTorch plugin) is installed; never imports it at module import."""
    return importlib.util.find_spec("torch_neuronx") is not None


def neuron_device() -> torch.device:
    # torch-neuronx registers its device under the XLA device type in the classic stack and as "neuron" in the
    # native TorchNeuron stack; both are reached through torch.device.
    import torch_neuronx  # noqa: F401  (import-gated: registers the device type)

    for kind in ("neuron", "xla"):
        try:
            return torch.device(kind, 0)
        except RuntimeError:
            continue
    raise RuntimeError("torch-neuronx is installed but registers neither a 'neuron' nor an 'xla' device")


def default_device() -> torch.device:
    override = os.environ.get(ENV_VAR)
    if override:
        try:
            return torch.device(override)
        except RuntimeError as e:
            raise ValueError(f"{ENV_VAR}={override!r} is not a torch device string ({e})") from None
    if neuron_available():
        return neuron_device()
    return torch.device("cpu")


def available_devices() -> tuple[torch.device, ...]:
    devices = [torch.device("cpu")]
    if torch.cuda.is_available():
        devices += [torch.device("cuda", i) for i in range(torch.cuda.device_count())]
    if neuron_available():
        devices.append(neuron_device())
    default = default_device()
    if default not in devices:
        devices.append(default)
    return tuple(devices)


def normalize(device: object, func: str = "device") -> torch.device:
    """Accept a torch.device or a device string (``"cpu"``, ``"cuda:0"``); anything else is a TypeError."""
    if isinstance(device, torch.device):
        return device
    if isinstance(device, str):
        try:
            return torch.device(device)
        except RuntimeError as e:
            raise ValueError(f"{func}: {device!r} is not a device ({e})") from None
    raise TypeError(f"{func}: expected a device (e.g. x.device or 'cpu'), got {type(device).__name__}")


def same(a: torch.device, b: torch.device) -> bool:
    """cuda and cuda:0 are one device when 0 is the current one; compare with indices filled in."""
    if a.type != b.type:
        return False
    if a.index is None or b.index is None:
        return a.index == b.index or a.type == "cpu" or _current_index(a.type) in (a.index, b.index)
    return a.index == b.index


def _current_index(kind: str) -> int | None:
    if kind == "cuda" and torch.cuda.is_available():
        return torch.cuda.current_device()
    return 0
