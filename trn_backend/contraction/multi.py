"""``multi_einsum``: many independent einsums in one call, identical ones batched into one kernel call per step.

Contractions with the same subscripts, operand shapes, dtypes and device form a group: their operands are
stacked along a new leading index Z and the planner contracts "Z" + subscripts, so Z becomes a batch index and
the group costs one bmm per binary step, under the one mode its (shared) K resolves to. Every other contraction
runs as its own einsum. Stacking copies the operands once; the results are views of the stacked result.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import cast

import torch

from .._helpers import NeuronArray, check_same_device, tensor, wrap
from .._precision import Request
from .api import contract_spec
from .front import entry_point
from .parse import Spec, parse, symbol

__all__ = ["multi_einsum"]


@entry_point("multi_einsum()")
def multi_einsum(request: Request | None, *contractions: Sequence[object]) -> list[NeuronArray]:
    """Evaluate each ``(subscripts, *operands)``; groups of identical contractions (subscripts, shapes, dtypes)
    run as one batched kernel call per step. Returns the results in input order."""
    unpacked = [_unpack(c, i) for i, c in enumerate(contractions)]
    groups: dict[tuple, list[int]] = {}
    for i, (spec, ts) in enumerate(unpacked):
        key = (spec, tuple(t.shape for t in ts), tuple(t.dtype for t in ts), ts[0].device)
        groups.setdefault(key, []).append(i)
    results: list[torch.Tensor | None] = [None] * len(contractions)
    for members in groups.values():
        outs = _run_group(request, unpacked[members[0]][0], [unpacked[i][1] for i in members])
        for i, out in zip(members, outs, strict=True):
            results[i] = out
    # every contraction is in one group, whose results fill its places
    return [wrap(r) for r in cast("list[torch.Tensor]", results)]


def _run_group(request: Request | None, spec: Spec, operands: list[tuple[torch.Tensor, ...]]) -> list[torch.Tensor]:
    """The results of one contraction on each operand tuple: alone, or all stacked along a fresh batch index."""
    if len(operands) == 1:
        return [contract_spec(request, spec, list(operands[0]))]
    z = _fresh_label(spec)
    stacked = [torch.stack(column) for column in zip(*operands, strict=True)]
    out = contract_spec(request, Spec(tuple(z + s for s in spec.inputs), z + spec.output), stacked)
    return list(out.unbind(0))


def _unpack(contraction: object, i: int) -> tuple[Spec, tuple[torch.Tensor, ...]]:
    """The parsed subscripts and operand tensors of contraction ``i``; errors name it."""
    if not isinstance(contraction, (tuple, list)) or not contraction or not isinstance(contraction[0], str):
        raise TypeError(
            f"multi_einsum() expects each contraction as a tuple (subscripts, *operands), such as "
            f"('ij,jk->ik', a, b); contraction {i} is {_describe(contraction)}"
        )
    subscripts, *arrays = contraction
    ts = tuple(tensor(x, "multi_einsum", f"operand {j} of contraction {i}") for j, x in enumerate(arrays))
    check_same_device(ts, "multi_einsum", f"the operands of contraction {i}")
    try:
        return parse(subscripts, tuple(t.shape for t in ts), "multi_einsum"), ts
    except ValueError as e:
        raise ValueError(f"{e} (contraction {i})") from None


def _describe(x: object) -> str:
    if isinstance(x, (tuple, list)):
        return "empty" if not x else f"a {type(x).__name__} starting with {type(x[0]).__name__}"
    return f"a {type(x).__name__}"


def _fresh_label(spec: Spec) -> str:
    """A label the contraction does not use, for the stacking index."""
    used = set("".join(spec.inputs))
    return next(c for c in map(symbol, itertools.count()) if c not in used)
