"""Multi-operand contractions: opt_einsum (or cotengra) picks the order, every binary step goes through the planner.

``optimize=`` takes what opt_einsum takes: an optimizer name ("auto", "greedy", "optimal", "dp", ... and the
cotengra names cotengra registers), a ``PathOptimizer`` object (cotengra's ``HyperOptimizer`` is one), an explicit
path such as ``[(0, 1), (0, 1)]`` (NumPy's ``["einsum_path", ...]`` form too), True/None for "auto", or False for
plain left-to-right pairwise order. Steps are derived once per subscripts, shapes and (hashable) optimize.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence

import numpy as np
import opt_einsum
import torch

from .. import _precision
from . import execute
from .parse import Shapes, Spec
from .plan import Plan, entry, natural_output, plan_for, result_dtype

__all__ = ["Step", "steps", "run", "program", "roundings", "shape_of", "check_optimize"]


@dataclasses.dataclass(frozen=True)
class Step:
    """One entry of the path: the operands it takes (positions, descending as they are popped) and the chain of
    one- or two-operand contractions that fold them into one, each with its labels and operand shapes."""

    positions: tuple[int, ...]
    chain: tuple[tuple[tuple[str, ...], str, Shapes], ...]


def steps(spec: Spec, shapes: Shapes, optimize: object = "auto") -> tuple[Step, ...]:
    """The contraction steps for ``spec``; cached unless ``optimize`` is an optimizer object."""
    key = check_optimize(optimize)
    if key is None:
        return _steps(spec, shapes, _path(spec, shapes, optimize))
    return _cached_steps(spec, shapes, key)


def run(spec: Spec, tensors: Sequence[torch.Tensor], optimize: object = "auto", precision: str | None = None,
        target_forward_error: float | None = None, ledger: list[Plan] | None = None) -> torch.Tensor:
    """Contract all ``tensors`` along the path, each binary step planned and executed on its own; a target in
    force is shared among all the expression's rounding steps. ``ledger`` collects the plans run."""
    path_steps = program(spec, tuple(t.shape for t in tensors), optimize)
    forward, relative = _precision.targets(precision, target_forward_error)
    n = 1 if forward is None and relative is None else roundings(
        path_steps, tuple(t.dtype for t in tensors), any(type(t) in execute.EXECUTORS for t in tensors))
    terms = list(tensors)
    for step in path_steps:
        ops = [terms.pop(p) for p in step.positions][::-1]
        acc = ops[0]
        for (inputs, output, _), more in zip(step.chain, [()] if len(ops) == 1 else [(t,) for t in ops[1:]],
                                             strict=True):
            operands = [acc, *more]
            plan = plan_for(inputs, output, tuple(t.shape for t in operands), tuple(t.dtype for t in operands),
                            acc.device, precision, target_forward_error, n)
            if ledger is not None:
                ledger.append(plan)
            acc = execute.execute(plan, operands)
        terms.append(acc)
    return terms[0]


def program(spec: Spec, shapes: Shapes, optimize: object = "auto") -> tuple[Step, ...]:
    """The steps of a contraction: the path's (``steps``), or the one step of one or two operands."""
    if len(shapes) > 2:
        return steps(spec, shapes, optimize)
    return (Step(tuple(range(len(shapes)))[::-1], ((spec.inputs, spec.output, tuple(map(tuple, shapes))),)),)


def roundings(program: Sequence[Step], dtypes: tuple[torch.dtype, ...], sharded: bool = False) -> int:
    """The rounding steps of a whole expression (kernel calls and pre-sums of inexact dtypes): what a target
    is shared among (``_precision.share``). ``sharded``: operands of a registered executor (DTensor), whose
    steps may each end in a sum over ranks and its rounding back to the dtype, two more each."""
    dtype = result_dtype(dtypes)
    counts = [entry(inputs, output, shapes, (dtype,) * len(inputs)).base.roundings
              for step in program for inputs, output, shapes in step.chain]
    return sum(counts) + (2 * sum(c > 0 for c in counts) if sharded else 0)


