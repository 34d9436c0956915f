"""The one-dimensional device mesh sharded arrays live on, by default one over every rank of the world.

torch.distributed does the communication: ``default_mesh`` uses the default process group, and starts one when
none is running (from a launcher's environment, such as torchrun's, or else a world of one process on gloo).
"""

from __future__ import annotations

import atexit
import datetime
import os

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import DeviceMesh

from .. import _device

__all__ = ["default_mesh", "check_mesh", "chunk_sizes", "local_slice", "local_device"]

# One mesh per default process group (the threaded process group of the tests has one per thread).
_MESHES: dict[object, DeviceMesh] = {}


def default_mesh() -> DeviceMesh:
    """A 1-D mesh over every rank of the default process group, started first if none is running: from the
    environment a launcher sets (torchrun), else as a single process on gloo (a world of size 1)."""
    if not dist.is_initialized():
        _init_world()
    group = dist.group.WORLD
    mesh = _MESHES.get(group)
    if mesh is None:
        mesh = _MESHES[group] = DeviceMesh.from_group(group, _device.default_device().type)
    return mesh


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
    """Wait for every rank, then end the group (a rank that tears gloo down while another still talks to it
    aborts that one). A rank that died makes the barrier time out: the exit then goes on without it."""
    if not dist.is_initialized():
        return
    try:
        if dist.get_world_size() > 1 and dist.get_backend() == "gloo":
            dist.monitored_barrier(timeout=END_TIMEOUT)
        elif dist.get_world_size() > 1:
            dist.barrier()
        dist.destroy_process_group()
    except RuntimeError:
        pass
    _MESHES.clear()


END_TIMEOUT = datetime.timedelta(seconds=30)


def check_mesh(mesh: object, func: str) -> DeviceMesh:
    """``mesh``, or the default mesh for None; anything but a 1-D DeviceMesh is an error naming ``func``."""
    if mesh is None:
        return default_mesh()
    if not isinstance(mesh, DeviceMesh):
        raise TypeError(f"{func}(): mesh must be a torch.distributed DeviceMesh (or None for the default mesh "
                        f"over the world), got {type(mesh).__name__}")
    if mesh.ndim != 1:
        raise ValueError(f"{func}(): sharded arrays live on a 1-dimensional mesh, got a {mesh.ndim}-dimensional "
                         f"one of shape {tuple(mesh.shape)}; pass one of its dimensions, e.g. mesh['dp']")
    return mesh


def chunk_sizes(n: int, parts: int) -> list[int]:
    """The block sizes of ``n`` elements over ``parts`` ranks as DTensor lays them out (``torch.chunk``: blocks
    of ceil(n / parts), the last ones shorter or empty)."""
    size = -(-n // parts) if parts else 0
    return [max(0, min(size, n - r * size)) for r in range(parts)]


def local_slice(n: int, mesh: DeviceMesh | None = None) -> slice:
    """The indices of an axis of length ``n`` that this rank holds when that axis is sharded over ``mesh``:
    compute exactly this block and pass it to ``from_local``."""
    mesh = check_mesh(mesh, "local_slice")
    sizes = chunk_sizes(n, mesh.size())
    rank = mesh.get_local_rank()
    start = sum(sizes[:rank])
    return slice(start, start + sizes[rank])


def local_device(mesh: DeviceMesh) -> torch.device:
    """The device of this rank's blocks (``cuda`` meaning the current CUDA device, as torch reads it)."""
    return torch.device(mesh.device_type)
