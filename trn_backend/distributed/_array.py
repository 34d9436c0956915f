"""ShardedNeuronArray: a NeuronArray holding a DTensor on a 1-D mesh, and ``Sharding``, its ``device``.

An array is sharded along one axis (each rank holds a block, ``torch.chunk``'s layout, so sizes may be uneven),
replicated (every rank holds all of it), or a pending sum (each rank holds a summand: DTensor's ``Partial``, what
a contraction over a sharded index leaves). Collectives are torch.distributed's, through DTensor.
"""

from __future__ import annotations

import dataclasses
import operator
from typing import Any

import numpy as np
import torch
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.tensor import DTensor, Partial, Placement, Replicate, Shard

from .. import _dtypes
from .._array import NeuronArray, register_wrapper, wrap
from .._indexing import simple
from .._overrides import public
from ._mesh import local_device

__all__ = ["Sharding", "ShardedNeuronArray", "sharding_of", "placement", "redistribute", "as_dtensor", "place"]


@dataclasses.dataclass(frozen=True)
class Sharding:
    """Where a sharded array lives, and its ``device``: the mesh, the partitioned ``axis`` (None when every
    rank holds the whole array) and whether it is a ``pending`` sum over the ranks. Compares with ``==``."""

    mesh: DeviceMesh
    axis: int | None = None
    pending: bool = False

    def __post_init__(self) -> None:
        if self.pending and self.axis is not None:
            raise ValueError(f"Sharding: a pending sum is not partitioned; got axis={self.axis} with pending=True")

    @property
    def device(self) -> torch.device:
        """The device each rank's block lives on."""
        return local_device(self.mesh)

    def __repr__(self) -> str:
        where = "pending sum" if self.pending else "replicated" if self.axis is None else f"axis={self.axis}"
        return f"Sharding({where}, ranks={self.mesh.mesh.tolist()}, device='{self.mesh.device_type}')"


def placement(sharding: Sharding) -> Placement:
    """The DTensor placement of a sharding."""
    if sharding.pending:
        return Partial("sum")
    return Replicate() if sharding.axis is None else Shard(sharding.axis)


def sharding_of(t: DTensor) -> Sharding:
    """The sharding of a DTensor placed the ways sharded arrays are (Shard, Replicate, Partial sum)."""
    if t.device_mesh.ndim != 1:
        raise ValueError(f"sharded arrays live on a 1-dimensional device mesh; this DTensor's mesh has shape "
                         f"{tuple(t.device_mesh.shape)}")
    (p,) = t.placements
    if p.is_shard():
        return Sharding(t.device_mesh, p.dim)
    return Sharding(t.device_mesh, None, p.is_partial())


# Each rank's block travels in a dtype the backends' collectives support (gloo has no uint16/32/64): sums and
# blocks as the compute dtype (exact, modular), maxima and minima as the order-preserving one.
_ORDERED_OPS = ("max", "min")


def redistribute(t: DTensor, target: Placement) -> DTensor:
    """``t`` placed as ``target`` (one placement of a 1-D mesh) by DTensor's collectives."""
    mesh = t.device_mesh
    (p,) = t.placements
    if t.dtype not in _dtypes.COMPUTE or p.is_replicate():  # from a replica: no collective, blocks stay views
        return t.redistribute(mesh, (target,))
    ordered = getattr(p, "reduce_op", None) in _ORDERED_OPS
    into, back = (_dtypes.ordered, _dtypes.unordered) if ordered else (lambda x, _: _dtypes.compute(x),
                                                                       _dtypes.restore)
    moved = _relocal(t, into(t.to_local(), t.dtype)).redistribute(mesh, (target,))
    return _relocal(moved, back(moved.to_local(), t.dtype))


def _relocal(t: DTensor, local: torch.Tensor) -> DTensor:
    """``t`` with each rank's block replaced by ``local`` (same shape, another dtype)."""
    return DTensor.from_local(local, t.device_mesh, t.placements, shape=t.shape, stride=t.stride())


def as_dtensor(t: torch.Tensor, mesh: DeviceMesh) -> DTensor:
    """A DTensor as is; a plain tensor (the same on every rank, as in any SPMD program) as replicated."""
    if isinstance(t, DTensor):
        return t
    return DTensor.from_local(t, mesh, (Replicate(),), run_check=False)


