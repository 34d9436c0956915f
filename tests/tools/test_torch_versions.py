"""The torch requirement in pyproject.toml: the releases it admits, and why each end is where it is.

- Lower end 2.5: the first release with DTensor's public namespace, torch.distributed.tensor, which
  trn_backend.distributed imports (https://pytorch.org/docs/2.5/_modules/torch/distributed/tensor.html; before
  2.5 DTensor lived in the private torch.distributed._tensor).
- 2.13: the CPU build the Makefile installs first (CI); `pip install -e .` must keep it, not replace it.
- 2.14: the release the current Neuron SDK's native backend pairs with (Neuron 2.33.0 release notes, TorchNeuron:
  torch-neuronx 2.13.3.0.* for PyTorch 2.13.0, 2.14.3.0.* for PyTorch 2.14.0;
  https://awsdocs-neuron.readthedocs-hosted.com/en/latest/release-notes/components/torchneuron.html).
- Upper end <2.16: 2.15 is the newest release the whole suite has passed on; a later one is admitted only after it
  has too.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import tomllib
import torch
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).parents[2]
# (major, minor) of the oldest admitted release and of the first refused one
OLDEST, FIRST_REFUSED = (2, 5), (2, 16)
# the releases the whole suite has passed on, one venv each (2.13.0 is CI's; 2.14.1 and 2.15.0 the newest of theirs)
PROVEN = ("2.13.0", "2.14.1", "2.15.0")
# the PyTorch releases the Neuron 2.33.0 torch-neuronx package families are built for (release notes above)
NEURON_PAIRED = ("2.13.0", "2.14.0")


def _torch_requirement() -> Requirement:
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    (torch_requirement,) = [r for r in map(Requirement, dependencies) if r.name == "torch"]
    return torch_requirement


def test_the_requirement_admits_every_proven_and_neuron_paired_release():
    specifier = _torch_requirement().specifier
    for version in PROVEN + NEURON_PAIRED:
        assert specifier.contains(version), f"pyproject's torch requirement {specifier} refuses {version}"
    for version in ("2.4.1", "2.16.0", "3.0.0"):
        assert not specifier.contains(version), f"pyproject's torch requirement {specifier} admits {version}"


def test_the_requirement_is_exactly_the_minor_series_from_oldest_to_first_refused():
    """Every release from 1.0.0 to 3.30.9, exhaustively (the space is small): admitted exactly when its
    (major, minor) lies in [OLDEST, FIRST_REFUSED); the oracle is tuple order, not packaging's specifier logic."""
    specifier = _torch_requirement().specifier
    wrong = [
        f"{major}.{minor}.{micro}"
        for major in (1, 2, 3)
        for minor in range(31)
        for micro in (0, 1, 9)
        if specifier.contains(f"{major}.{minor}.{micro}") != (OLDEST <= (major, minor) < FIRST_REFUSED)
    ]
    assert not wrong, f"pyproject's torch requirement {specifier} admits or refuses wrongly: {wrong}"


def test_the_makefile_torch_pin_is_admitted():
    """CI installs this build first; a requirement that refused it would make `pip install -e .` replace it."""
    pin = re.search(r"^TORCH\s*:=\s*torch==(\S+)", (ROOT / "Makefile").read_text(), re.MULTILINE).group(1)
    assert _torch_requirement().specifier.contains(pin)


def test_the_installed_torch_is_admitted():
    """The suite proves the release it runs on; a run on a release the requirement refuses proves nothing about it.
    Local build tags (+cpu, +cu130) are the same release."""
    assert _torch_requirement().specifier.contains(Version(torch.__version__).public)


@pytest.mark.skipif(not torch.distributed.is_available(), reason="this torch build has no torch.distributed")
def test_the_lower_end_is_the_first_public_dtensor_namespace():
    from torch.distributed.tensor import DTensor

    assert DTensor.__module__.startswith("torch.distributed.tensor")
