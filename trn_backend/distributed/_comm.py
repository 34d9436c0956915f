"""The communication model: which collectives a change of placement issues, the bytes each rank hands to each,
and their modelled time.

A change of placement runs one mesh dimension at a time (``moves``, in the order ``_array.redistribute`` runs
them), and each move that communicates is one collective of DTensor's over that dimension's ranks. The bytes a
rank hands in follow DTensor's layout: a block of an axis of length n over p ranks is padded to ceil(n / p)
before an all-gather, and a reduce-scatter pads the scattered axis to a multiple of p (so uneven blocks cost as
much as the largest). Time per collective is the alpha-beta model of ring and pairwise-exchange algorithms
(Thakur, Rabenseifner and Gropp, "Optimization of Collective Communication Operations in MPICH", IJHPCA 2005),
with p ranks and n bytes handed in by each:

    all_gather      (p-1) alpha + (p-1) n beta
    reduce_scatter  (p-1) alpha + (p-1)/p n beta
    all_reduce      2 (p-1) alpha + 2 (p-1)/p n beta
    all_to_all      (p-1) alpha + (p-1)/p n beta

alpha and beta per collective are data (``trn_backend/data/interconnects.json``): measured for gloo on the
machine that ran ``python -m trn_backend.distributed.calibrate``, published figures for Trainium's interconnects.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from collections.abc import Sequence
from importlib import resources

import torch
from torch.distributed.tensor import Partial, Placement, Replicate, Shard

from .. import _dtypes

__all__ = [
    "KINDS",
    "Link",
    "Network",
    "Move",
    "link",
    "network",
    "moves",
    "local_shape",
    "describe",
    "wire_dtype",
    "regressors",
    "seconds",
]

KINDS = ("all_gather", "reduce_scatter", "all_reduce", "all_to_all")


@dataclasses.dataclass(frozen=True, eq=False)  # one object per interconnect (``link`` caches): hashed by identity
class Link:
    """The collectives of one interconnect: alpha (s) and beta (s per byte) per kind, whether it has a native
    all-to-all (gloo has none: DTensor all-gathers and keeps its block), and the matmul rate of one rank."""

    name: str
    alpha: dict[str, float]
    beta: dict[str, float]
    all_to_all_native: bool
    flops: dict[str, float]  # per rank, by dtype name ("float64", "float32"); empty where not measured
    basis: str  # "measured ..." or "published ..."


def regressors(kind: str, p: int, n_bytes: float) -> tuple[float, float]:
    """The coefficients (a, b) of one collective's modelled time, T = a alpha + b beta: a counts the steps, b the
    bytes each rank sends (the table of the module docstring)."""
    steps = float(p - 1)
    if kind == "all_gather":
        return steps, steps * n_bytes
    if kind in ("reduce_scatter", "all_to_all"):
        return steps, steps / p * n_bytes
    if kind == "all_reduce":
        # a reduce-scatter, then an all-gather of the reduced blocks (Rabenseifner's algorithm in the ring form)
        return 2.0 * steps, 2.0 * steps / p * n_bytes
    raise ValueError(f"unknown collective kind {kind!r}; expected one of {KINDS}")


def seconds(kind: str, ranks: int, nbytes: int, link: Link) -> float:
    """The modelled time of one collective of ``kind`` over ``ranks`` ranks, each handing in ``nbytes``."""
    if ranks <= 1:
        return 0.0
    a, b = regressors(kind, ranks, nbytes)
    return a * link.alpha[kind] + b * link.beta[kind]


@functools.cache
def _data() -> dict[str, dict]:
    return json.loads(resources.files("trn_backend.data").joinpath("interconnects.json").read_text())


@functools.cache
def link(name: str) -> Link:
    """The interconnect ``name`` of the data file ("gloo-cpu", "trn2-neuronlink", "trn2-efa")."""
    data = _data()
    if name not in data:
        raise ValueError(f"unknown interconnect {name!r}; the data file has {sorted(data)}")
    entry = data[name]
    kinds = {k: v for k, v in entry["collectives"].items() if v is not None}
    if not entry["all_to_all_native"]:  # DTensor's fallback is an all-gather: its cost is the all-gather's
        kinds["all_to_all"] = kinds["all_gather"]
    return Link(
        name,
        {k: float(v["alpha_s"]) for k, v in kinds.items()},
        {k: float(v["beta_s_per_byte"]) for k, v in kinds.items()},
        bool(entry["all_to_all_native"]),
        {k: float(v) for k, v in entry.get("matmul_flops_per_s", {}).items()},
        f"{entry['basis']} ({entry.get('date') or ', '.join(entry.get('sources', []))})",
    )


@dataclasses.dataclass(frozen=True)
class Network:
    """The interconnect of each mesh dimension, and the matmul rate of one rank (FLOP/s by dtype name)."""

    links: tuple[Link, ...]
    flops: dict[str, float]

    def flops_per_s(self, dtype: torch.dtype) -> float:
        name = "float32" if dtype in (torch.float32, torch.complex64, torch.float16, torch.bfloat16) else "float64"
        return self.flops.get(name) or min(self.flops.values())


def network(ndim: int, names: Sequence[str] | None = None) -> Network:
    """The network of a mesh of ``ndim`` dimensions: ``names`` (one interconnect per dimension) or gloo on this
    machine for each, with gloo's measured matmul rate (the CPU's)."""
    links = tuple(link(n) for n in (names or ["gloo-cpu"] * ndim))
    if len(links) != ndim:
        raise ValueError(f"a network for a {ndim}-dimensional mesh needs {ndim} interconnects, got {len(links)}")
    return Network(links, link("gloo-cpu").flops)


@dataclasses.dataclass(frozen=True)
class Move:
    """One mesh dimension's change of placement; ``kind`` the collective it issues (None: none, a local chunk),
    ``nbytes`` what this rank hands to it, ``seconds`` the model's time (for the largest block)."""

    mesh_dim: int
    before: Placement
    after: Placement
    kind: str | None
    issued: str | None  # the collective torch runs for it (an all-to-all on gloo is an all-gather)
    ranks: int
    nbytes: int
    seconds: float

    def __str__(self) -> str:
        return f"{self.kind} over mesh dim {self.mesh_dim}: {self.nbytes} B"


