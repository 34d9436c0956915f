"""Contractions larger than memory: ``contract(..., memory_limit=...)`` sliced with cotengra.

cotengra slices indices until no intermediate exceeds ``memory_limit`` elements; the contraction then is a sum
over the slices, each one an ordinary contraction of the operands indexed at one value of each sliced index. That
is a ``program.sliced`` program, compiled and run like every other (``compiler``, ``runner``: the slices' sum is
one of its roundings, and the runner walks the slices). Over the ranks of a process group,
``trn_backend.distributed._slicing`` (registered in ``OVER_RANKS`` by the package: this layer never imports
torch.distributed) decides the tree on one rank, broadcasts it and runs each rank's share of the slices.
Output indices are sliced only when the caller's tree or ``HyperOptimizer`` slices them; each slice then adds to
its own part of the output. Slices are not contracted several at once (a sliced index kept as a batch index):
that would multiply the intermediates past the limit cotengra sliced them to.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import opt_einsum
import torch

from .._precision import Request
from . import program as programs
from .compiler import compile
from .parse import Spec, parse
from .plan import result_dtype
from .program import label_sizes
from .runner import run, tqdm_bar

__all__ = ["contract", "slicing", "OVER_RANKS", "memory_limit_of"]

Path = tuple[tuple[int, ...], ...]

# The sliced contraction over the ranks of a process group: the trn_backend package registers
# trn_backend.distributed._slicing's function here (imported on its first call). Called as f(request, spec,
# tensors, limit, optimize, progress, out) after the checks every sliced contraction makes, it returns the
# result, or None where no operand is sharded and no process group runs (the slices then run here).
OVER_RANKS: list[Callable[..., torch.Tensor | None]] = []


def contract(
    request: Request | None,
    subscripts: object,
    ts: Sequence[torch.Tensor],
    *,
    memory_limit: int | str,
    optimize: object = "auto",
    progress: bool | None = None,
    out: torch.dtype | None = None,
) -> torch.Tensor:
    """The contraction of ``ts`` with no intermediate above ``memory_limit`` elements ("max_input": the largest
    operand), as a sum over cotengra's slices. ``optimize``: what opt_einsum takes, a
    ``cotengra.HyperOptimizer``, or a ``cotengra.ContractionTree`` (its path and sliced indices are used as they
    are, sliced further if the limit needs it). ``progress``: None shows a tqdm bar on stderr when the slices take
    long, False never, True always. ``out``: the dtype to deliver the result in."""
    if not isinstance(subscripts, str):
        raise TypeError("contract(memory_limit=...) needs the subscripts as a string, such as 'ij,jk->ik'")
    if progress is not None and not isinstance(progress, bool):
        raise TypeError(f"contract(): progress must be True, False or None (automatic), got {progress!r}")
    if progress and tqdm_bar() is None:
        raise ImportError("contract(progress=True) shows its bar with tqdm, which is not installed: pip install tqdm")
    shapes = tuple(tuple(t.shape) for t in ts)
    spec = parse(subscripts, shapes, "contract")
    dtypes = tuple(t.dtype for t in ts)
    result_dtype(dtypes, "contract")
    limit = memory_limit_of(memory_limit, shapes)
    for over_ranks in OVER_RANKS:
        found = over_ranks(request, spec, list(ts), limit, optimize, progress, out)
        if found is not None:
            return found
    path, indices = slicing(spec, shapes, limit, optimize)
    program = programs.sliced(spec, shapes, path, indices)
    return run(compile(program, request, dtypes, ts[0].device, out=out), list(ts), progress=progress)


def memory_limit_of(memory_limit: object, shapes: Sequence[Sequence[int]]) -> object:
    """``memory_limit`` as a number of elements ("max_input": the largest operand's)."""
    return max(math.prod(s) for s in shapes) if memory_limit == "max_input" else memory_limit


def slicing(
    spec: Spec, shapes: Sequence[tuple[int, ...]], memory_limit: object, optimize: object = "auto"
) -> tuple[Path, tuple[str, ...]]:
    """cotengra's choice for this contraction: the path of the sliced network and the sliced indices, such
    that no intermediate exceeds ``memory_limit`` elements (an error when slicing cannot get there)."""
    import cotengra as ctg

    if isinstance(memory_limit, bool) or not isinstance(memory_limit, int) or memory_limit < 1:
        raise ValueError(
            f"contract(): memory_limit must be a positive number of elements or 'max_input', got {memory_limit!r}"
        )
    sizes = label_sizes(zip(spec.inputs, shapes, strict=True))
    inputs = [tuple(s) for s in spec.inputs]
    if isinstance(optimize, ctg.ContractionTree):
        tree = _rebuilt(optimize, spec, sizes)
    elif isinstance(optimize, ctg.HyperOptimizer):
        tree = optimize.search(inputs, tuple(spec.output), sizes)
    else:
        path = opt_einsum.contract_path(
            ",".join(spec.inputs) + "->" + spec.output, *shapes, shapes=True, optimize=optimize
        )[0]
        tree = ctg.ContractionTree.from_path(inputs, tuple(spec.output), sizes, path=path)
    if tree.max_size() > memory_limit and len(inputs) > 1:  # one operand: its only intermediate is the output
        try:
            tree = tree.slice(target_size=memory_limit, allow_outer=False)
        except (RuntimeError, KeyError):  # cotengra ran out of contracted indices to slice (a KeyError when
            pass  # the tree came with sliced indices)
    if tree.max_size() > memory_limit:
        raise ValueError(
            f"contract(): no slicing of contracted indices keeps every intermediate within "
            f"memory_limit={memory_limit} elements (the smallest reaches {tree.max_size()}; the output "
            f"has {math.prod(sizes[c] for c in spec.output)})"
        )
    return tuple(map(tuple, tree.get_path())), tuple(tree.sliced_inds)


def _rebuilt(given, spec: Spec, sizes: dict[str, int]):
    """The caller's ContractionTree (its path and sliced indices) for these operand sizes: a rank's blocks may be
    smaller than the shapes the tree was built for."""
    import cotengra as ctg

    inputs = tuple(tuple(s) for s in spec.inputs)
    if tuple(map(tuple, given.inputs)) != inputs or tuple(given.output) != tuple(spec.output):
        raise ValueError(
            f"contract(): optimize= is a cotengra ContractionTree of another contraction (inputs "
            f"{given.inputs}, output {given.output}), not of {spec.subscripts!r}"
        )
    if any(info.project is not None for info in given.sliced_inds.values()):
        raise ValueError(
            "contract(): optimize= is a ContractionTree with projected indices (a single value, not "
            "a sum over slices); pass the tree before remove_ind(..., project=...)"
        )
    tree = ctg.ContractionTree.from_path(inputs, tuple(spec.output), sizes, path=given.get_path())
    for ind in given.sliced_inds:
        tree = tree.remove_ind(ind)
    return tree
