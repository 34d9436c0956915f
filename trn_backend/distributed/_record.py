"""What sharded calls did, next to what the model predicted: ``record()`` collects the planner's step decisions
and every modelled move of a redistribution; ``count()`` counts the collectives torch.distributed actually runs
and the bytes each rank hands to them (a ``CommDebugMode`` that also reads the buffers). Both are per thread (a
rank of torch's threaded process group is a thread) and cost nothing outside their blocks. ``use_network`` sets
the interconnects the planner models, per mesh dimension, for the process.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import threading
from collections.abc import Iterator
from typing import Any

import torch
from torch.distributed.tensor import DTensor

from . import _comm

__all__ = ["Record", "Counted", "record", "count", "use_network", "links", "moved", "decided"]

_LOCAL = threading.local()


@dataclasses.dataclass
class Record:
    """The planner's decisions (``steps``: one ``_strategy.Decision`` per contraction step on sharded operands)
    and every move of a redistribution (``moves``: ``_comm.Move``, with the array's shape and dtype), in order."""

    steps: list[Any] = dataclasses.field(default_factory=list)
    moves: list[tuple[_comm.Move, tuple[int, ...], torch.dtype]] = dataclasses.field(default_factory=list)

    @property
    def modelled_bytes(self) -> int:
        """The bytes this rank hands to collectives, as modelled, over every move recorded."""
        return sum(m.nbytes for m, _, _ in self.moves if m.kind is not None)


@contextlib.contextmanager
def record() -> Iterator[Record]:
    """Record the planner's decisions and the modelled moves of sharded calls in the block (this thread's)."""
    stack = _stack()
    r = Record()
    stack.append(r)
    try:
        yield r
    finally:
        stack.remove(r)


def _stack() -> list[Record]:
    if not hasattr(_LOCAL, "records"):
        _LOCAL.records = []
    return _LOCAL.records


def moved(m: _comm.Move, shape: tuple[int, ...], dtype: torch.dtype) -> None:
    for r in _stack():
        r.moves.append((m, shape, dtype))


def decided(decision: Any) -> None:
    for r in _stack():
        r.steps.append(decision)


# --- the interconnects the planner models ---


def links(ndim: int) -> tuple[_comm.Link, ...]:
    """The interconnect of each mesh dimension of an ``ndim``-dimensional mesh (``use_network``, else gloo)."""
    return network(ndim).links


# The interconnects set by ``use_network``: one setting per process (every rank of a process models alike).
_NETWORK: list[tuple[_comm.Link, ...]] = []


def network(ndim: int) -> _comm.Network:
    chosen = _NETWORK[-1] if _NETWORK else None
    if not chosen:
        return _comm.network(ndim)
    links = tuple(chosen[min(d, len(chosen) - 1)] for d in range(ndim))  # the last one for further dimensions
    flops = next((lk.flops for lk in links if lk.flops), None) or _comm.link("gloo-cpu").flops
    return _comm.Network(links, flops)


@contextlib.contextmanager
def use_network(*links: str | _comm.Link) -> Iterator[None]:
    """Model the mesh dimensions' interconnects as ``links`` in the block, one per mesh dimension (the last one
    for any further dimension): names from the data file ("gloo-cpu", "trn2-neuronlink", "trn2-efa") or
    ``Link`` objects. The default is gloo on every dimension, with this machine's measured matmul rate."""
    chosen = tuple(_comm.link(lk) if isinstance(lk, str) else lk for lk in links)  # unknown names fail here
    if not chosen:
        raise ValueError("use_network(): give one interconnect per mesh dimension (at least one)")
    _NETWORK.append(chosen)
    try:
        yield
    finally:
        _NETWORK.remove(chosen)


# --- counting what torch runs ---


@dataclasses.dataclass(frozen=True)
class Counted:
    """One collective torch.distributed ran: its name ("all_gather", "reduce_scatter", "all_reduce",
    "all_to_all", "broadcast", ...) and the bytes this rank handed to it."""

    kind: str
    nbytes: int


# the ops' names, native functional collectives and the eager c10d ops alike, by what they are
_KINDS = {
    "all_gather_into_tensor": "all_gather",
    "all_gather_tensor": "all_gather",
    "allgather_": "all_gather",
    "_allgather_base_": "all_gather",
    "reduce_scatter_tensor": "reduce_scatter",
    "_reduce_scatter_base_": "reduce_scatter",
    "reduce_scatter_": "reduce_scatter",
    "all_reduce": "all_reduce",
    "allreduce_": "all_reduce",
    "all_to_all_single": "all_to_all",
    "alltoall_base_": "all_to_all",
    "alltoall_": "all_to_all",
    "broadcast_": "broadcast",
    "broadcast": "broadcast",
}


@functools.cache
def _counting() -> type:
    """CommDebugMode (its counts stay available) that also records each collective's input bytes. Built on first
    use: importing torch's debug tools has import effects of its own (it rebinds a torch function), which a
    program that never counts should not get."""
    from torch.distributed.tensor.debug import CommDebugMode

    class Counting(CommDebugMode):
        def __init__(self) -> None:
            super().__init__()
            self.collectives: list[Counted] = []

        def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
            if not isinstance(func, torch._ops.HigherOrderOperator) and not any(t is DTensor for t in types):
                name = func._overloadpacket.__name__
                if name in _KINDS and str(func._overloadpacket).split(".")[0] in ("_c10d_functional", "c10d"):
                    first = args[0] if args else None
                    buffers = first if isinstance(first, (list, tuple)) else [first]
                    self.collectives.append(Counted(_KINDS[name], sum(_bytes(b) for b in buffers)))
            return super().__torch_dispatch__(func, types, args, kwargs)

    return Counting


def _bytes(b: Any) -> int:
    if isinstance(b, torch.Tensor):
        return b.numel() * b.element_size()
    if isinstance(b, (list, tuple)):
        return sum(map(_bytes, b))
    return 0


@contextlib.contextmanager
def count() -> Iterator[list[Counted]]:
    """The collectives torch.distributed runs in the block on this rank, each with the bytes this rank hands in
    (a list, filled as they run). Collectives of DTensor and of torch.distributed's functions alike."""
    mode = _counting()()
    with mode:
        yield mode.collectives