def wire_dtype(dtype: torch.dtype, before: Placement) -> torch.dtype:
    """The dtype a block travels in (``_array.redistribute``'s: gloo has no unsigned or narrow collectives)."""
    if getattr(before, "reduce_op", None) in ("max", "min"):
        return _dtypes.ordered(torch.empty(0, dtype=dtype), dtype).dtype
    return _dtypes.compute(torch.empty(0, dtype=dtype)).dtype


def local_shape(
    shape: Sequence[int], placements: Sequence[Placement], mesh_shape: Sequence[int], coordinate: Sequence[int]
) -> list[int]:
    """The block of a global ``shape`` at mesh ``coordinate`` (torch.chunk's layout: blocks of ceil(n / p), the
    last ones shorter or empty)."""
    local = list(shape)
    for p, size, c in zip(placements, mesh_shape, coordinate, strict=True):
        if isinstance(p, Shard):
            n = shape[p.dim]
            step = -(-n // size) if size else 0
            local[p.dim] = max(0, min(step, n - c * step))
    return local


def moves(
    shape: Sequence[int],
    dtype: torch.dtype,
    mesh_shape: Sequence[int],
    before: Sequence[Placement],
    after: Sequence[Placement],
    coordinate: Sequence[int],
    links: Sequence[Link],
) -> list[Move]:
    """The moves from placements ``before`` to ``after`` of an array of global ``shape``, in the order they run:
    first blocks leave their axis (all-gather, or all-to-all to an axis no other dimension splits), then pending
    sums resolve (all-reduce, or reduce-scatter), then replicas take their block (no communication). ``nbytes``
    is what the rank at ``coordinate`` hands in; ``seconds`` is for the largest block (coordinate 0)."""
    current = list(before)
    out: list[Move] = []

    def move(d: int, to: Placement) -> None:
        was = current[d]
        kind = _kind(was, to) if mesh_shape[d] > 1 else None  # over one rank DTensor only relabels
        nbytes = _nbytes(kind, shape, dtype, mesh_shape, current, d, to, coordinate)
        worst = _nbytes(kind, shape, dtype, mesh_shape, current, d, to, [0] * len(mesh_shape))
        issued = "all_gather" if kind == "all_to_all" and not links[d].all_to_all_native else kind
        out.append(
            Move(
                d,
                was,
                to,
                kind,
                issued,
                mesh_shape[d],
                nbytes,
                0.0 if kind is None else seconds(kind, mesh_shape[d], worst, links[d]),
            )
        )
        current[d] = to

    for d in reversed(range(len(current))):  # blocks leave their axis, innermost dimension first
        was, to = current[d], after[d]
        if isinstance(was, Shard) and was != to:
            free = isinstance(to, Shard) and not any(
                isinstance(p, Shard) and p.dim == to.dim for e, p in enumerate(current) if e != d
            )
            move(d, to if free else Replicate())
    for d in range(len(current)):  # pending sums resolve
        if isinstance(current[d], Partial) and current[d] != after[d]:
            move(d, after[d])
    for d in range(len(current)):  # replicas take their block (or become a pending sum's summand)
        if current[d] != after[d]:
            move(d, after[d])
    return [m for m in out if m.before != m.after]


def _kind(was: Placement, to: Placement) -> str | None:
    if isinstance(was, Shard):
        return "all_gather" if isinstance(to, Replicate) else "all_to_all"
    if isinstance(was, Partial):
        return "all_reduce" if isinstance(to, Replicate) else "reduce_scatter"
    return None  # a replica takes its block, or keeps a summand: local


def _nbytes(
    kind: str | None,
    shape: Sequence[int],
    dtype: torch.dtype,
    mesh_shape: Sequence[int],
    current: Sequence[Placement],
    d: int,
    to: Placement,
    coordinate: Sequence[int],
) -> int:
    """What one rank hands to the collective of mesh dimension ``d``, in DTensor's layout."""
    if kind is None:
        return 0
    local = local_shape(shape, current, mesh_shape, coordinate)
    p = mesh_shape[d]
    was = current[d]
    if isinstance(was, Shard):  # the block, padded to the largest; to another axis: that axis padded for p
        local[was.dim] = -(-shape[was.dim] // p)
        if isinstance(to, Shard):
            local[to.dim] = -(-shape[to.dim] // p) * p
    elif isinstance(to, Shard):  # a reduce-scatter pads the scattered axis to a multiple of p
        local[to.dim] = -(-shape[to.dim] // p) * p
    return math.prod(local) * wire_dtype(dtype, was).itemsize


def describe(placements: Sequence[Placement], labels: str | None = None) -> str:
    """Placements as text, one per mesh dimension: "S(i)" (sharded along the axis of label i, or S(0) by axis),
    "R" (replicated), "P" (a pending sum); "[S(Q), R]"."""

    def one(p: Placement) -> str:
        if isinstance(p, Shard):
            return f"S({labels[p.dim] if labels else p.dim})"
        return "P" if isinstance(p, Partial) else "R"

    return "[" + ", ".join(map(one, placements)) + "]"
