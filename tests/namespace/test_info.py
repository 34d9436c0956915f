"""The inspection API: __array_namespace_info__() and its capabilities, devices and dtypes."""

from __future__ import annotations

import inspect
from types import SimpleNamespace

import array_api_strict
import numpy as np
import pytest
import torch

import trn_backend as xp
from tests.support import DTYPE_NAMES
from trn_backend import _device, _dtypes

ALL_NAMES = list(DTYPE_NAMES)  # the standard's dtypes, in its order
KIND_NAMES = {
    "bool": ["bool"],
    "signed integer": ["int8", "int16", "int32", "int64"],
    "unsigned integer": ["uint8", "uint16", "uint32", "uint64"],
    "integral": ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"],
    "real floating": ["float32", "float64"],
    "complex floating": ["complex64", "complex128"],
    "numeric": ALL_NAMES[1:],
}

info = xp.__array_namespace_info__()


def test_info_is_reached_from_the_namespace_and_from_arrays():
    x = xp.NeuronArray(torch.zeros(1))
    assert type(x.__array_namespace__().__array_namespace_info__()) is type(info)
    assert "__array_namespace_info__" in xp._api.info.__all__


def test_capabilities():
    caps = info.capabilities()
    assert type(caps) is dict
    assert caps == {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}
    # the rank limit is torch's: 64 dimensions work, 65 do not
    xp.NeuronArray(torch.zeros((1,) * 64))._t.sum(0)
    with pytest.raises(RuntimeError, match="64 dims"):
        torch.zeros((1,) * 65).sum(0)


def test_default_device():
    device = info.default_device()
    assert type(device) is torch.device and device == _device.default_device()
    assert xp.zeros(1).device == device


def test_devices():
    devices = info.devices()
    # a tuple (the 2025.12 standard) that still concatenates with a list as the 2024.12 list did
    assert isinstance(devices, tuple) and all(type(d) is torch.device for d in devices)
    assert torch.device("cpu") in devices
    assert info.default_device() in devices
    with_none = devices + [None]  # SciPy's test fixtures do this
    assert type(with_none) is list and with_none == [*devices, None]
    assert devices + (None,) == (*devices, None)


CPU_DEFAULTS = {
    "real floating": np.dtype("float64"),
    "complex floating": np.dtype("complex128"),
    "integral": np.dtype("int64"),
    "indexing": np.dtype("int64"),
}


def test_default_dtypes_on_the_cpu_are_numpys():
    expected = {
        "real floating": np.dtype(float),
        "complex floating": np.dtype(complex),
        "integral": np.asarray([1]).dtype,
        "indexing": np.intp,
    }
    assert expected == CPU_DEFAULTS
    for device in (None, "cpu", torch.device("cpu")):
        got = info.default_dtypes(device=device)
        assert type(got) is dict and got == CPU_DEFAULTS
        assert all(type(d) is type(CPU_DEFAULTS[k]) for k, d in got.items()), got


@pytest.mark.parametrize("torch_default", [torch.float32, torch.float64])
def test_default_dtypes_are_what_creation_uses_whatever_torch_default_dtype(torch_default):
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch_default)
    try:
        assert info.default_dtypes() == CPU_DEFAULTS
        assert xp.ones(2).dtype == xp.asarray([1.5]).dtype == xp.linspace(0, 1, 3).dtype == np.float64
        assert xp.asarray([1j]).dtype == xp.full(1, 1j).dtype == np.complex128
        assert xp.arange(3).dtype == xp.asarray([1]).dtype == np.int64
    finally:
        torch.set_default_dtype(old)


def test_default_dtypes_on_neuron_are_single_precision(monkeypatch):
    # Neuron engines have no float64. No Neuron device here: the default device is stood in for (no tensors
    # are made on it).
    monkeypatch.setattr(_device, "default_device", lambda: torch.device("xla"))
    assert info.default_dtypes() == {
        **CPU_DEFAULTS,
        "real floating": np.dtype("float32"),
        "complex floating": np.dtype("complex64"),
    }
    assert _dtypes.default_float() is torch.float32 and _dtypes.default_complex() is torch.complex64


@pytest.mark.parametrize(
    ("device_type", "real", "complex_"),
    [
        ("xla", torch.float32, torch.complex64),
        ("neuron", torch.float32, torch.complex64),
        ("cpu", torch.float64, torch.complex128),
        ("cuda", torch.float64, torch.complex128),
        ("meta", torch.float64, torch.complex128),
    ],
)
def test_default_float_per_device_type(device_type, real, complex_):
    device = SimpleNamespace(type=device_type)  # torch builds no 'neuron' device without its plugin
    assert _dtypes.default_float(device) is real and _dtypes.default_complex(device) is complex_


@pytest.mark.parametrize("kind", [None, *KIND_NAMES])
def test_dtypes_by_kind(kind):
    got = info.dtypes(kind=kind)
    assert list(got) == (ALL_NAMES if kind is None else KIND_NAMES[kind])
    assert type(got) is dict
    for name, dtype in got.items():
        assert isinstance(dtype, np.dtype) and dtype == np.dtype(name) and dtype == getattr(xp, name)
        x = xp.empty(1, dtype=dtype)  # every listed dtype is one an array can hold
        assert x.dtype == dtype and x._t.dtype is _dtypes.to_dtype(dtype)
    assert "float16" not in got and "bfloat16" not in got  # the extension dtypes are not the standard's


def test_dtypes_union_of_kinds_and_agreement_with_array_api_strict():
    got = info.dtypes(kind=("bool", "complex floating", "unsigned integer"))
    assert list(got) == ["bool", "uint8", "uint16", "uint32", "uint64", "complex64", "complex128"]
    strict = array_api_strict.__array_namespace_info__()
    for kind in (None, *KIND_NAMES):
        assert set(info.dtypes(kind=kind)) == set(strict.dtypes(kind=kind))
    assert set(info.default_dtypes()) == set(strict.default_dtypes())
    assert set(info.capabilities()) >= set(strict.capabilities())


def test_signatures_are_the_standards():
    for name in ("default_dtypes", "dtypes"):
        params = inspect.signature(getattr(info, name)).parameters.values()
        assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params), name
    assert not inspect.signature(info.capabilities).parameters
    assert not inspect.signature(info.devices).parameters


def test_errors():
    with pytest.raises(ValueError, match="unknown kind 'integer'"):
        info.dtypes(kind="integer")
    with pytest.raises(TypeError, match="kind must be a string or a tuple of strings"):
        info.dtypes(kind=xp.float32)
    with pytest.raises(TypeError, match="expected a device"):
        info.default_dtypes(device=1.5)
    with pytest.raises(ValueError, match="device meta is not available"):
        info.dtypes(device="meta")
    with pytest.raises(TypeError):
        info.dtypes("numeric")  # keyword-only
