"""Contractions larger than memory: ``contract(..., memory_limit=...)`` sliced with cotengra, slices over ranks.

cotengra slices contracted indices until no intermediate exceeds ``memory_limit`` elements; the contraction then
is a sum over the slices, each one an ordinary contraction (every step through the planner) of the operands
indexed at one value of each sliced index. The tree is decided once, on the mesh's first rank, and broadcast,
so every rank sums the same slices (cotengra's search is randomized). Operands that are whole on every rank
spread the slices over the ranks and sum them as a pending sum; sharded operands keep their partition (each rank
contracts every slice of its own blocks, see ``_contract``). Without sharded operands or a process group, the
slices run here and the result is a plain array.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import opt_einsum
import torch
import torch.distributed as dist
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.tensor import DTensor

from .. import _dtypes
from .._array import NeuronArray, wrap
from ..contraction.api import contract_spec
from ..contraction.parse import Spec, parse
from ..contraction.plan import result_dtype
from . import _contract
from ._mesh import default_mesh

__all__ = ["contract", "slicing"]

Path = tuple[tuple[int, ...], ...]


def contract(subscripts: object, *operands: NeuronArray, memory_limit: int | str,
             optimize: object = "auto") -> NeuronArray:
    """The contraction of ``operands`` with no intermediate above ``memory_limit`` elements ("max_input": the
    largest operand), as a sum over cotengra's slices (see the module docstring)."""
    if not isinstance(subscripts, str):
        raise TypeError("contract(memory_limit=...) needs the subscripts as a string, such as 'ij,jk->ik'")
    ts = [x._t for x in operands]
    spec = parse(subscripts, tuple(t.shape for t in ts), "contract")
    dtype = result_dtype(tuple(t.dtype for t in ts), "contract")
    shape = _output_shape(spec, ts)
    limit = max(math.prod(t.shape) for t in ts) if memory_limit == "max_input" else memory_limit
    if not any(isinstance(t, DTensor) for t in ts) and not dist.is_initialized():
        path, sliced = slicing(spec, [tuple(t.shape) for t in ts], limit, optimize)
        return wrap(_sum_of_slices(spec, [_dtypes.cast(t, dtype) for t in ts], path, sliced, None))
    mesh = next((t.device_mesh for t in ts if isinstance(t, DTensor)), None) or default_mesh()
    dts, label = _contract.localize(ts, spec.inputs, dtype, subscripts, mesh)
    blocks = [_dtypes.cast(t.to_local(), dtype) for t in dts]
    # whole operands on every rank share the slices out; partitioned or pending ones each contract their own
    spread = label is None and not any(t.placements[0].is_partial() for t in dts)
    path, sliced = _decided(slicing(spec, [tuple(b.shape) for b in blocks], limit, optimize), mesh)
    out = _sum_of_slices(spec, blocks, path, sliced, mesh if spread else None)
    return wrap(_contract.finish(out, dts, label, spec.output, shape, summand=spread))


def slicing(spec: Spec, shapes: Sequence[tuple[int, ...]], memory_limit: object,
            optimize: object = "auto") -> tuple[Path, tuple[str, ...]]:
    """cotengra's choice for this contraction: the path of the sliced network and the sliced indices, such
    that no intermediate exceeds ``memory_limit`` elements (an error when slicing cannot get there)."""
    import cotengra as ctg

    if isinstance(memory_limit, bool) or not isinstance(memory_limit, int) or memory_limit < 1:
        raise ValueError(f"contract(): memory_limit must be a positive number of elements or 'max_input', got "
                         f"{memory_limit!r}")
    sizes = _sizes(spec, shapes)
    inputs = [tuple(s) for s in spec.inputs]
    if isinstance(optimize, ctg.HyperOptimizer):
        tree = optimize.search(inputs, tuple(spec.output), sizes)
    else:
        path = opt_einsum.contract_path(",".join(spec.inputs) + "->" + spec.output, *shapes, shapes=True,
                                        optimize=optimize)[0]
        tree = ctg.ContractionTree.from_path(inputs, tuple(spec.output), sizes, path=path)
    if tree.max_size() > memory_limit:
        try:
            tree = tree.slice(target_size=memory_limit, allow_outer=False)
        except RuntimeError:  # cotengra ran out of contracted indices to slice
            pass
    if tree.max_size() > memory_limit:
        raise ValueError(f"contract(): no slicing of contracted indices keeps every intermediate within "
                         f"memory_limit={memory_limit} elements (the smallest reaches {tree.max_size()}; the output "
                         f"has {math.prod(sizes[c] for c in spec.output)})")
    return tuple(map(tuple, tree.get_path())), tuple(tree.sliced_inds)


def _decided(choice: tuple[Path, tuple[str, ...]], mesh: DeviceMesh | None) -> tuple[Path, tuple[str, ...]]:
    """The first rank's choice, on every rank (one broadcast)."""
    if mesh is None or mesh.size() == 1:
        return choice
    box = [choice]
    group = mesh.get_group()
    dist.broadcast_object_list(box, src=dist.get_global_rank(group, 0), group=group)
    return box[0]


def _sum_of_slices(spec: Spec, ts: list[torch.Tensor], path: Path, sliced: tuple[str, ...],
                   mesh: DeviceMesh | None) -> torch.Tensor:
    """The sum over this rank's slices (all of them, or every size-th from its rank when spread over a mesh)."""
    sizes = _sizes(spec, [t.shape for t in ts])
    values = list(itertools.product(*(range(sizes[c]) for c in sliced)))
    mine = values[mesh.get_local_rank()::mesh.size()] if mesh is not None else values
    inner = Spec(tuple(_drop(labels, sliced) for labels in spec.inputs), spec.output)
    total = torch.zeros([sizes[c] for c in spec.output], dtype=ts[0].dtype, device=ts[0].device)
    for value in mine:
        at = dict(zip(sliced, value, strict=True))
        # an operand broadcasting a sliced index from size 1 takes its one entry in every slice
        parts = [t[tuple(at[c] * (d != 1) if c in at else slice(None) for c, d in zip(labels, t.shape,
                                                                                      strict=True))]
                 for labels, t in zip(spec.inputs, ts, strict=True)]
        out = contract_spec(inner, parts, path if len(parts) > 2 else "auto")
        total = _add(total, out)
    return total


def _add(total: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """total + out in the result dtype (modular for unsigned types, logical or for bool)."""
    if total.dtype is torch.bool:
        return total | out
    return _dtypes.restore(_dtypes.compute(total) + _dtypes.compute(out), total.dtype)


def _drop(labels: str, sliced: tuple[str, ...]) -> str:
    return "".join(c for c in labels if c not in sliced)


def _sizes(spec: Spec, shapes: Sequence[Sequence[int]]) -> dict[str, int]:
    """The size of each index (a size-1 dimension broadcasts against any other)."""
    sizes: dict[str, int] = {}
    for labels, shape in zip(spec.inputs, shapes, strict=True):
        for c, d in zip(labels, shape, strict=True):
            sizes[c] = int(d) if sizes.get(c, 1) == 1 else sizes[c]
    return sizes


def _output_shape(spec: Spec, ts: list[torch.Tensor]) -> tuple[int, ...]:
    sizes = _sizes(spec, [t.shape for t in ts])
    return tuple(sizes[c] for c in spec.output)
