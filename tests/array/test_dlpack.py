"""DLPack both ways with NumPy's rules: read-only memory stays read-only (DLPack 1.0's flag), negative strides are
copied or refused before torch sees them (torch.from_dlpack ends the process on one), lazy conjugates are
resolved or refused."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

import trn_backend as xp
from tests.support import assert_same

READ_ONLY = "assignment destination is read-only"


def _read_only_ndarray():
    a = np.arange(6.0)
    a.flags.writeable = False
    return a


# --- importing ---


def test_from_dlpack_shares_writeable_memory():
    a = np.arange(6.0)
    x = xp.from_dlpack(a)
    assert x.flags.writeable
    x[0] = 7
    assert a[0] == 7


def test_from_dlpack_of_read_only_memory_is_read_only_as_numpy_s():
    a = _read_only_ndarray()
    x = xp.from_dlpack(a)
    assert not x.flags.writeable and not np.from_dlpack(a).flags.writeable
    assert_same(x, a)
    with pytest.raises(ValueError, match=READ_ONLY):
        x[0] = 9
    with pytest.raises(ValueError, match=READ_ONLY):
        x += 1
    with pytest.raises(ValueError, match="cannot set WRITEABLE flag to True"):
        x.flags.writeable = True
    np.testing.assert_array_equal(a, np.arange(6.0))


def test_from_dlpack_copy_of_read_only_memory_is_a_writeable_copy():
    a = _read_only_ndarray()
    x = xp.from_dlpack(a, copy=True)
    assert x.flags.writeable
    x[0] = 9
    np.testing.assert_array_equal(a, np.arange(6.0))


@pytest.mark.parametrize("view", [lambda a: a[::-1], lambda a: a.reshape(2, 3)[:, ::-2], lambda a: a[::-1][::2]])
def test_from_dlpack_of_negative_strides_copies(view):
    a = np.arange(6.0)
    x = xp.from_dlpack(view(a))
    assert_same(x, view(a))
    x[...] = -1  # a copy: NumPy's memory is untouched
    np.testing.assert_array_equal(a, np.arange(6.0))
    with pytest.raises(BufferError, match=r"from_dlpack\(copy=False\): the ndarray has negative strides"):
        xp.from_dlpack(view(a), copy=False)


@pytest.mark.heavy
def test_from_dlpack_of_negative_strides_never_ends_the_process():
    """torch.from_dlpack aborts (a C++ terminate) on a negative stride: run in a child so a regression fails
    this test rather than the session."""
    code = textwrap.dedent("""
        import numpy as np, trn_backend as xp
        a = np.arange(12.0).reshape(3, 4)
        for v in (a[::-1], a[:, ::-1], a[::-2, ::-3]):
            assert (np.asarray(xp.from_dlpack(v)) == v).all()
            try:
                xp.from_dlpack(v, copy=False)
            except BufferError:
                pass
        print("ok")
    """)
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_from_dlpack_of_a_torch_tensor_shares_it():
    t = torch.arange(4.0)
    x = xp.from_dlpack(t)
    x[1] = 10
    assert t[1] == 10


def test_from_dlpack_of_neuron_arrays():
    x = xp.asarray(np.arange(6.0))
    r = x[::-1]
    y = xp.from_dlpack(r)  # the same view with negative steps
    y[0] = 50
    assert_same(x, np.array([0.0, 1, 2, 3, 4, 50]))
    x.flags.writeable = False
    z = xp.from_dlpack(x)
    assert not z.flags.writeable
    assert xp.from_dlpack(x, copy=True).flags.writeable


def test_from_dlpack_without_dlpack_is_an_error():
    with pytest.raises(AttributeError, match=r"from_dlpack\(\): list has no __dlpack__ method"):
        xp.from_dlpack([1, 2])


# --- exporting ---


def test_numpy_from_dlpack_of_a_read_only_array_is_read_only():
    x = xp.asarray(np.arange(4.0))
    x.flags.writeable = False
    a = np.from_dlpack(x)
    assert not a.flags.writeable
    assert np.shares_memory(a, np.asarray(x))
    w = np.from_dlpack(xp.asarray(np.arange(4.0)))
    assert w.flags.writeable


def test_read_only_export_to_an_old_consumer_copies_or_refuses():
    x = xp.asarray(np.arange(4.0))
    x.flags.writeable = False
    with pytest.raises(BufferError, match=r"__dlpack__\(copy=False\): x is read-only.*before 1\.0"):
        x.__dlpack__(copy=False)
    t = torch.from_dlpack(x.__dlpack__())  # a copy: writing it leaves x alone
    t[0] = 99
    assert_same(x, np.arange(4.0))


def test_lazy_conjugate_export_resolves_or_refuses():
    t = torch.tensor([1 + 2j, 3 - 1j], dtype=torch.complex128)
    c = xp.from_torch(t.conj())
    np.testing.assert_array_equal(np.from_dlpack(c), t.numpy().conj())
    with pytest.raises(BufferError, match="lazy conjugate"):
        c.__dlpack__(copy=False)


def test_reversed_view_export_refuses_copy_false():
    r = xp.asarray(np.arange(4.0))[::-1]
    with pytest.raises(BufferError, match="negative steps"):
        r.__dlpack__(copy=False)
    np.testing.assert_array_equal(np.from_dlpack(r), np.arange(4.0)[::-1])