def check_optimize(optimize: object, func: str = "einsum") -> object:
    """``optimize`` validated (an error names ``func``), as a hashable key for the step cache; None for
    optimizer objects (they keep state). Front doors check it even when there is no path to choose."""
    if optimize is None or optimize is True:
        return "auto"
    if optimize is False:
        return optimize
    if isinstance(optimize, str):
        if optimize not in opt_einsum.paths._PATH_OPTIONS:
            raise ValueError(f"{func}(): unknown optimize={optimize!r}; known: "
                             f"{', '.join(sorted(opt_einsum.paths._PATH_OPTIONS))}")
        return optimize
    if isinstance(optimize, opt_einsum.paths.PathOptimizer):
        return None
    if isinstance(optimize, (list, tuple)):
        path = list(optimize[1:] if optimize and optimize[0] == "einsum_path" else optimize)
        if all(isinstance(step, (list, tuple)) and all(
                isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in step) for step in path):
            return tuple(tuple(int(i) for i in step) for step in path)
    raise TypeError(f"{func}(): optimize must be an optimizer name, a PathOptimizer, an explicit path such as "
                    f"[(0, 1), (0, 1)], True or False; got {optimize!r}")


@functools.lru_cache(maxsize=1024)
def _cached_steps(spec: Spec, shapes: Shapes, key: object) -> tuple[Step, ...]:
    return _steps(spec, shapes, _path(spec, shapes, key))


def _path(spec: Spec, shapes: Shapes, optimize: object) -> tuple[tuple[int, ...], ...]:
    n = len(spec.inputs)
    if optimize is False:
        return ((0, 1),) * (n - 1)
    if isinstance(optimize, tuple):
        return optimize
    inputs = [frozenset(t) for t in spec.inputs]
    output = frozenset(spec.output)
    sizes = label_sizes(zip(spec.inputs, shapes, strict=True))
    if isinstance(optimize, opt_einsum.paths.PathOptimizer):
        return tuple(tuple(s) for s in optimize(inputs, output, sizes, None))
    finder = opt_einsum.paths.get_path_fn(optimize)  # a name check_optimize has checked
    return tuple(tuple(s) for s in finder(inputs, output, sizes, None))


def _steps(spec: Spec, shapes: Shapes, path: tuple[tuple[int, ...], ...]) -> tuple[Step, ...]:
    """Follow ``path`` symbolically: labels and shapes of every intermediate, and each binary step's output
    order (the final output at the end; elsewhere the order the kernel produces, so no permute is needed)."""
    terms = list(zip(spec.inputs, (tuple(int(d) for d in s) for s in shapes), strict=True))
    result = []
    for number, step in enumerate(path):
        if not step or len(set(step)) != len(step) or not all(0 <= p < len(terms) for p in step):
            raise ValueError(f"einsum(): path step {number} {tuple(step)} must name distinct operands among the "
                             f"{len(terms)} left at that point")
        positions = tuple(sorted(step, reverse=True))
        taken = [terms.pop(p) for p in positions][::-1]
        last = not terms  # this step consumes every operand left: it produces the output
        needed = "".join(t for t, _ in terms) + spec.output
        chain = []
        acc = taken[0]
        if len(taken) == 1:
            out = spec.output if last else "".join(dict.fromkeys(c for c in acc[0] if c in needed))
            chain.append(((acc[0],), out, (acc[1],)))
            acc = (out, shape_of(out, [acc]))
        for i, nxt in enumerate(taken[1:], start=2):
            keep = needed + "".join(t for t, _ in taken[i:])
            pair = (acc[0], nxt[0])
            if last and i == len(taken):
                out = spec.output
            else:
                out = natural_output(pair, "".join(dict.fromkeys(c for c in acc[0] + nxt[0] if c in keep)),
                                     (acc[1], nxt[1]))
            chain.append((pair, out, (acc[1], nxt[1])))
            acc = (out, shape_of(out, [acc, nxt]))
        terms.append(acc)
        result.append(Step(positions, tuple(chain)))
    if len(terms) != 1:
        raise ValueError(f"einsum(): the path leaves {len(terms)} operands uncontracted; it must end with one")
    return tuple(result)


def label_sizes(terms) -> dict[str, int]:
    """The size of each label over (labels, shape) pairs; a size-1 dimension broadcasts against any other."""
    sizes: dict[str, int] = {}
    for labels, shape in terms:
        for c, d in zip(labels, shape, strict=True):
            sizes[c] = int(d) if sizes.get(c, 1) == 1 else sizes[c]
    return sizes


def shape_of(labels: str, terms: list[tuple[str, tuple[int, ...]]]) -> tuple[int, ...]:
    """The shape of the result with ``labels`` of contracting ``terms``."""
    sizes = label_sizes(terms)
    return tuple(sizes[c] for c in labels)
