"""The placement of each contraction step on a device mesh, chosen by modelled time.

For one step (``inputs -> output`` on operands placed as they come), every mesh dimension gets one of:

- a label, partitioned over that dimension's ranks: operands holding it take their block of it (from a replica: a
  local chunk; from another partition: an all-to-all or all-gather; from a pending sum: a reduce-scatter), the
  others are whole over that dimension; the result is partitioned along it where the output keeps it, else a
  pending sum (the label is contracted);
- nothing: every operand whole over that dimension (all-gathers, all-reduces), the result replicated;
- a pending operand kept pending (the step is linear in it), the others whole: the result a pending sum. Only for
  integer data: a floating pending operand is resolved first (see ``_decide``).

A label is partitioned over at most one dimension, and only where every operand holding it holds it once and not
broadcast from size 1. The modelled time of an assignment is the compute of the largest block (its FLOPs at the
network's matmul rate) plus the collectives of every operand's move (``_comm``'s alpha-beta model, per mesh
dimension's interconnect) plus, for a pending result, the least its resolution will cost (a reduce-scatter along
its longest free axis), charged now since this step decides to leave it pending. The least time wins; ties go to
fewer bytes, then to a result that is not pending, then to keeping the operands as they are. Every rank decides
alike: only global shapes enter. Decisions are cached per step signature.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from collections.abc import Sequence

import torch
from torch.distributed.tensor import Partial, Placement, Replicate, Shard

from ..errors import PlacementError
from . import _comm

__all__ = ["Decision", "decide", "Forced", "PlacementError"]


Placements = tuple[Placement, ...]
# a forced result, per mesh dimension: a label partitioned over it, None (replicated) or "sum" (pending)
Forced = tuple[str | None, ...]
_KEEP = "keep"  # the option "a pending operand stays pending" (with the operand's index)
# one mesh dimension's option: replicated (None), a label partitioned over it, or (_KEEP, a pending operand's index)
Choice = str | tuple[str, int] | None


@dataclasses.dataclass(frozen=True)
class Decision:
    """One step's placement: the operands as they came (``before``) and as the step runs them (``operands``), the
    result's placements, the moves of each operand (bytes for this rank), the modelled times, and the next-best
    assignments (their description and modelled seconds)."""

    subscripts: str
    shapes: tuple[tuple[int, ...], ...]
    before: tuple[Placements, ...]
    operands: tuple[Placements, ...]
    output: Placements
    moves: tuple[tuple[_comm.Move, ...], ...]
    compute_seconds: float
    communication_seconds: float
    deferred_seconds: float  # a pending result's later resolution (a reduce-scatter), charged to this step
    alternatives: tuple[tuple[str, float], ...]
    forced: bool = False

    @property
    def seconds(self) -> float:
        return self.compute_seconds + self.communication_seconds + self.deferred_seconds

    @property
    def nbytes(self) -> int:
        """The bytes this rank hands to the step's collectives, as modelled."""
        return sum(m.nbytes for ms in self.moves for m in ms if m.kind is not None)

    @property
    def collectives(self) -> tuple[_comm.Move, ...]:
        return tuple(m for ms in self.moves for m in ms if m.kind is not None)

    def placements_text(self) -> str:
        inputs, output = self.subscripts.split("->")
        ops = ", ".join(_comm.describe(p, labels) for p, labels in zip(self.operands, inputs.split(","), strict=True))
        return f"{ops} -> {_comm.describe(self.output, output)}"

    def __str__(self) -> str:
        moved = "; ".join(f"operand {i} {m}" for i, ms in enumerate(self.moves) for m in ms if m.kind) or "none"
        text = (
            f"{self.subscripts}: {self.placements_text()}{' (forced)' if self.forced else ''}; collectives: "
            f"{moved}; modelled {_us(self.seconds)} (compute {_us(self.compute_seconds)}, communication "
            f"{_us(self.communication_seconds)}"
        )
        text += f", later reduce-scatter {_us(self.deferred_seconds)})" if self.deferred_seconds else ")"
        if self.alternatives:
            text += "; next: " + ", ".join(f"{d} {_us(s)}" for d, s in self.alternatives[:3])
        return text


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.3g} us" if seconds < 1e-2 else f"{seconds:.3g} s"


def decide(
    inputs: tuple[str, ...],
    output: str,
    shapes: tuple[tuple[int, ...], ...],
    placements: tuple[Placements, ...],
    dtype: torch.dtype,
    mesh_shape: tuple[int, ...],
    coordinate: tuple[int, ...],
    network: _comm.Network,
    forced: Forced | None = None,
) -> Decision:
    """The least modelled time placement of the step ``inputs -> output`` (see the module docstring); ``forced``:
    the result's placement the caller requires. A ``ValueError`` where no assignment gives ``forced``."""
    return _decide(
        inputs,
        output,
        shapes,
        placements,
        dtype,
        mesh_shape,
        coordinate,
        network.links,
        tuple(sorted(network.flops.items())),
        forced,
    )


