"""Which NKI the kernels run on: the real toolchain (``import nki``, from the Neuron package index) where it is
installed, else the CPU model of the NeuronCore in ``model/``. ``TRN_BACKEND_NKI_TOOLCHAIN`` = ``model`` forces
the model, ``nki`` demands the real one; the default ``auto`` takes the real one when importable.

Kernel sources take their ``nki``, ``nl`` and ``nisa`` from here. ``kernels_on(name)`` loads a fresh copy of a
kernel module bound to a given toolchain (kernel functions are plain; callers wrap them with that toolchain's
``nki.jit``) (the cost model always counts on the model; tests run both where the
real one exists).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

__all__ = ["nki", "nl", "nisa", "NAME", "REAL", "VARIABLE", "MINIMUM", "UNSUPPORTED", "select", "kernels_on",
           "available"]

VARIABLE = "TRN_BACKEND_NKI_TOOLCHAIN"


MINIMUM = (0, 6)  # the NKI the kernels are written for (Neuron 2.32+); trn1's last stack, 2.28, has NKI 0.2
UNSUPPORTED: list[str] = []  # why an installed nki was not used, for check-neuron


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".")[:2] if part.isdigit())


def _real() -> tuple[ModuleType, ModuleType, ModuleType] | None:
    """The real nki, 0.6 or newer (nki.language, nki.isa); PyPI's placeholder package has neither, and older
    releases lack what the kernels use (nc_matmul's accumulate=, for one), so they do not count."""
    try:
        real = importlib.import_module("nki")
        found = real, importlib.import_module("nki.language"), importlib.import_module("nki.isa")
    except ImportError:
        return None
    version = getattr(real, "__version__", "0")
    if _version(version) < MINIMUM:
        UNSUPPORTED.append(f"nki {version} is installed but the kernels need NKI 0.6 or newer (Neuron 2.32+)")
        return None
    return found


def select(choice: str | None = None) -> tuple[ModuleType, ModuleType, ModuleType, str]:
    """(nki, nki.language, nki.isa, name) for ``choice`` (default: the environment variable, else auto)."""
    choice = (choice or os.environ.get(VARIABLE) or "auto").lower()
    if choice not in ("auto", "model", "nki"):
        raise ValueError(f"{VARIABLE}={choice!r}: expected auto, model or nki")
    if choice != "model":
        real = _real()
        if real is not None:
            return (*real, f"nki {getattr(real[0], '__version__', '(unknown version)')}")
        if choice == "nki":
            reason = UNSUPPORTED[-1] if UNSUPPORTED else "the NKI toolchain is not installed (it comes from the " \
                "Neuron package index, https://pip.repos.neuron.amazonaws.com)"
            raise ImportError(f"{VARIABLE}=nki but {reason}")
    from . import model

    return model, model.language, model.isa, model.VERSION


nki, nl, nisa, NAME = select()
REAL = nki.__name__ == "nki"


def available() -> tuple[str, ...]:
    """The toolchains kernels can run on here: always the model, and the real NKI where installed."""
    return ("model", "nki") if _real() is not None else ("model",)


def kernels_on(choice: str, module: str = "matmul") -> ModuleType:
    """A fresh copy of kernel module ``module`` whose ``nki``, ``nl``, ``nisa`` are those of ``choice``."""
    bound = select(choice)
    if bound[0] is nki:
        return importlib.import_module(f"{__package__}.{module}")
    name = f"{__package__}.{module}__{choice}"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(f"{module}.py"))
        copy = importlib.util.module_from_spec(spec)
        sys.modules[name] = copy
        spec.loader.exec_module(copy)
        copy.nki, copy.nl, copy.nisa = bound[:3]
    return sys.modules[name]
