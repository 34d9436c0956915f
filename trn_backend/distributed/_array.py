"""ShardedNeuronArray: a NeuronArray holding a DTensor on a 1-D mesh, and ``Sharding``, its ``device``.

An array is sharded along one axis (each rank holds a block, ``torch.chunk``'s layout, so sizes may be uneven),
replicated (every rank holds all of it), or a pending sum (each rank holds a summand: DTensor's ``Partial``, what
a contraction over a sharded index leaves). Collectives are torch.distributed's, through DTensor.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any, cast, overload

import numpy as np
import torch
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.tensor import DTensor, Partial, Placement, Replicate, Shard

from .. import _dtypes
from .._array import NeuronArray, register_wrapper, wrap
from .._indexing import simple
from .._overrides import public
from . import _comm, _record
from ._mesh import local_device

__all__ = [
    "PENDING",
    "Sharding",
    "ShardedNeuronArray",
    "sharding_of",
    "placement",
    "axes_of",
    "is_pending",
    "is_partitioned",
    "replicated",
    "redistribute",
    "as_dtensor",
    "place",
    "wrap_dtensor",
]


PENDING = "sum"  # a mesh dimension over which the array is a pending sum (DTensor's Partial("sum"))


class Sharding:
    """Where a sharded array lives, and its ``device``: the mesh and, per mesh dimension, what the array is over
    that dimension's ranks: partitioned along an array axis (an int), replicated (None) or a pending sum
    (``"sum"``). On a 1-D mesh ``Sharding(mesh, axis)`` and ``Sharding(mesh, None, pending=True)``; on an N-D
    mesh ``Sharding(mesh, (0, None))`` (axis 0 over the first mesh dimension, replicated over the second),
    ``Sharding(mesh, (0, 1))``, ``Sharding(mesh, (None, "sum"))``. An axis is partitioned over at most one mesh
    dimension. Compares with ``==`` and hashes."""

    __slots__ = ("mesh", "axes")
    mesh: DeviceMesh
    axes: tuple[int | str | None, ...]

    def __init__(self, mesh: DeviceMesh, axis: Any = None, pending: bool = False) -> None:
        shape = tuple(mesh.shape)
        if isinstance(axis, (tuple, list)):
            if pending:
                raise ValueError(
                    f"Sharding: pending=True with per-dimension axes {tuple(axis)}; write "
                    f"{PENDING!r} for the mesh dimensions over which the array is a pending sum"
                )
            axes = tuple(axis)
            if len(axes) != len(shape):
                raise ValueError(
                    f"Sharding: one entry per mesh dimension: a mesh of shape {_text(shape)} has "
                    f"{len(shape)}, got {len(axes)} in {axes}"
                )
        else:
            if pending and axis is not None:
                raise ValueError(f"Sharding: a pending sum is not partitioned; got axis={axis} with pending=True")
            if len(shape) != 1:
                raise ValueError(
                    f"Sharding: on a {len(shape)}-dimensional mesh of shape {_text(shape)} give one "
                    f"entry per mesh dimension (an axis, None or {PENDING!r}), e.g. axis=(0, None); "
                    f"got axis={axis!r}"
                )
            axes = (PENDING if pending else axis,)
        for a in axes:
            if a is not None and a != PENDING and (isinstance(a, bool) or not isinstance(a, int)):
                raise TypeError(
                    f"Sharding: each mesh dimension takes an array axis (int), None (replicated) or "
                    f"{PENDING!r} (a pending sum), got {a!r}"
                )
        split = [a for a in axes if isinstance(a, int)]
        if len(split) != len(set(split)):
            twice = next(a for a in split if split.count(a) > 1)
            raise ValueError(
                f"Sharding: axis {twice} is partitioned over two mesh dimensions ({axes}); an axis is "
                "partitioned over one (reshape it into two axes to split it over two)"
            )
        object.__setattr__(self, "mesh", mesh)
        object.__setattr__(self, "axes", axes)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Sharding is immutable")

    @property
    def axis(self) -> Any:
        """On a 1-D mesh the partitioned axis (None when every rank holds the whole array or a summand of it); on
        an N-D mesh ``axes``."""
        if len(self.axes) == 1:
            return None if self.axes[0] == PENDING else self.axes[0]
        return self.axes

    @property
    def pending(self) -> bool:
        """Whether the array is a pending sum over some mesh dimension."""
        return PENDING in self.axes

    @property
    def device(self) -> torch.device:
        """The device each rank's block lives on."""
        return local_device(self.mesh)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sharding) and self.mesh == other.mesh and self.axes == other.axes

    def __hash__(self) -> int:
        return hash((self.mesh, self.axes))

    def __reduce__(self) -> Any:
        return (
            Sharding,
            (self.mesh, self.axes if len(self.axes) > 1 else self.axis, len(self.axes) == 1 and self.pending),
        )

    def __repr__(self) -> str:
        def one(a: int | str | None) -> str:
            return "pending sum" if a == PENDING else "replicated" if a is None else f"axis={a}"

        ranks = self.mesh.mesh.tolist()
        if len(self.axes) == 1:
            return f"Sharding({one(self.axes[0])}, ranks={ranks}, device='{self.mesh.device_type}')"
        where = " | ".join(one(a) for a in self.axes)
        return (
            f"Sharding({where}, mesh={_text(tuple(self.mesh.shape))}, ranks={ranks}, device='{self.mesh.device_type}')"
        )


