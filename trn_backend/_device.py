"""Devices: torch.device objects, the default device, and the Neuron device when the toolchain is present.

Device objects are ``torch.device`` (they compare with ``==``). The default is the Neuron device when
torch-neuronx is importable, else the CPU; ``TRN_BACKEND_DEVICE`` (e.g. ``cpu``, ``cuda:0``) overrides both.

Every device a user names (a ``device=`` argument, ``TRN_BACKEND_DEVICE``) goes through ``normalize``, which says
in a ValueError what is missing when the device cannot be used here: the Neuron toolchain (with the command that
installs it), CUDA support in this torch build, a visible GPU, or a GPU of that index. The environment variable is
checked when this module is imported, so a wrong setting fails at ``import trn_backend``, not at the first array.
"""

from __future__ import annotations

import functools
import importlib.util
import os

import torch

# torch-neuronx registers its device as "xla" (classic stack) or "neuron" (native TorchNeuron stack); both names
# mean the Neuron device here, whichever the installed toolchain registers (the kernel layer's tuple, which routes
# by it).
from .kernels import NEURON_DEVICE_TYPES as NEURON_TYPES

ENV_VAR = "TRN_BACKEND_DEVICE"
# the toolchain the "neuron" extra names, from the Neuron package index (PyPI holds placeholders of these names)
NEURON_INSTALL = "pip install torch-neuronx neuronx-cc nki --extra-index-url https://pip.repos.neuron.amazonaws.com"
VALID_FORMS = "'cpu', 'cuda', 'cuda:N', 'neuron' or 'xla' (Trainium; also with ':N'), 'meta', or a torch.device"

_CPU = torch.device("cpu")
# Devices already checked, by what the caller passed (a string or a torch.device): creation functions normalize
# on every call, and a successful check does not change within a process. Failures are not cached.
_NORMALIZED: dict[str | torch.device, torch.device] = {}


@functools.cache
def neuron_available() -> bool:
    """True when torch-neuronx (the Neuron PyTorch plugin) is installed; never imports it at module import."""
    return importlib.util.find_spec("torch_neuronx") is not None


def neuron_device() -> torch.device:
    # torch-neuronx registers its device under the XLA device type in the classic stack and as "neuron" in the
    # native TorchNeuron stack; both are reached through torch.device.
    import torch_neuronx  # noqa: F401  (import-gated: registers the device type)

    for kind in NEURON_TYPES:
        try:
            return torch.device(kind, 0)
        except RuntimeError:
            continue
    raise RuntimeError("torch-neuronx is installed but registers neither a 'neuron' nor an 'xla' device")


def default_device() -> torch.device:
    override = os.environ.get(ENV_VAR)
    if override:
        return normalize(override, _ENV_WHERE)
    if neuron_available():
        return neuron_device()
    return _CPU


def available_devices() -> tuple[torch.device, ...]:
    devices = [_CPU]
    if torch.cuda.is_available():
        devices += [torch.device("cuda", i) for i in range(torch.cuda.device_count())]
    if neuron_available():
        devices.append(neuron_device())
    default = default_device()
    if default not in devices:
        devices.append(default)
    return tuple(devices)


def normalize(device: object, func: str = "device") -> torch.device:
    """A usable torch.device from a torch.device or a device string (``"cpu"``, ``"cuda:0"``, ``"neuron"``).

    Anything else is a TypeError; a string that names no device, a Neuron device without the toolchain, and a
    CUDA device this machine lacks are ValueErrors saying which (``func`` names the caller in the message)."""
    if not isinstance(device, (torch.device, str)):
        raise TypeError(f"{func}: expected a device (e.g. x.device or 'cpu'), got {type(device).__name__}")
    found = _NORMALIZED.get(device)
    if found is not None:
        return found
    spec = str(device)
    parsed = device if isinstance(device, torch.device) else _parse(spec, func)
    _check_usable(parsed, spec, func)
    _NORMALIZED[device] = parsed
    return parsed


