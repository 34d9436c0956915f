"""Multi-operand contractions: opt_einsum (or cotengra) picks the order, every binary step goes through the planner.

``optimize=`` takes what opt_einsum takes: an optimizer name ("auto", "greedy", "optimal", "dp", ... and the
cotengra names cotengra registers), a ``PathOptimizer`` object (cotengra's ``HyperOptimizer`` is one), an explicit
path such as ``[(0, 1), (0, 1)]`` (NumPy's ``["einsum_path", ...]`` form too), True/None for "auto", or False for
plain left-to-right pairwise order. The program (``program.Program``) is built once per subscripts, shapes and
(hashable) optimize.
"""

from __future__ import annotations

import functools

import numpy as np
import opt_einsum

from .parse import Shapes, Spec
from .program import Program, build, label_sizes, single

__all__ = ["steps", "program", "check_optimize", "OPTIMIZERS"]

# opt_einsum's optimizer names (cotengra adds its own when imported: the same dict)
OPTIMIZERS = opt_einsum.paths._PATH_OPTIONS


def steps(spec: Spec, shapes: Shapes, optimize: object = "auto") -> Program:
    """The program of ``spec`` along the path ``optimize`` gives; cached unless ``optimize`` is an optimizer
    object."""
    key = check_optimize(optimize)
    if key is None:
        return build(spec, shapes, _path(spec, shapes, optimize))
    return _cached_steps(spec, tuple(tuple(s) for s in shapes), key)


def program(spec: Spec, shapes: Shapes, optimize: object = "auto") -> Program:
    """The program of a contraction: the path's (``steps``), or the one step of one or two operands."""
    if len(shapes) > 2:
        return steps(spec, shapes, optimize)
    return _single(spec, tuple(tuple(s) for s in shapes))


@functools.lru_cache(maxsize=4096)
def _single(spec: Spec, shapes: Shapes) -> Program:
    return single(spec, shapes)


def check_optimize(optimize: object, func: str = "einsum") -> object:
    """``optimize`` validated (an error names ``func``), as a hashable key for the step cache; None for
    optimizer objects (they keep state). Front doors check it even when there is no path to choose."""
    if optimize is None or optimize is True:
        return "auto"
    if optimize is False:
        return optimize
    if isinstance(optimize, str):
        if optimize not in OPTIMIZERS:
            raise ValueError(f"{func}(): unknown optimize={optimize!r}; known: {', '.join(sorted(OPTIMIZERS))}")
        return optimize
    if isinstance(optimize, opt_einsum.paths.PathOptimizer):
        return None
    if isinstance(optimize, (list, tuple)):
        path = list(optimize[1:] if optimize and optimize[0] == "einsum_path" else optimize)
        if all(
            isinstance(step, (list, tuple))
            and all(isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in step)
            for step in path
        ):
            return tuple(tuple(int(i) for i in step) for step in path)
    raise TypeError(
        f"{func}(): optimize must be an optimizer name, a PathOptimizer, an explicit path such as "
        f"[(0, 1), (0, 1)], True or False; got {optimize!r}"
    )


@functools.lru_cache(maxsize=1024)
def _cached_steps(spec: Spec, shapes: Shapes, key: object) -> Program:
    return build(spec, shapes, _path(spec, shapes, key))


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