def _text(shape: tuple[int, ...]) -> str:
    return "x".join(map(str, shape))


def placement(sharding: Sharding) -> tuple[Placement, ...]:
    """The DTensor placements of a sharding, one per mesh dimension."""
    return tuple(
        Partial("sum") if a == PENDING else Replicate() if a is None else Shard(a)  # type: ignore[arg-type]
        for a in sharding.axes
    )


def axes_of(placements: Sequence[Placement]) -> tuple[int | str | None, ...]:
    """Per mesh dimension, the axis a placement partitions, None (replicated) or ``PENDING``."""
    return tuple(p.dim if isinstance(p, Shard) else PENDING if p.is_partial() else None for p in placements)


def sharding_of(t: DTensor) -> Sharding:
    """The sharding of a DTensor placed the ways sharded arrays are (Shard, Replicate, Partial sum)."""
    axes = axes_of(t.placements)
    return Sharding(
        t.device_mesh,
        axes if len(axes) > 1 else axes[0] if axes[0] != PENDING else None,
        len(axes) == 1 and axes[0] == PENDING,
    )


def is_pending(t: DTensor) -> bool:
    """Whether a DTensor is a pending sum over some mesh dimension."""
    return any(p.is_partial() for p in t.placements)


def is_partitioned(t: DTensor) -> bool:
    """Whether some mesh dimension partitions a DTensor."""
    return any(p.is_shard() for p in t.placements)


def replicated(mesh: DeviceMesh) -> tuple[Placement, ...]:
    return (Replicate(),) * mesh.ndim


# Each rank's block travels in a dtype the backends' collectives support (gloo has no uint16/32/64): sums and
# blocks as the compute dtype (exact, modular), maxima and minima as the order-preserving one.
_ORDERED_OPS = ("max", "min")


def redistribute(t: DTensor, target: Placement | Sequence[Placement]) -> DTensor:
    """``t`` placed as ``target`` (one placement per mesh dimension; a single one for a 1-D mesh) by DTensor's
    collectives, one mesh dimension at a time in the order ``_comm.moves`` gives (so the collectives are the ones
    the communication model predicts); each move is recorded where a ``td.record()`` block records."""
    mesh = t.device_mesh
    after = (target,) if isinstance(target, Placement) else tuple(target)
    if len(after) != mesh.ndim:
        raise ValueError(f"redistribute: {len(after)} placement(s) {after} for a {mesh.ndim}-dimensional mesh")
    if tuple(t.placements) == after:
        return t
    coordinate = mesh.get_coordinate() or [0] * mesh.ndim
    for m in _comm.moves(
        tuple(t.shape), t.dtype, tuple(mesh.shape), t.placements, after, coordinate, _record.links(mesh.ndim)
    ):
        _record.moved(m, tuple(t.shape), t.dtype)
        placements = list(t.placements)
        placements[m.mesh_dim] = m.after
        t = _one_move(t, tuple(placements), m.before)
    return t