def device_type(device: object, func: str = "device") -> str:
    """The type of device a device names (``"cpu"``, ``"cuda"``, ``"neuron"``, ...) without requiring it here, for
    choices about a device rather than data on it (ranking precision modes for Neuron from any machine): "neuron"
    and "xla" need no toolchain; other strings must be torch device strings (else normalize's ValueError)."""
    if isinstance(device, torch.device):
        return device.type
    if not isinstance(device, str):
        raise TypeError(f"{func}: expected a device (e.g. x.device or 'cpu'), got {type(device).__name__}")
    kind, _, index = device.partition(":")
    if kind in NEURON_TYPES and (not index or index.isdigit()):
        return kind
    try:
        return torch.device(device).type
    except RuntimeError:
        raise ValueError(f"{func}: {device!r} is not a device; valid forms: {VALID_FORMS}") from None


def check_environment() -> None:
    """Check ``TRN_BACKEND_DEVICE`` now (it is run at import), with ``normalize``'s messages."""
    override = os.environ.get(ENV_VAR)
    if override:
        normalize(override, _ENV_WHERE)


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


_ENV_WHERE = f"{ENV_VAR} (environment variable)"


def _parse(spec: str, func: str) -> torch.device:
    kind = spec.partition(":")[0]
    if kind in NEURON_TYPES:
        _require_neuron(spec, func)
        return _neuron_device_named(spec, kind, func)
    try:
        return torch.device(spec)
    except RuntimeError:
        raise ValueError(f"{func}: {spec!r} is not a device; valid forms: {VALID_FORMS}") from None


def _neuron_device_named(spec: str, kind: str, func: str) -> torch.device:
    """A Neuron device string (``neuron[:N]`` or ``xla[:N]``) as the device type the installed toolchain
    registers: either name works."""
    registered = neuron_device().type  # imports torch_neuronx, which registers its device type with torch
    try:
        return torch.device(registered + spec[len(kind) :])
    except RuntimeError:
        raise ValueError(f"{func}: {spec!r} is not a device; valid forms: {VALID_FORMS}") from None


def _check_usable(device: torch.device, spec: str, func: str) -> None:
    if device.type in NEURON_TYPES:
        _require_neuron(spec, func)
    elif device.type == "cuda":
        _require_cuda(device, spec, func)
    elif device.type not in ("cpu", "meta"):
        # torch knows more device types (xpu, mps, hpu, ...) than this build or machine may have: ask torch's
        # module for the type, where it has one, rather than fail at the first array with a bare error
        backend = getattr(torch, device.type, None)
        available = getattr(backend, "is_available", None)
        if available is None or not available():
            raise ValueError(
                f"{func}: {spec!r} is a {device.type} device, which this torch build "
                f"({torch.__version__}) or machine does not provide; valid forms: {VALID_FORMS}"
            )


def _require_neuron(spec: str, func: str) -> None:
    if not neuron_available():
        raise ValueError(
            f"{func}: {spec!r} is a Neuron (Trainium) device, but the Neuron toolchain "
            f"(torch-neuronx) is not installed; on a Trainium instance install it with: "
            f"{NEURON_INSTALL}"
        )


def _require_cuda(device: torch.device, spec: str, func: str) -> None:
    if not torch.cuda.is_available():
        if not torch.backends.cuda.is_built():
            reason = (
                f"this torch build ({torch.__version__}) has no CUDA support (a CPU-only build); install "
                "a CUDA build of torch or use 'cpu'"
            )
        else:
            reason = "no CUDA GPU is visible here (torch.cuda.is_available() is False); use 'cpu'"
        raise ValueError(f"{func}: {spec!r} needs CUDA, but {reason}")
    count = torch.cuda.device_count()
    if device.index is not None and device.index >= count:
        raise ValueError(
            f"{func}: {spec!r} does not exist: this machine has {count} CUDA device(s), cuda:0 to cuda:{count - 1}"
        )


check_environment()
