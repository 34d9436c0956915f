"""Devices that cannot be used here fail with a ValueError that says why: the Neuron toolchain is missing (and how
to install it), CUDA is missing or has no such GPU, or the string names no device; TRN_BACKEND_DEVICE is checked
with the same messages when trn_backend is imported."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import torch

import trn_backend as xp
from trn_backend import _device, fft

INSTALL = "pip install torch-neuronx neuronx-cc nki --extra-index-url https://pip.repos.neuron.amazonaws.com"


@pytest.fixture(autouse=True)
def fresh_cache(monkeypatch):
    """normalize caches devices it accepted: a device accepted under a monkeypatched CUDA must not outlive it."""
    monkeypatch.setattr(_device, "_NORMALIZED", {})


@pytest.fixture
def no_neuron(monkeypatch):
    monkeypatch.setattr(_device, "neuron_available", lambda: False)


@pytest.fixture
def cpu_only_torch(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.cuda, "is_built", lambda: False)


def _every_device_argument(device: object) -> list:
    """Each public way to name a device, as zero-argument calls."""
    x = xp.asarray(np.arange(3, dtype=np.float64))
    return [
        lambda: xp.asarray([1.0, 2.0], device=device),
        lambda: xp.zeros((2,), device=device),
        lambda: xp.arange(3, device=device),
        lambda: xp.full_like(x, 1.0, device=device),
        lambda: xp.from_dlpack(np.arange(2), device=device),
        lambda: xp.astype(x, xp.float32, device=device),
        lambda: x.to_device(device),
        lambda: fft.fftfreq(4, device=device),
        lambda: xp.__array_namespace_info__().dtypes(device=device),
        lambda: np.zeros_like(x, device=device),
    ]


@pytest.mark.parametrize("device", ["neuron", "xla", "xla:0", "neuron:1", torch.device("xla"), torch.device("xla", 1)])
def test_a_neuron_device_without_the_toolchain_names_the_install_command(no_neuron, device):
    for call in _every_device_argument(device):
        with pytest.raises(ValueError, match="Neuron toolchain") as raised:
            call()
        message = str(raised.value)
        assert INSTALL in message and "torch-neuronx" in message and repr(str(device)) in message


def test_neuron_and_xla_name_whichever_device_type_the_toolchain_registers(monkeypatch):
    monkeypatch.setattr(_device, "neuron_available", lambda: True)
    monkeypatch.setattr(_device, "neuron_device", lambda: torch.device("xla", 0))  # the classic stack's name
    assert _device.normalize("neuron") == torch.device("xla")
    assert _device.normalize("neuron:1") == torch.device("xla", 1)
    assert _device.normalize("xla:0") == torch.device("xla", 0)
    assert _device.normalize(torch.device("xla", 2)) == torch.device("xla", 2)
    with pytest.raises(ValueError, match="'neuron:x' is not a device; valid forms: 'cpu'"):
        _device.normalize("neuron:x")


# A stand-in torch_neuronx per stack, registering its device type with torch the way the real plugin does:
# TorchNeuron renames torch's PrivateUse1 backend to "neuron" (Neuron 2.33.0 release notes: "adds the neuron device
# through the PyTorch PrivateUse1 extension"); the classic stack uses "xla", a device type torch itself defines.
# A rename holds for the rest of the process (torch.utils.rename_privateuse1_backend), hence a fresh interpreter.
FAKE_PLUGINS = {
    "native": 'import torch\ntorch.utils.rename_privateuse1_backend("neuron")\n',
    "classic": "",
}
REGISTERED_DEVICES = """
import json, os, torch
from trn_backend import _device
os.environ[_device.ENV_VAR] = "xla:1"
env_default = str(_device.default_device())
del os.environ[_device.ENV_VAR]
print(json.dumps([str(d) for d in (_device.neuron_device(), _device.default_device(), _device.normalize("neuron"),
                                   _device.normalize("xla:1"), _device.normalize("neuron:2"))] + [env_default]))