def _one_move(t: DTensor, placements: tuple[Placement, ...], before: Placement) -> DTensor:
    mesh = t.device_mesh
    if t.dtype not in _dtypes.COMPUTE or before.is_replicate():  # from a replica: no collective, blocks stay views
        return t.redistribute(mesh, placements)
    ordered = getattr(before, "reduce_op", None) in _ORDERED_OPS
    into, back = (_dtypes.ordered, _dtypes.unordered) if ordered else (lambda x, _: _dtypes.compute(x), _dtypes.restore)
    moved = _relocal(t, into(t.to_local(), t.dtype)).redistribute(mesh, placements)
    return _relocal(moved, back(moved.to_local(), t.dtype))


def _relocal(t: DTensor, local: torch.Tensor) -> DTensor:
    """``t`` with each rank's block replaced by ``local`` (same shape, another dtype)."""
    return DTensor.from_local(local, t.device_mesh, t.placements, shape=t.shape, stride=t.stride())


def as_dtensor(t: torch.Tensor, mesh: DeviceMesh) -> DTensor:
    """A DTensor as is; a plain tensor (the same on every rank, as in any SPMD program) as replicated."""
    if isinstance(t, DTensor):
        return t
    return DTensor.from_local(t, mesh, replicated(mesh), run_check=False)


def place(t: torch.Tensor, sharding: Sharding, func: str) -> DTensor:
    """A whole array (the same on every rank) placed as ``sharding``, without communication: a block is a
    local chunk; over a pending dimension the ranks at its first coordinate hold the values, the others zeros."""
    mesh = sharding.mesh
    sharding = _checked(sharding, t.dim(), func, ValueError)
    after = placement(sharding)
    blocks = tuple(Replicate() if p.is_partial() else p for p in after)
    local = redistribute(as_dtensor(t, mesh), blocks).to_local()
    coordinate = mesh.get_coordinate() or [0] * mesh.ndim
    if any(p.is_partial() and c != 0 for p, c in zip(after, coordinate, strict=True)):
        local = torch.zeros_like(local)
    return DTensor.from_local(local, mesh, after, shape=t.shape, stride=t.stride())