def place(t: torch.Tensor, sharding: Sharding, func: str) -> DTensor:
    """A whole array (the same on every rank) placed as ``sharding``, without communication: a block is a
    local chunk, a pending sum puts the array on the mesh's first rank and zeros elsewhere."""
    mesh = sharding.mesh
    if sharding.axis is not None and not -t.dim() <= sharding.axis < t.dim():
        raise ValueError(f"{func}(): cannot shard axis {sharding.axis} of an array of shape {tuple(t.shape)}")
    replicated = as_dtensor(t, mesh)
    if sharding.pending:
        local = t if mesh.get_local_rank() == 0 else torch.zeros_like(t)
        return DTensor.from_local(local, mesh, (Partial("sum"),), shape=t.shape, stride=t.stride())
    if sharding.axis is None:
        return replicated
    return redistribute(replicated, Shard(sharding.axis % t.dim()))


class ShardedNeuronArray(NeuronArray):
    """A NeuronArray partitioned over the ranks of a 1-D device mesh (``x._t`` is a DTensor). ``x.device`` is
    its ``Sharding``; ``gather()`` gives the whole array, ``local()`` this rank's block. Every namespace function
    accepts it: most run on the blocks, the rest gather first (see ``trn_backend.distributed``).

    ``x[::-1]`` (any negative step) is a copy, not NumPy's view: DTensor has no negative strides and no view to
    mirror writes through. The copy is read-only (``_why`` says why), as are the views that indexing takes of
    it, so a write meant for x is refused rather than lost; write into x with the mirrored key instead.
    ``x.flags.writeable = False`` marks x read-only the same way (lifted by setting it True again); slices of
    it are read-only too, but views that functions take of it (reshape, transpose) are not."""

    __slots__ = ("_why",)  # set on a read-only sharded array: the reason, for the error

    @property
    def device(self) -> Sharding:  # type: ignore[override]
        return sharding_of(self._t)

    @property
    def sharding(self) -> Sharding:
        """The same as ``device``: mesh, partitioned axis, pending sum."""
        return sharding_of(self._t)

    def gather(self) -> NeuronArray:
        """The whole array on every rank, as a plain NeuronArray (an all-gather, or an all-reduce for a pending
        sum; nothing for a replicated array). Every rank must call it."""
        return wrap(redistribute(self._t, Replicate()).to_local())

    def local(self) -> NeuronArray:
        """This rank's block as a plain NeuronArray, without communication (of a pending sum: its summand)."""
        return wrap(self._t.to_local())

    def redistribute(self, axis: int | None = None) -> ShardedNeuronArray:
        """The same values partitioned along ``axis`` (None: replicated). A pending sum resolves by one
        reduce-scatter (or all-reduce for None); a sharded array moves by DTensor's collectives."""
        target = Sharding(self._t.device_mesh, axis)
        return wrap(redistribute(self._t, placement(_checked(target, self.ndim, "redistribute"))))

    def resolve(self, axis: int | None = None) -> ShardedNeuronArray:
        """A pending sum resolved: by one all-reduce (``axis`` None, every rank then holds the result) or one
        reduce-scatter (the result stays partitioned along ``axis``). Other arrays: ``redistribute(axis)`` when
        ``axis`` is given, else the array itself."""
        if axis is None and not self._t.placements[0].is_partial():
            return self
        return self.redistribute(axis)

    def to_device(self, device: Any, /, *, stream: int | Any | None = None) -> NeuronArray:
        """To another ``Sharding`` of the same mesh (redistributed), or gathered onto a device (a plain array)."""
        if stream is not None:
            raise ValueError("to_device(): stream is not supported (torch synchronizes device copies itself)")
        if isinstance(device, Sharding):
            if device == self.device:
                return self
            if device.mesh != self._t.device_mesh or device.pending:
                return wrap(place(self.gather()._t, device, "to_device"))
            return self.redistribute(device.axis)
        return self.gather().to_device(device)

    # --- indexing: reads run like namespace functions (the override this package registers handles them);
    # writes go to each rank's block ---
    _getitem = public(NeuronArray.__getitem__, "__getitem__")

    def __getitem__(self, key: Any) -> NeuronArray:
        r = self._getitem(key)
        if isinstance(r, ShardedNeuronArray):
            why = getattr(self, "_why", None)
            if why is None or not simple(key):  # advanced indexing copies: writeable, as in NumPy
                why = None
            elif why is _BY_FLAG:  # a view of a read-only array, as in NumPy: its flag cannot be lifted
                why = "it is a view of a read-only array"
            if _reverses(key):
                why = ("x[::-1] of a sharded array is a copy (DTensor has no negative strides), which refuses "
                       "writes rather than losing them; write into x with the mirrored key instead")
            if why is not None:
                r._why = why
        return r

    def _writeable(self) -> bool:
        return getattr(self, "_why", None) is None

    def _set_read_only(self, why: str) -> None:
        self._why = why

    def _set_writeable_flag(self, value: bool) -> None:
        """``x.flags.writeable = value``: a mark on this array object (DTensor has no read-only form), which
        only a flag set so may lift; views taken while it is set are not marked (unlike a plain array's)."""
        why = getattr(self, "_why", None)
        if not value:
            if why is None:
                self._why = _BY_FLAG
        elif why is _BY_FLAG:
            self._why = None
        elif why is not None:
            raise ValueError(f"x.flags.writeable = True: cannot set WRITEABLE flag to True of this array: {why}")

    def _check_writeable(self, operation: str, what: str = "x") -> None:
        why = getattr(self, "_why", None)
        if why is not None:
            raise ValueError(f"{operation}: assignment destination is read-only: {why}")

    def _write(self, r: torch.Tensor, operation: str) -> None:
        self._check_writeable(operation)
        NeuronArray._write(self, r, operation)

    def __setitem__(self, key: Any, value: Any) -> None:
        """Write in place: into every rank's copy of a replicated array; into a partitioned one through the whole
        array (gathered, written, each rank's block copied back). A pending sum is resolved first."""
        self._check_writeable("x[key] = value")
        if self._t.placements[0].is_partial():
            self._t = redistribute(self._t, Replicate())
        key = tuple(map(_whole, key)) if type(key) is tuple else _whole(key)
        value = _whole(value)
        (p,) = self._t.placements
        if p.is_replicate():
            NeuronArray.__setitem__(wrap(self._t.to_local()), key, value)
            return
        whole = self.gather()
        whole[key] = value
        self._t.to_local().copy_(redistribute(as_dtensor(whole._t, self._t.device_mesh), p).to_local())

    # --- conversions need the values: each gathers (every rank must call them) ---
    def _scalar(self, kind: str) -> Any:
        return self.gather()._scalar(kind)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        if copy is False and not self._t.placements[0].is_replicate():
            raise ValueError(f"np.asarray(x, copy=False): x is {self.device}; gathering it makes a copy")
        return self.gather().__array__(dtype, copy)

    def __dlpack__(self, /, **kwargs: Any) -> Any:
        return self.gather().__dlpack__(**kwargs)

    def __dlpack_device__(self) -> Any:
        return self.local().__dlpack_device__()

    def __repr__(self) -> str:
        values = np.array2string(np.asarray(self.gather()), separator=", ", prefix="ShardedNeuronArray(")
        return f"ShardedNeuronArray({values}, dtype={_dtypes.name(self.dtype)}, device={self.device!r})"

    __str__ = __repr__


