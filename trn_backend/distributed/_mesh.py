"""The device meshes sharded arrays live on: by default one dimension over every rank of the world, or ``mesh``'s
N-dimensional grid of the world's ranks (2x2, 2x4, ...).

torch.distributed does the communication: ``default_mesh`` uses the default process group, and starts one when
none is running (from a launcher's environment, such as torchrun's, or else a world of one process on gloo).
"""

from __future__ import annotations

import atexit
import datetime
import math
import os

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import DeviceMesh

from .. import _device

__all__ = ["default_mesh", "mesh", "check_mesh", "chunk_sizes", "local_slice", "local_device", "whole_group"]

# One mesh per default process group (the threaded process group of the tests has one per thread).
_MESHES: dict[object, DeviceMesh] = {}  # and the meshes mesh() made, per group, shape and names


def default_mesh() -> DeviceMesh:
    """A 1-D mesh over every rank of the default process group, started first if none is running: from the
    environment a launcher sets (torchrun), else as a single process on gloo (a world of size 1)."""
    if not dist.is_initialized():
        _init_world()
    group = dist.group.WORLD
    assert group is not None  # the default group exists once torch.distributed is initialized (just above)
    mesh = _MESHES.get(group)
    if mesh is None:
        mesh = _MESHES[group] = DeviceMesh.from_group(group, _device.default_device().type)
    return mesh


def mesh(shape: int | tuple[int, ...], names: tuple[str, ...] | None = None) -> DeviceMesh:
    """A mesh of ``shape`` over every rank of the default process group (started first if none is running), the
    ranks in row-major order: ``mesh((2, 2))`` on 4 ranks is [[0, 1], [2, 3]]. ``names`` names its dimensions
    (``mesh((2, 4), ("node", "chip"))``); ``mesh(n)`` is 1-D. The product of ``shape`` must be the world's size."""
    if not dist.is_initialized():
        _init_world()
    dims = (shape,) if isinstance(shape, int) else tuple(shape)
    if not dims or any(isinstance(d, bool) or not isinstance(d, int) or d < 1 for d in dims):
        raise ValueError(f"mesh(): shape must be positive integers, one per mesh dimension, got {shape!r}")
    world = dist.get_world_size()
    if math.prod(dims) != world:
        raise ValueError(
            f"mesh(): a mesh of shape {'x'.join(map(str, dims))} needs {math.prod(dims)} ranks; the "
            f"world has {world} (start {math.prod(dims)} ranks, e.g. torchrun --nproc-per-node "
            f"{math.prod(dims)}, or pick a shape whose product is {world})"
        )
    if names is not None and len(names) != len(dims):
        raise ValueError(f"mesh(): {len(names)} names {names} for a {len(dims)}-dimensional shape {dims}")
    key = (dist.group.WORLD, dims, names)
    made = _MESHES.get(key)
    if made is None:
        made = _MESHES[key] = DeviceMesh(
            _device.default_device().type, torch.arange(world).reshape(dims), mesh_dim_names=names
        )
    return made


def whole_group(mesh: DeviceMesh) -> dist.ProcessGroup | None:
    """The process group of every rank of ``mesh`` (None: the default group, where the mesh spans the world)."""
    if mesh.ndim == 1:
        return mesh.get_group()
    if mesh.size() == dist.get_world_size():
        return None
    raise ValueError(
        f"a {mesh.ndim}-dimensional mesh over part of the world ({mesh.size()} of "
        f"{dist.get_world_size()} ranks) is not supported; build it over every rank with mesh()"
    )


def _init_world() -> None:
    # a group this package starts, it also ends: gloo threads still running at interpreter exit abort the
    # process ("terminate called without an active exception") after the program's work is done
    atexit.register(_end_world)
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        # a launcher's env:// rendezvous; torch picks the backend of each device type (gloo for the CPU)
        dist.init_process_group()
    else:
        # no launcher: a world of one process, its rendezvous in this process's memory (no port, no file)
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)


def _end_world() -> None:
    """End the group this package started, once every rank is done with it (``leave_together``). A rank that died
    makes the wait time out: the exit then goes on without it."""
    if not dist.is_initialized():
        return
    try:
        store = dist.distributed_c10d._get_default_store() if dist.get_world_size() > 1 else None
        leave_together(store, END_TIMEOUT)
    except RuntimeError:
        pass
    _MESHES.clear()


END_TIMEOUT = datetime.timedelta(seconds=30)


def leave_together(store: dist.Store | None, timeout: datetime.timedelta) -> None:
    """Ends the default process group once every rank has finished its traffic on it. A rank that tears gloo down
    while a peer still reads from it aborts the peer (SIGABRT, "terminate called without an active exception"), and
    a barrier alone does not prevent that: its last message may still be on its way to a peer when the barrier
    returns here. So each rank, once its barrier has returned (it has received all it will receive), says so in
    ``store`` (the group's rendezvous store, outside gloo's connections) and waits until all ranks have said so.
    ``store`` None: a world of one process, nothing to wait for."""
    size = dist.get_world_size()
    if store is not None and size > 1:
        dist.barrier()
        rank = dist.get_rank()
        store.set(f"trn_backend/left/{rank}", "1")
        store.wait([f"trn_backend/left/{r}" for r in range(size)], timeout)
    dist.destroy_process_group()


def check_mesh(mesh: object, func: str) -> DeviceMesh:
    """``mesh``, or the default mesh for None; anything but a DeviceMesh is an error naming ``func``."""
    if mesh is None:
        return default_mesh()
    if not isinstance(mesh, DeviceMesh):
        raise TypeError(
            f"{func}(): mesh must be a torch.distributed DeviceMesh (or None for the default mesh "
            f"over the world), got {type(mesh).__name__}"
        )
    if mesh.ndim > 1:
        whole_group(mesh)  # a mesh over part of the world is refused here, not at its first collective
    return mesh


def chunk_sizes(n: int, parts: int) -> list[int]:
    """The block sizes of ``n`` elements over ``parts`` ranks as DTensor lays them out (``torch.chunk``: blocks
    of ceil(n / parts), the last ones shorter or empty)."""
    size = -(-n // parts) if parts else 0
    return [max(0, min(size, n - r * size)) for r in range(parts)]


def local_slice(n: int, mesh: DeviceMesh | None = None, mesh_dim: int = 0) -> slice:
    """The indices of an axis of length ``n`` that this rank holds when that axis is partitioned over dimension
    ``mesh_dim`` of ``mesh``: compute exactly this block and pass it to ``from_local``."""
    mesh = check_mesh(mesh, "local_slice")
    if not 0 <= mesh_dim < mesh.ndim:
        raise IndexError(f"local_slice(): mesh_dim {mesh_dim} is out of range for a {mesh.ndim}-dimensional mesh")
    sizes = chunk_sizes(n, mesh.size(mesh_dim))
    coordinate = mesh.get_coordinate()
    rank = coordinate[mesh_dim] if coordinate is not None else 0
    start = sum(sizes[:rank])
    return slice(start, start + sizes[rank])


def local_device(mesh: DeviceMesh) -> torch.device:
    """The device of this rank's blocks (``cuda`` meaning the current CUDA device, as torch reads it)."""
    return torch.device(mesh.device_type)