@functools.lru_cache(maxsize=4096)
def _decide(
    inputs: tuple[str, ...],
    output: str,
    shapes: tuple[tuple[int, ...], ...],
    placements: tuple[Placements, ...],
    dtype: torch.dtype,
    mesh_shape: tuple[int, ...],
    coordinate: tuple[int, ...],
    links: tuple[_comm.Link, ...],
    flops: tuple[tuple[str, float], ...],
    forced: Forced | None,
) -> Decision:
    network = _comm.Network(links, dict(flops))
    sizes = {
        c: n for labels, shape in zip(inputs, shapes, strict=True) for c, n in zip(labels, shape, strict=True) if n != 1
    }
    usable = [
        c for c in dict.fromkeys("".join(inputs)) if c in sizes and all(labels.count(c) <= 1 for labels in inputs)
    ]
    options: list[list[Choice]] = []
    # A floating pending operand is resolved before the product: the step's bound is in units of its operands,
    # and a rank's summand can be far larger than their sum (summands that cancel); rounded products of the
    # summands would not be within it. Integer summands stay pending (their products add exactly, modulo 2^n).
    exact = not (dtype.is_floating_point or dtype.is_complex)
    for d in range(len(mesh_shape)):
        keep = [(_KEEP, i) for i, p in enumerate(placements) if isinstance(p[d], Partial)] if exact else []
        options.append([None, *usable, *keep])
    scored = []
    for order, choice in enumerate(itertools.product(*options)):
        labels = [c for c in choice if isinstance(c, str)]
        if len(labels) != len(set(labels)):
            continue
        plan = _assignment(choice, inputs, output, shapes, placements)
        if forced is not None and _forced_of(plan[1], output) != forced:
            continue
        scored.append(
            _score(
                choice, plan, inputs, output, shapes, placements, dtype, mesh_shape, coordinate, network, sizes, order
            )
        )
    if not scored:
        raise PlacementError(
            f"contraction {','.join(inputs)}->{output}: no placement of the step gives the result "
            f"placed as {forced} (a label it keeps for each partitioned mesh dimension, None, or 'sum' "
            "where a contracted label is partitioned)"
        )
    scored.sort(key=lambda s: s[0])
    best = scored[0][1]
    alternatives = tuple((d.placements_text(), d.seconds) for _, d in scored[1:4])
    return dataclasses.replace(best, alternatives=alternatives, forced=forced is not None)


def _assignment(
    choice: Sequence[Choice],
    inputs: tuple[str, ...],
    output: str,
    shapes: tuple[tuple[int, ...], ...],
    placements: tuple[Placements, ...],
) -> tuple[tuple[Placements, ...], Placements]:
    """The operands' placements and the result's for one assignment of the mesh dimensions."""
    operands: list[list[Placement]] = [[] for _ in inputs]
    result: list[Placement] = []
    for c in choice:
        if c is None:
            for ops in operands:
                ops.append(Replicate())
            result.append(Replicate())
        elif isinstance(c, tuple):  # operand c[1] stays pending over this dimension
            for i, ops in enumerate(operands):
                ops.append(Partial("sum") if i == c[1] else Replicate())
            result.append(Partial("sum"))
        else:
            for labels, shape, ops in zip(inputs, shapes, operands, strict=True):
                k = labels.find(c)
                ops.append(Shard(k) if k >= 0 and shape[k] != 1 else Replicate())
            result.append(Shard(output.index(c)) if c in output else Partial("sum"))
    return tuple(map(tuple, operands)), tuple(result)


def _score(
    choice: Sequence[Choice],
    plan: tuple[tuple[Placements, ...], Placements],
    inputs: tuple[str, ...],
    output: str,
    shapes: tuple[tuple[int, ...], ...],
    placements: tuple[Placements, ...],
    dtype: torch.dtype,
    mesh_shape: tuple[int, ...],
    coordinate: tuple[int, ...],
    network: _comm.Network,
    sizes: dict[str, int],
    order: int,
) -> tuple[tuple[float, int, int, int], Decision]:
    operands, result = plan
    moves = tuple(
        tuple(_comm.moves(shape, dtype, mesh_shape, before, after, coordinate, network.links))
        for shape, before, after in zip(shapes, placements, operands, strict=True)
    )
    communication = sum(m.seconds for ms in moves for m in ms)
    zero = (0,) * len(mesh_shape)
    worst = (
        moves
        if coordinate == zero
        else tuple(
            tuple(_comm.moves(shape, dtype, mesh_shape, before, after, zero, network.links))
            for shape, before, after in zip(shapes, placements, operands, strict=True)
        )
    )
    worst_bytes = sum(m.nbytes for ms in worst for m in ms)
    split = {c: mesh_shape[d] for d, c in enumerate(choice) if isinstance(c, str)}
    work = math.prod(-(-n // split[c]) if c in split else n for c, n in sizes.items())
    per_flop = 8 if dtype.is_complex else 2
    compute = per_flop * work / network.flops_per_s(dtype)
    out_shape = [sizes.get(c, 1) for c in output]
    deferred = sum(
        m.seconds
        for m in _comm.moves(out_shape, dtype, mesh_shape, result, _resolved(result, out_shape), zero, network.links)
    )
    decision = Decision(
        f"{','.join(inputs)}->{output}",
        shapes,
        placements,
        operands,
        result,
        moves,
        compute,
        communication,
        deferred,
        (),
    )
    pending = sum(isinstance(p, Partial) for p in result)
    return (decision.seconds, worst_bytes, pending, order), decision


def _resolved(result: Placements, shape: Sequence[int]) -> Placements:
    """The cheapest resolution of a pending result: each pending dimension reduce-scattered along the longest
    axis no other dimension partitions (all-reduced where none is left)."""
    out = list(result)
    for d, p in enumerate(result):
        if isinstance(p, Partial):
            taken = {q.dim for q in out if isinstance(q, Shard)}
            free = [a for a in range(len(shape)) if a not in taken and shape[a] > 1]
            out[d] = Shard(max(free, key=lambda a: shape[a])) if free else Replicate()
    return tuple(out)


def _forced_of(result: Placements, output: str) -> Forced:
    return tuple(output[p.dim] if isinstance(p, Shard) else "sum" if isinstance(p, Partial) else None for p in result)