_BY_FLAG = "it was made read-only by x.flags.writeable = False"


def _reverses(key: Any) -> bool:
    """Whether an indexing key holds a slice with a negative step."""
    for k in key if type(key) is tuple else (key,):
        if isinstance(k, slice) and k.step is not None and operator.index(k.step) < 0:
            return True
    return False


def _whole(x: Any) -> Any:
    return x.gather() if isinstance(x, ShardedNeuronArray) else x


def _resolved_first(op: Any) -> Any:
    """An in-place operator that resolves a pending sum first (the result is then written block by block)."""
    def inplace(self: ShardedNeuronArray, other: Any, /) -> Any:
        if self._t.placements[0].is_partial():
            self._t = redistribute(self._t, Replicate())
        return op(self, other)

    inplace.__name__ = op.__name__
    return inplace


for _name in [n for n in vars(NeuronArray) if n.startswith("__i") and hasattr(NeuronArray, "__r" + n[3:])]:
    setattr(ShardedNeuronArray, _name, _resolved_first(getattr(NeuronArray, _name)))


def _checked(sharding: Sharding, ndim: int, func: str) -> Sharding:
    if sharding.axis is None:
        return sharding
    if isinstance(sharding.axis, bool) or not isinstance(sharding.axis, int):
        raise TypeError(f"{func}(): axis must be an int or None, got {type(sharding.axis).__name__}")
    if not -ndim <= sharding.axis < ndim:
        raise IndexError(f"{func}(): axis {sharding.axis} is out of bounds for array of dimension {ndim}")
    return dataclasses.replace(sharding, axis=sharding.axis % ndim)


register_wrapper(DTensor, ShardedNeuronArray)
