"""NumPy's "Input and output" section, the writers (save, savez, savez_compressed, savetxt): they write host data,
so they copy NeuronArrays to the host explicitly and call NumPy's function on the copies. The readers NumPy lists
there (fromfile, loadtxt, genfromtxt, ...) make arrays with like= and are in ``creation``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._common import A
from ._registry import implements


def _host(value: Any) -> Any:
    """A NeuronArray copied to the host (explicitly: its data leaves the device); anything else unchanged."""
    return np.asarray(value) if isinstance(value, A) else value


@implements(np.save)
def save(file: Any, arr: Any, allow_pickle: bool = True) -> None:
    """numpy.save of a NeuronArray on any device: the host copy is written."""
    np.save(file, _host(arr), allow_pickle=allow_pickle)


@implements(np.savez)
def savez(file: Any, *args: Any, allow_pickle: bool = True, **kwds: Any) -> None:
    """numpy.savez: NeuronArrays (positional or named) are written as their host copies."""
    np.savez(file, *map(_host, args), allow_pickle=allow_pickle, **{k: _host(v) for k, v in kwds.items()})


@implements(np.savez_compressed)
def savez_compressed(file: Any, *args: Any, allow_pickle: bool = True, **kwds: Any) -> None:
    """numpy.savez_compressed: NeuronArrays (positional or named) are written as their host copies."""
    np.savez_compressed(file, *map(_host, args), allow_pickle=allow_pickle, **{k: _host(v) for k, v in kwds.items()})


@implements(np.savetxt)
def savetxt(
    fname: Any,
    X: Any,
    fmt: Any = "%.18e",
    delimiter: str = " ",
    newline: str = "\n",
    header: str = "",
    footer: str = "",
    comments: str = "# ",
    encoding: Any = None,
) -> None:
    """numpy.savetxt of a NeuronArray on any device: the host copy is written."""
    np.savetxt(
        fname,
        _host(X),
        fmt=fmt,
        delimiter=delimiter,
        newline=newline,
        header=header,
        footer=footer,
        comments=comments,
        encoding=encoding,
    )
