"""``explain``: the path and, per binary step, what the planner will run and what implementation runs it (torch,
or an NKI kernel with its modelled trn2 time), without running it."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from .. import _device, _dtypes, _precision, kernels
from .._helpers import NeuronArray
from ..kernels import reference
from . import paths
from .parse import ELLIPSIS_LABELS, Shapes, parse
from .plan import Plan, plan_for, result_dtype

__all__ = ["Explanation", "explain", "error_bound"]


@dataclasses.dataclass(frozen=True)
class Explanation:
    """The steps of one contraction: ``str()`` gives the table, the fields give the numbers."""

    subscripts: str
    shapes: Shapes
    dtype: np.dtype  # the result's, as x.dtype spells it
    path: tuple[tuple[int, ...], ...]
    steps: tuple[Plan, ...]
    # per step: what runs it ("torch.matmul", "nki.matmul[fast]", "-" without a kernel), and for steps with an NKI
    # kernel the cost model's estimate on trn2 (kernels.nki.cost.Estimate: .seconds, .program_instructions,
    # .compile_seconds, ...); a step whose first call runs torch until the kernel is compiled has both
    implementations: tuple[str, ...] = ()
    modelled: tuple[object, ...] = ()
    # what a target ranked the modes by ("cpu calibration, benchmarks <date>", "trn2 cost model", "pass count
    # (no calibration for mps)"); None where no target chose them (an explicit mode, or the device default)
    cost_basis: str | None = None

    @property
    def flops(self) -> int:
        """Kernel FLOPs of every step, pre-sums that run as kernels (modes other than native) included."""
        return sum(p.flops for p in self.steps) + sum(s.flops for s in self._kernel_sums())

    def _kernel_sums(self) -> list[Plan]:
        """The pre-sums that run as a kernel call (native sums with torch's sum instead)."""
        return [s for p in self.steps for s in p.sums
                if s is not None and s.resolved is not None and s.resolved.mode != "native"]

    @property
    def largest_intermediate(self) -> int:
        """Elements of the largest step result (the output included)."""
        return max((p.size for p in self.steps), default=0)

    @property
    def bound(self) -> float | None:
        """The bound of the whole expression, in units of the same expression on |operands|: every step's
        (kernel and pre-sums) composed (``_precision.compose``; docs/precision.md, "Whole expressions"). 0 for
        exact (integer) contractions, None where a step's mode publishes no bound."""
        return _precision.compose(p.bound for p in self.steps)

    @property
    def roundings(self) -> int:
        """The rounding steps the bound composes (kernel calls and pre-sums of inexact dtypes)."""
        return sum(p.roundings for p in self.steps)

    @property
    def kernel_calls(self) -> int:
        return sum(1 if p.loop is None else p.loop[1] for p in self.steps if p.kernel is not None) + len(
            self._kernel_sums())

    def __str__(self) -> str:
        header = ("step", "subscripts", "kernel", "(B, M, K, N)", "FLOPs", "largest", "mode", "bound", "trn2 model")
        rows = []
        for i, (p, impl, estimate) in enumerate(zip(self.steps, self.implementations, self.modelled, strict=True),
                                                start=1):
            # each pre-sum (an index of one operand only, summed under the mode) is a row of its own
            for letter, s in zip("ab", [s for s in p.sums if s is not None], strict=False):  # at most two
                rows.append((f"{i}{letter}", _readable(s.subscripts), _sum_implementation(s), str(s.bmkn),
                             f"{2 * s.bmkn[1] * s.bmkn[2]:.3g}", f"{s.bmkn[1]:,}", _mode_text(s), _bound_text(s),
                             "-"))
            if p.kernel is not None or not p.sums:
                if estimate is not None and not impl.startswith("nki."):  # a first call, before the compile
                    impl = f"{impl} (first call)"
                rows.append((str(i), _readable(p.subscripts), impl, str(p.bmkn) if p.kernel else "-",
                             f"{p.flops:.3g}", f"{p.size:,}", _mode_text(p), _bound_text(p),
                             _modelled_text(p, estimate)))
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
        lines = [f"contraction {self.subscripts!r}  operands {', '.join(map(_shape_text, self.shapes))}  "
                 f"dtype {_dtypes.name(self.dtype)}",
                 f"path: {list(self.path)}",
                 "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
        lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
        if self.cost_basis is not None:
            lines.append(f"modes: the cheapest meeting the target, cost basis: {self.cost_basis}")
        lines.append(f"total: {self.kernel_calls} kernel call(s), {self.flops:.3g} FLOPs, "
                     f"largest intermediate {self.largest_intermediate:,} elements")
        bound = self.bound
        if self.roundings:
            lines.append(f"whole expression: bound {'-' if bound is None else f'{bound:.2g}'} of the expression "
                         f"on |operands|, {self.roundings} rounding step(s) composed")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"Explanation({self.subscripts!r}, steps={len(self.steps)}, flops={self.flops:.3g}, "
                f"largest_intermediate={self.largest_intermediate})")


def explain(subscripts: str, /, *operands_or_shapes: object, optimize: object = "auto",
            precision: str | None = None, target_forward_error: float | None = None,
            dtype: torch.dtype | None = None) -> Explanation:
    """What ``einsum(subscripts, *operands, optimize=..., precision=...)`` would run: path, per-step plans,
    totals. Operands may be arrays (NeuronArray, NumPy, torch) or shapes; shapes use ``dtype`` (default float)."""
    shapes, dtypes, device = _describe(operands_or_shapes, dtype)
    spec = parse(subscripts, shapes, "explain")
    _precision.scope(precision, target_forward_error, None, "explain()")  # a wrong choice raises here
    paths.check_optimize(optimize, "explain")
    program = paths.program(spec, shapes, optimize)
    out_dtype = result_dtype(dtypes, "explain")
    # a target is shared among the expression's rounding steps, as einsum shares it
    roundings = 1 if _precision.targets(precision, target_forward_error) == (None, None) else program.roundings(
        (out_dtype,))
    try:
        plans = tuple(plan_for(s.inputs, s.output, s.shapes, (out_dtype,) * len(s.inputs), device, precision,
                               target_forward_error, roundings) for s in program.steps)
    except _precision.PrecisionError as e:  # a target no mode reaches for some step's K
        raise e.named("explain()") from e.__cause__
    implementations = tuple(_implementation(p, device) for p in plans)
    # the modelled kernel of every step that runs one once compiled (a first call may run torch meanwhile)
    compiled = tuple(_implementation(p, device, compiled=True) for p in plans)
    return Explanation(subscripts, shapes, _dtypes.PUBLIC[out_dtype], program.path, plans, implementations,
                       tuple(_estimate(p, impl) for p, impl in zip(plans, compiled, strict=True)),
                       _cost_basis(out_dtype, device, precision, target_forward_error))


def error_bound(mode: str, dtype: object, K: int | str, /, *shapes: object, ranks: int = 1,
                optimize: object = "auto", **params: Any) -> float | None:
    """The published bound of ``mode`` (with its ``params``) for results of ``dtype``, in units of the absolute
    value: for one step of contracted length ``K`` (units of ``|A||B|``, output rounding included), or, with
    subscripts and operand shapes in place of K (``error_bound("dd", xp.float32, "ij,jk->ik", (8, 64),
    (64, 8))``), for the whole expression along ``optimize``'s path, in units of the expression on ``|operands|``
    (``Explanation.bound``). ``ranks``: the result a pending sum over that many ranks of a sharded contraction.
    None where no bound is published (native bf16/fp16); 0 for exact (integer) contractions."""
    if not isinstance(K, str):
        if shapes:
            raise TypeError("error_bound(): operand shapes go with subscripts, not with a contracted length K")
        return _precision.error_bound(mode, dtype, K, ranks=ranks, **params)
    with _precision.precision(mode, **params):
        explanation = explain(K, *shapes, optimize=optimize, dtype=dtype)
    bound = explanation.bound
    if ranks == 1 or bound is None or not explanation.roundings:
        return bound
    # the partial results of the ranks are summed as the sharded engine sums them: see _precision.error_bound
    return _precision.compose([bound, _precision.error_bound(mode, dtype, 0, ranks=ranks, **params)])


def _cost_basis(dtype: torch.dtype, device: torch.device, precision: str | None,
                target_forward_error: float | None) -> str | None:
    """What the modes were ranked by, where a target (per call or of the innermost block) chose them."""
    setting = _precision.active_setting()
    chosen_by_target = target_forward_error is not None or (
        precision is None and setting is not None and setting.mode is None)
    if not chosen_by_target or not (dtype.is_floating_point or dtype.is_complex):
        return None
    return _precision.cost_basis(dtype, device)


def _implementation(p: Plan, device: torch.device, compiled: bool | None = None) -> str:
    """What the kernel layer runs this step on (its routing rule, data aside; ``compiled``: see
    ``kernels.implementation``)."""
    if p.kernel is None:
        return "-"
    if p.loop is None:
        return kernels.implementation(p.kernel, p.resolved.mode, p.dtype, device, p.bmkn, p.resolved.kwargs,
                                      compiled)
    calls = p.loop[1]  # one call per entry of the loop's axis, each of the rest of the batch
    each = (p.bmkn[0] // calls, *p.bmkn[1:])
    return f"{kernels.implementation(p.kernel, p.resolved.mode, p.dtype, device, each, p.resolved.kwargs, compiled)}" \
           f" x{calls}"


def _estimate(p: Plan, implementation: str) -> object:
    if not implementation.startswith("nki."):
        return None
    from ..kernels.nki import cost

    return cost.modelled(p.kernel, cost.runs_as(p.resolved.mode), p.bmkn, float64=p.dtype is torch.float64,
                         slices=p.resolved.kwargs.get("slices"))


def _describe(operands: Sequence[object], dtype: torch.dtype | None
              ) -> tuple[Shapes, tuple[torch.dtype, ...], torch.device]:
    """Shapes, dtypes and device of arrays or shapes (shapes take ``dtype`` and the default device)."""
    default = _dtypes.to_dtype(dtype, "explain()") if dtype is not None else _dtypes.default_float()
    shapes, dtypes, device = [], [], _device.default_device()
    for i, x in enumerate(operands):
        if isinstance(x, (NeuronArray, torch.Tensor)):
            t = x._t if isinstance(x, NeuronArray) else x
            shapes.append(tuple(t.shape))
            dtypes.append(_supported(t.dtype, i))
            device = t.device
        elif isinstance(x, np.ndarray):
            shapes.append(x.shape)
            dtypes.append(_supported(_numpy_dtype(x.dtype, i), i))
        elif isinstance(x, Sequence) and all(isinstance(d, (int, np.integer)) and d >= 0 for d in x):
            shapes.append(tuple(int(d) for d in x))
            dtypes.append(default)
        else:
            raise TypeError(f"explain(): operand {i} must be an array or a shape (a tuple of sizes), got {x!r}")
    return tuple(shapes), tuple(dtypes), device


def _numpy_dtype(dtype: np.dtype, i: int) -> torch.dtype:
    try:
        return _dtypes.to_dtype(dtype)
    except TypeError:
        raise TypeError(f"explain(): operand {i} has NumPy dtype {dtype}, which trn_backend does not support; "
                        f"supported: {', '.join(_dtypes.NAMES.values())}") from None


def _supported(dtype: torch.dtype, i: int) -> torch.dtype:
    """A dtype of the namespace; others (float16, bfloat16, ...) are a TypeError naming the operand."""
    if dtype not in _dtypes.ALL:
        raise TypeError(f"explain(): operand {i} has dtype {_dtypes.name(dtype)}, which trn_backend does not "
                        f"support; supported: {', '.join(_dtypes.NAMES.values())}")
    return dtype


def _mode_text(p: Plan) -> str:
    """The mode as a user would write it (``ozaki(slices=4)``); a relative target shows where checks start."""
    r = p.resolved
    if r is None:
        return "-"
    return r.label if r.target_relative_error is None else f"{r.label}, checked to rel {r.target_relative_error:g}"


def _modelled_text(p: Plan, estimate) -> str:
    """An NKI step's modelled trn2 time and its Tensor Engine passes (bf16 passes; native runs one fp32 pass)."""
    if estimate is None:
        return "-"
    slices = p.resolved.kwargs.get("slices") or reference.ozaki_default_slices(p.dtype)
    passes = _precision.MODES[p.resolved.mode].passes(slices)
    work = "one fp32 pass" if passes is None else f"{passes} bf16 pass{'es' if passes > 1 else ''}"
    from ..kernels.nki import cost

    return (f"{estimate.seconds * 1e3:.3g} ms, {work}, {estimate.program_instructions:,} instructions "
            f"(compile ~{cost.format_seconds(estimate.compile_seconds)})")


def _bound_text(p: Plan) -> str:
    return "-" if p.resolved is None or p.resolved.bound is None else f"{p.resolved.bound:.2g}"


def _sum_implementation(p: Plan) -> str:
    """A pre-sum runs torch's sum under native, else the mode's matmul with a vector of ones."""
    if p.resolved.mode == "native":
        return "torch.sum"
    return kernels.implementation("matmul", p.resolved.mode, p.dtype, _device.default_device(), p.bmkn,
                                  p.resolved.kwargs)


# the ellipsis labels that do not print, shown as '#' (the first ten are digits, which print)
_ELLIPSIS_MARKS = frozenset(c for c in ELLIPSIS_LABELS if not c.isprintable())


def _readable(subscripts: str) -> str:
    """Subscripts fit to print: an ellipsis label that does not print as '#', any other character that does
    not (opt_einsum generates spaces such as U+2003, and surrogates) as its escape."""
    return "".join(c if c.isprintable() else "#" if c in _ELLIPSIS_MARKS else ascii(c)[1:-1] for c in subscripts)


def _shape_text(shape: tuple[int, ...]) -> str:
    return "x".join(map(str, shape)) if shape else "scalar"