class ShardedNeuronArray(NeuronArray):
    """A NeuronArray partitioned over the ranks of a device mesh (``x._t`` is a DTensor). ``x.device`` is
    its ``Sharding``; ``gather()`` gives the whole array, ``local()`` this rank's block. Every namespace function
    accepts it: most run on the blocks, the rest gather first (see ``trn_backend.distributed``).

    ``x[::-1]`` (any negative step) is a copy, not NumPy's view: DTensor has no negative strides and no view to
    mirror writes through. The copy is read-only (``_why`` says why), as are the views that indexing takes of
    it, so a write meant for x is refused rather than lost; write into x with the mirrored key instead.
    ``x.flags.writeable = False`` marks x read-only the same way (lifted by setting it True again); slices of
    it are read-only too, but views that functions take of it (reshape, transpose) are not."""

    __slots__ = ("_why",)  # set on a read-only sharded array: the reason, for the error
    _t: DTensor  # what ``wrap`` makes of a DTensor (``register_wrapper`` below)
    _why: str | None

    @property
    def device(self) -> Sharding:  # type: ignore[override]
        return sharding_of(self._t)

    @property
    def sharding(self) -> Sharding:
        """The same as ``device``: the mesh and, per mesh dimension, the partitioned axis or a pending sum."""
        return sharding_of(self._t)

    def gather(self) -> NeuronArray:
        """The whole array on every rank, as a plain NeuronArray (an all-gather, or an all-reduce for a pending
        sum; nothing for a replicated array). Every rank must call it."""
        return wrap(redistribute(self._t, replicated(self._t.device_mesh)).to_local())

    def local(self) -> NeuronArray:
        """This rank's block as a plain NeuronArray, without communication (of a pending sum: its summand)."""
        return wrap(self._t.to_local())

    def redistribute(self, axis: Any = None) -> ShardedNeuronArray:
        """The same values partitioned along ``axis`` (None: replicated; on an N-D mesh one entry per mesh
        dimension, an axis or None). Pending sums resolve by reduce-scatters (or all-reduces); blocks move by
        DTensor's collectives, one mesh dimension at a time."""
        target = _checked(Sharding(self._t.device_mesh, axis), self.ndim, "redistribute")
        if target.pending:
            raise ValueError(f"redistribute(): a target cannot be a pending sum, got axis={axis!r}")
        return wrap_dtensor(redistribute(self._t, placement(target)))

    def resolve(self, axis: Any = None) -> ShardedNeuronArray:
        """Pending sums resolved: by all-reduces (``axis`` None: the partitions over other mesh dimensions are
        kept, and on a 1-D mesh every rank then holds the result) or reduce-scatters (the result partitioned as
        ``axis`` says, as ``redistribute(axis)``). Arrays without a pending sum: ``redistribute(axis)`` when
        ``axis`` is given, else the array itself."""
        if axis is None:
            if not is_pending(self._t):
                return self
            return wrap_dtensor(
                redistribute(self._t, tuple(Replicate() if p.is_partial() else p for p in self._t.placements))
            )
        return self.redistribute(axis)

    @overload
    def to_device(self, device: Sharding, /, *, stream: int | Any | None = None) -> ShardedNeuronArray: ...

    @overload
    def to_device(self, device: Any, /, *, stream: int | Any | None = None) -> NeuronArray: ...

    def to_device(self, device: Any, /, *, stream: int | Any | None = None) -> NeuronArray:
        """To another ``Sharding`` of the same mesh (redistributed), or gathered onto a device (a plain array)."""
        if stream is not None:
            raise ValueError("to_device(): stream is not supported (torch synchronizes device copies itself)")
        if isinstance(device, Sharding):
            if device == self.device:
                return self
            if device.mesh != self._t.device_mesh or device.pending:
                return wrap_dtensor(place(self.gather()._t, device, "to_device"))
            return self.redistribute(device.axes if len(device.axes) > 1 else device.axis)
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
                why = (
                    "x[::-1] of a sharded array is a copy (DTensor has no negative strides), which refuses "
                    "writes rather than losing them; write into x with the mirrored key instead"
                )
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
        if is_pending(self._t):
            self._t = self.resolve()._t
        key = tuple(map(_whole, key)) if type(key) is tuple else _whole(key)
        value = _whole(value)
        if not is_partitioned(self._t):
            NeuronArray.__setitem__(wrap(self._t.to_local()), key, value)
            return
        whole = self.gather()
        whole[key] = value
        self._t.to_local().copy_(redistribute(as_dtensor(whole._t, self._t.device_mesh), self._t.placements).to_local())

    # --- conversions need the values: each gathers (every rank must call them) ---
    def _scalar(self, kind: str) -> Any:
        return self.gather()._scalar(kind)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        if copy is False and (is_pending(self._t) or is_partitioned(self._t)):
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
        if is_pending(self._t):
            self._t = self.resolve()._t
        return op(self, other)

    inplace.__name__ = op.__name__
    return inplace


for _name in [n for n in vars(NeuronArray) if n.startswith("__i") and hasattr(NeuronArray, "__r" + n[3:])]:
    setattr(ShardedNeuronArray, _name, _resolved_first(getattr(NeuronArray, _name)))


def _checked(sharding: Sharding, ndim: int, func: str, out_of_range: type[Exception] = IndexError) -> Sharding:
    """``sharding`` with its axes in range for an array of ``ndim`` dimensions (negative ones counted from the
    end)."""
    axes = []
    for a in sharding.axes:
        if isinstance(a, int):
            if not -ndim <= a < ndim:
                raise out_of_range(f"{func}(): axis {a} is out of bounds for array of dimension {ndim}")
            a %= ndim
        axes.append(a)
    if tuple(axes) == sharding.axes:
        return sharding
    if len(axes) > 1:
        return Sharding(sharding.mesh, tuple(axes))
    return Sharding(sharding.mesh, axes[0] if axes[0] != PENDING else None, axes[0] == PENDING)


register_wrapper(DTensor, ShardedNeuronArray)
# ``wrap`` typed for a DTensor, which it makes a ShardedNeuronArray (the registration above): the same function
wrap_dtensor = cast(Callable[[DTensor], ShardedNeuronArray], wrap)