"""


@pytest.mark.heavy
@pytest.mark.parametrize(("stack", "kind"), [("native", "neuron"), ("classic", "xla")])
def test_neuron_and_xla_name_the_device_type_the_real_registration_makes(tmp_path, stack, kind):
    """Either name reaches the Neuron device under the device type the plugin registers with this torch: in the
    native stack torch refuses "neuron" until the plugin's PrivateUse1 rename, then accepts it."""
    (tmp_path / "torch_neuronx").mkdir()
    (tmp_path / "torch_neuronx" / "__init__.py").write_text(FAKE_PLUGINS[stack])
    env = {k: v for k, v in os.environ.items() if k != _device.ENV_VAR}
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # this checkout's trn_backend
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), root, env.get("PYTHONPATH", "")])
    run = subprocess.run(
        [sys.executable, "-c", REGISTERED_DEVICES], env=env, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == [f"{kind}:0", f"{kind}:0", kind, f"{kind}:1", f"{kind}:2", f"{kind}:1"]


@pytest.mark.parametrize("device", ["cuda", "cuda:0", "cuda:3", torch.device("cuda", 0)])
def test_cuda_on_a_cpu_only_torch_build_says_so(cpu_only_torch, device):
    for call in _every_device_argument(device):
        with pytest.raises(ValueError, match=r"needs CUDA, but this torch build \(.*\) has no CUDA support") as e:
            call()
        assert repr(str(device)) in str(e.value)


def test_cuda_without_a_visible_gpu_says_so(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.cuda, "is_built", lambda: True)
    with pytest.raises(ValueError, match=r"asarray\(\) device: 'cuda' needs CUDA, but no CUDA GPU is visible"):
        xp.asarray([1.0], device="cuda")


def test_a_cuda_index_beyond_the_device_count_names_the_devices_there(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert _device.normalize("cuda:1") == torch.device("cuda", 1)
    assert _device.normalize("cuda") == torch.device("cuda")
    for device in ("cuda:2", torch.device("cuda", 5)):
        with pytest.raises(ValueError, match=r"does not exist: this machine has 2 CUDA device\(s\), cuda:0 to cuda:1"):
            _device.normalize(device, "zeros() device")


@pytest.mark.parametrize("spec", ["gpu", "CPU", "cuda0", "trainium", "", "cpu:x"])
def test_a_string_that_names_no_device_lists_the_valid_forms(spec):
    with pytest.raises(
        ValueError,
        match=rf"zeros\(\) device: {spec!r} is not a device; valid forms: 'cpu', "
        r"'cuda', 'cuda:N', 'neuron' or 'xla'",
    ):
        xp.zeros((2,), device=spec)


@pytest.mark.parametrize("device", [0, 1.5, None, ["cpu"]])
def test_a_device_of_another_type_is_a_type_error(device):
    with pytest.raises(TypeError, match=rf"to_device: expected a device .*, got {type(device).__name__}"):
        _device.normalize(device, "to_device")


def test_usable_devices_pass_through_and_failures_are_not_remembered(monkeypatch):
    assert _device.normalize("cpu") == torch.device("cpu")
    assert _device.normalize("meta") == torch.device("meta")  # torch's device types other than CUDA and Neuron
    assert _device.normalize(torch.device("cpu", 0)) == torch.device("cpu", 0)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match="needs CUDA"):
        _device.normalize("cuda:0")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # a GPU appears (say, after a driver fix)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert _device.normalize("cuda:0") == torch.device("cuda", 0)


def test_device_type_names_a_device_it_does_not_require(no_neuron, cpu_only_torch):
    """For choices about a device (ranking precision modes for Neuron on any machine): no availability check."""
    assert [_device.device_type(d) for d in ("neuron", "xla:1", "cuda:7", "cpu", torch.device("xla", 0))] == [
        "neuron",
        "xla",
        "cuda",
        "cpu",
        "xla",
    ]
    with pytest.raises(ValueError, match=r"select_precision: 'gpu' is not a device; valid forms: 'cpu'"):
        _device.device_type("gpu", "select_precision")
    with pytest.raises(ValueError, match="'neuron:one' is not a device"):
        _device.device_type("neuron:one")
    with pytest.raises(TypeError, match="got float"):
        _device.device_type(1.0)


def test_the_environment_variable_is_checked_when_the_default_device_is_read(monkeypatch, no_neuron):
    monkeypatch.setenv(_device.ENV_VAR, "neuron")
    with pytest.raises(ValueError, match=r"TRN_BACKEND_DEVICE \(environment variable\): 'neuron' is a Neuron"):
        xp.zeros((2,))
    monkeypatch.setenv(_device.ENV_VAR, "cpu")
    assert xp.zeros((2,)).device == torch.device("cpu")


# The variable at import: one fresh interpreter per setting, started together (each import takes seconds).
IMPORT_CASES = {
    "neuron": rf"TRN_BACKEND_DEVICE \(environment variable\): 'neuron' is a Neuron .*{re.escape(INSTALL)}$",
    "cuda:999": r"TRN_BACKEND_DEVICE \(environment variable\): 'cuda:999' (needs CUDA|does not exist)",
    "gpu0": r"TRN_BACKEND_DEVICE \(environment variable\): 'gpu0' is not a device; valid forms",
    "cpu": None,  # accepted: the import succeeds
}


@pytest.fixture(scope="module")
def imports_under_the_variable() -> dict[str, subprocess.CompletedProcess]:
    started = {
        value: subprocess.Popen(
            [sys.executable, "-c", "import trn_backend"],
            env={**os.environ, _device.ENV_VAR: value},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for value in IMPORT_CASES
    }
    done = {}
    for value, process in started.items():
        out, err = process.communicate(timeout=120)
        done[value] = subprocess.CompletedProcess(process.args, process.returncode, out, err)
    return done


@pytest.mark.heavy
@pytest.mark.parametrize(
    "value",
    [
        pytest.param(
            value,
            marks=pytest.mark.skipif(
                value == "neuron" and _device.neuron_available(), reason="the Neuron toolchain is installed here"
            ),
        )
        for value in IMPORT_CASES
    ],
)
def test_the_environment_variable_is_checked_at_import(imports_under_the_variable, value):
    run = imports_under_the_variable[value]
    expected = IMPORT_CASES[value]
    if expected is None:
        assert run.returncode == 0, run.stderr
        return
    assert run.returncode != 0
    last_line = run.stderr.strip().splitlines()[-1]
    assert last_line.startswith("ValueError: "), run.stderr
    assert re.search(expected, last_line), last_line


def test_device_types_this_build_lacks_are_value_errors() -> None:
    for name in ("xpu", "mps", "hpu"):
        with pytest.raises(ValueError, match=f"'{name}' is a {name} device"):
            xp.zeros(2, device=name)
