"""The inspection API: __array_namespace_info__() and its capabilities, devices and dtypes."""

from __future__ import annotations

import inspect

import array_api_strict
import pytest
import torch

import trn_backend as xp
from trn_backend import _device

ALL_NAMES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32",
             "float64", "complex64", "complex128"]
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
    assert caps == {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}
    # the rank limit is torch's: 64 dimensions work, 65 do not
    xp.NeuronArray(torch.zeros((1,) * 64))._t.sum(0)
    with pytest.raises(RuntimeError, match="64 dims"):
        torch.zeros((1,) * 65).sum(0)


def test_devices():
    devices = info.devices()
    assert isinstance(devices, tuple) and torch.device("cpu") in devices
    assert info.default_device() == _device.default_device()
    assert info.default_device() in devices


def test_default_dtypes_follow_torch_default_dtype():
    expected = {"real floating": xp.float32, "complex floating": xp.complex64, "integral": xp.int64,
                "indexing": xp.int64}
    assert info.default_dtypes() == expected
    assert info.default_dtypes(device="cpu") == expected
    assert info.default_dtypes(device=torch.device("cpu")) == expected
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        assert info.default_dtypes()["real floating"] is xp.float64
        assert info.default_dtypes()["complex floating"] is xp.complex128
    finally:
        torch.set_default_dtype(old)


@pytest.mark.parametrize("kind", [None, *KIND_NAMES])
def test_dtypes_by_kind(kind):
    got = info.dtypes(kind=kind)
    assert list(got) == (ALL_NAMES if kind is None else KIND_NAMES[kind])
    for name, dtype in got.items():
        assert dtype is getattr(xp, name)
        xp.NeuronArray(torch.empty(1, dtype=dtype))  # every listed dtype is one an array can hold


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
