"""Which NKI the kernels run on: the real toolchain (``import nki``, from the Neuron package index) where it is
installed, else the CPU model of the NeuronCore in ``model/``. ``TRN_BACKEND_NKI_TOOLCHAIN`` = ``model`` forces
the model, ``nki`` demands the real one; the default ``auto`` takes the real one when the installed ``nki``
distribution is 0.6 or newer and imports (``detect``; its version is the distribution's, importlib.metadata).

Kernel sources take their ``nki``, ``nl`` and ``nisa`` from here. ``kernels_on(name)`` loads a fresh copy of a
kernel module bound to a given toolchain (kernel functions are plain; callers wrap them with that toolchain's
``nki.jit``) (the cost model always counts on the model; tests run both where the
real one exists).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import re
import sys
from pathlib import Path
from types import ModuleType

__all__ = [
    "nki",
    "nl",
    "nisa",
    "NAME",
    "REAL",
    "VARIABLE",
    "MINIMUM",
    "DISTRIBUTIONS",
    "select",
    "kernels_on",
    "available",
    "detect",
    "distribution_version",
    "distributions",
]

VARIABLE = "TRN_BACKEND_NKI_TOOLCHAIN"


MINIMUM = (0, 6)  # the NKI the kernels are written for (Neuron 2.32+); trn1's last stack, 2.28, has NKI 0.2
# The Neuron distributions check-neuron reports: the NKI compiler package, the Neuron compiler (neuronx-cc) and
# the torch integration. Their distribution versions are the documented way to know what is installed; the NKI
# stubs do not document ``nki.__version__`` (NKI_FACTS.md section 13).
DISTRIBUTIONS = ("nki", "neuronx-cc", "torch-neuronx")


def distribution_version(name: str) -> str | None:
    """The installed version of distribution ``name`` (importlib.metadata), None when it is not installed."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _release(version: str) -> tuple[int, int] | None:
    """(major, minor) of a PEP 440 version ('0.6.0', '0.6.1.dev3', '1!0.7'), None when it has no such prefix."""
    found = re.match(r"^(?:\d+!)?(\d+)\.(\d+)", version.strip())
    return (int(found.group(1)), int(found.group(2))) if found else None


def detect() -> tuple[tuple[ModuleType, ModuleType, ModuleType] | None, str]:
    """(nki, nki.language, nki.isa) of the installed NKI distribution when it is 0.6 or newer and imports, else None;
    and how it was found, in one line. PyPI's placeholder ``nki`` has neither submodule, and older releases lack
    what the kernels use (nc_matmul's accumulate=, for one), so neither counts."""
    version = distribution_version("nki")
    if version is None:
        return None, "not installed"
    release = _release(version)
    if release is None or release < MINIMUM:
        return None, (
            f"{version} installed but older than {MINIMUM[0]}.{MINIMUM[1]}: ignored (the kernels need "
            "NKI 0.6 or newer, Neuron 2.32+)"
        )
    try:
        modules = (
            importlib.import_module("nki"),
            importlib.import_module("nki.language"),
            importlib.import_module("nki.isa"),
        )
    except ImportError as e:
        return None, f"{version} installed but does not import ({e}): ignored"
    return modules, f"{version} (distribution nki)"


def distributions() -> list[tuple[str, str]]:
    """(distribution, what was found) for each of DISTRIBUTIONS: for nki, how ``detect`` judged it; for the others
    the installed version or 'not installed'."""
    return [
        (name, detect()[1] if name == "nki" else distribution_version(name) or "not installed")
        for name in DISTRIBUTIONS
    ]


def select(choice: str | None = None) -> tuple[ModuleType, ModuleType, ModuleType, str]:
    """(nki, nki.language, nki.isa, name) for ``choice`` (default: the environment variable, else auto)."""
    choice = (choice or os.environ.get(VARIABLE) or "auto").lower()
    if choice not in ("auto", "model", "nki"):
        raise ValueError(f"{VARIABLE}={choice!r}: expected auto, model or nki")
    if choice != "model":
        real, found = detect()
        if real is not None:
            return (*real, f"nki {distribution_version('nki')}")
        if choice == "nki":
            raise ImportError(
                f"{VARIABLE}=nki but the NKI toolchain is {found}; it is the distribution nki, "
                "from the Neuron package index (https://pip.repos.neuron.amazonaws.com)"
            )
    from . import model

    return model, model.language, model.isa, model.VERSION


nki, nl, nisa, NAME = select()
REAL = nki.__name__ == "nki"


def available() -> tuple[str, ...]:
    """The toolchains kernels can run on here: always the model, and the real NKI where installed."""
    return ("model", "nki") if detect()[0] is not None else ("model",)


def kernels_on(choice: str, module: str = "matmul") -> ModuleType:
    """A fresh copy of kernel module ``module`` whose ``nki``, ``nl``, ``nisa`` are those of ``choice``."""
    bound = select(choice)
    if bound[0] is nki:
        return importlib.import_module(f"{__package__}.{module}")
    name = f"{__package__}.{module}__{choice}"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(f"{module}.py"))
        assert spec is not None and spec.loader is not None  # a .py file: the source file loader
        copy = importlib.util.module_from_spec(spec)
        sys.modules[name] = copy
        spec.loader.exec_module(copy)
        copy.nki, copy.nl, copy.nisa = bound[:3]  # type: ignore[attr-defined]  # the copy's globals, rebound
    return sys.modules[name]
