"""``explain``: the path and, per rounding of the call, what the planner will run and what implementation runs it
(torch, or an NKI kernel with its modelled trn2 time), without running it. ``device="neuron"`` previews, from any
machine, the plan a Neuron device runs (the same compiler and the kernel layer's own routing rule, for a device of
that type with the NKI toolchain)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, cast

import numpy as np
import opt_einsum
import torch

from .. import _device, _dtypes, _precision, kernels
from .._helpers import NeuronArray
from ..kernels import reference
from . import paths
from . import program as programs
from .api import ranks_of
from .compiler import Compiled, Rounding, compile, readable
from .parse import Shapes, parse
from .plan import Plan
from .program import shape_of
from .slicing import memory_limit_of, slicing

__all__ = ["Explanation", "explain", "error_bound", "PLACEMENTS"]

# Per tensor type of sharded operands (registered by trn_backend.distributed: DTensor), what places each step of a
# program on the mesh: placements(program, plans, tensors) -> one decision per step (str() is its line).
PLACEMENTS: dict[type, Any] = {}

_ROUTES = ("trn", "opt_einsum")


@dataclasses.dataclass(frozen=True)
class Explanation:
    """The steps of one contraction and every rounding it makes: ``str()`` gives the table, the fields give the
    numbers."""

    #: the contraction, with its output written out (``"ij,jk->ik"``)
    subscripts: str
    #: the operands' shapes
    shapes: Shapes
    #: the result's dtype, as ``x.dtype`` spells it
    dtype: np.dtype
    #: the contraction path: per step, the positions of the operands it contracts (opt_einsum's convention)
    path: tuple[tuple[int, ...], ...]
    #: per step, its plan (trn_backend.contraction.Plan): subscripts, kernel, (B, M, K, N), mode and bound
    steps: tuple[Plan, ...]
    #: per step: what runs it ("torch.matmul", "nki.matmul[fast]", "-" without a kernel); a step whose first call
    #: runs torch until its kernel is compiled has both (see ``compiled_implementations``)
    implementations: tuple[str, ...] = ()
    #: per step with an NKI kernel, the cost model's estimate on trn2 (kernels.nki.cost.Estimate: .seconds,
    #: .program_instructions, .compile_seconds, ...); None for the other steps
    modelled: tuple[object, ...] = ()
    #: per step: what runs it once its kernel is compiled (the implementation of a step's later calls)
    compiled_implementations: tuple[str, ...] = ()
    #: what a target ranked the modes by ("cpu calibration, benchmarks <date>", "trn2 cost model", "pass count
    #: (no calibration for mps)"); None where no target chose them (an explicit mode, or the device default)
    cost_basis: str | None = None
    #: every rounding of the call, in order (casts, pre-sums, products, sums over ranks and slices, the final
    #: rounding), each with its bound in units of its own absolute value
    rounding_steps: tuple[Rounding, ...] = ()
    #: what the route makes of the whole (opt_einsum's own loop runs each call as an expression of its own)
    note: str | None = None
    #: with ``route="opt_einsum"``, how many of ``steps`` each of opt_einsum's calls has
    call_steps: tuple[int, ...] = ()
    #: the device type the plan is for where explain(device=...) named one ("neuron", "cuda", ...)
    device: str | None = None
    #: a Neuron device's plan shown on a machine without its toolchain (the routing of one that has it)
    preview: bool = False
    #: per step run by an NKI kernel whose mode another mode dominates on Trainium: one line saying which
    #: (trn_backend._neuron_front.step_note)
    dominated: tuple[str, ...] = ()
    #: per step, what runs each of its pre-sums ("torch.sum", "torch.matmul", "nki.matmul[dd]"), in order
    sum_implementations: tuple[tuple[str, ...], ...] = ()
    #: with sharded operands, per step the planner's placement on the mesh (trn_backend.distributed's Decision:
    #: the operands' and the result's placements, the collectives with their bytes per rank, the modelled time
    #: and what the next-best placements would cost)
    sharding: tuple[Any, ...] = ()

    @property
    def flops(self) -> int:
        """Kernel FLOPs of every step, pre-sums that run as kernels (modes other than native) included."""
        return sum(p.flops for p in self.steps) + sum(s.flops for s in self._kernel_sums())

    def _kernel_sums(self) -> list[Plan]:
        """The pre-sums that run as a kernel call (native sums with torch's sum instead)."""
        return [
            s
            for p in self.steps
            for s in p.sums
            if s is not None and s.resolved is not None and s.resolved.mode != "native"
        ]

    @property
    def largest_intermediate(self) -> int:
        """Elements of the largest step result (the output included)."""
        return max((p.size for p in self.steps), default=0)

    @property
    def bound(self) -> float | None:
        """The bound of the whole call, in units of the same expression on ``|operands|``: every rounding's
        composed (``_precision.compose``; docs/precision.md, "Whole expressions"). 0 when nothing rounds (exact
        integer contractions), None where a rounding publishes no bound."""
        return _precision.compose(r.bound for r in self.rounding_steps)

    @property
    def roundings(self) -> int:
        """How many roundings the bound composes."""
        return len(self.rounding_steps)

    @property
    def kernel_calls(self) -> int:
        """How many kernel calls the contraction makes: one per step with a kernel (one per entry of a looped batch
        axis), and one per pre-sum that runs as a kernel."""
        return sum(1 if p.loop is None else p.loop[1] for p in self.steps if p.kernel is not None) + len(
            self._kernel_sums()
        )

    @property
    def calls(self) -> tuple[float | None, ...]:
        """With ``route="opt_einsum"``: the bound of each call opt_einsum's loop makes (its roundings composed),
        each an expression of its own; empty otherwise."""
        bounds, start = [], 1
        for n in self.call_steps:
            bounds.append(
                _precision.compose(r.bound for r in self.rounding_steps if start <= (_step_of(r.row) or 0) < start + n)
            )
            start += n
        return tuple(bounds)

    def __str__(self) -> str:
        header = ("step", "subscripts", "kernel", "(B, M, K, N)", "FLOPs", "largest", "mode", "bound", "trn2 model")
        plan_rows = {str(i) for i in range(1, len(self.steps) + 1)}
        # a step's pre-sums and product print from its plan; casts, sums over ranks or slices and final
        # roundings as rows of their own, before the step they feed or after the one they follow
        before = [r for r in self.rounding_steps if r.row.lstrip("0123456789").startswith("c")]
        after = [
            r
            for r in self.rounding_steps
            if r not in before and r.row not in plan_rows and not (r.row[:-1] in plan_rows and r.row[-1] in "ab")
        ]
        rows = [_fixed_row(r) for r in before if _step_of(r.row) is None]
        for i, (p, impl, estimate) in enumerate(
            zip(self.steps, self.implementations, self.modelled, strict=True), start=1
        ):
            rows += [_fixed_row(r) for r in before if _step_of(r.row) == i]
            # each pre-sum (an index of one operand only, summed under the mode) is a row of its own
            sums = [s for s in p.sums if s is not None]
            runs = (
                self.sum_implementations[i - 1]
                if self.sum_implementations
                else [_sum_implementation(s, _device.default_device()) for s in sums]
            )
            for letter, s, run in zip("ab", sums, runs, strict=False):  # at most two
                rows.append(
                    (
                        f"{i}{letter}",
                        readable(s.subscripts),
                        run,
                        str(s.bmkn),
                        f"{2 * s.bmkn[1] * s.bmkn[2]:.3g}",
                        f"{s.bmkn[1]:,}",
                        _mode_text(s),
                        _bound_text(s),
                        "-",
                    )
                )
            if p.kernel is not None or not p.sums:
                modelled = _modelled_text(p, estimate)
                if estimate is not None and not impl.startswith("nki."):  # a first call, before the compile
                    impl = f"{impl} (first call)"
                    if self.compiled_implementations:
                        modelled = f"then {self.compiled_implementations[i - 1]}: {modelled}"
                rows.append(
                    (
                        str(i),
                        readable(p.subscripts),
                        impl,
                        str(p.bmkn) if p.kernel else "-",
                        f"{p.flops:.3g}",
                        f"{p.size:,}",
                        _mode_text(p),
                        _bound_text(p),
                        modelled,
                    )
                )
            rows += [_fixed_row(r) for r in after if _step_of(r.row) == i]
        rows += [_fixed_row(r) for r in after if _step_of(r.row) is None]
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
        lines = [
            f"contraction {self.subscripts!r}  operands {', '.join(map(_shape_text, self.shapes))}  "
            f"dtype {_dtypes.name(self.dtype)}"
        ]
        if self.device is not None:
            lines.append(
                f"device: {self.device}"
                + (
                    " (a preview of a Neuron device with the NKI toolchain: none here; kernel times from the trn2 cost "
                    "model)"
                    if self.preview
                    else ""
                )
            )
        lines += [
            f"path: {list(self.path)}",
            "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip(),
        ]
        lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
        if self.cost_basis is not None:
            lines.append(f"modes: the cheapest meeting the target, cost basis: {self.cost_basis}")
        lines.append(
            f"total: {self.kernel_calls} kernel call(s), {self.flops:.3g} FLOPs, "
            f"largest intermediate {self.largest_intermediate:,} elements"
        )
        bound = self.bound
        if self.roundings:
            lines.append(
                f"whole expression: bound {'-' if bound is None else f'{bound:.2g}'} of the expression "
                f"on |operands|, {self.roundings} rounding(s) composed"
            )
        lines += self.dominated
        lines += self._sr_as_fast()
        if self.sharding:
            lines.append(
                "placements on the mesh (per step: operands -> result, collectives with this rank's bytes, "
                "modelled time, next-best placements):"
            )
            lines += [f"  {i}: {d}" for i, d in enumerate(self.sharding, start=1)]
        if self.note:
            lines.append(self.note)
        return "\n".join(lines)

    def _sr_as_fast(self) -> list[str]:
        """A line per step run in sr whose result is not bf16/fp16: there sr is fast, bit for bit, on every
        device (stochastic rounding applies only where an fp32 result is rounded to a narrower output)."""
        return [
            f"step {i}: sr equals fast here, bit for bit: sr rounds stochastically only a bf16/fp16 result, and "
            f"this step's is {_dtypes.name(p.dtype)}, so there is nothing to round at random"
            for i, p in enumerate(self.steps, start=1)
            if p.resolved is not None and p.resolved.mode == "sr" and p.dtype not in (torch.bfloat16, torch.float16)
        ]

    def __repr__(self) -> str:
        return (
            f"Explanation({self.subscripts!r}, steps={len(self.steps)}, flops={self.flops:.3g}, "
            f"largest_intermediate={self.largest_intermediate})"
        )


def _step_of(row: str) -> int | None:
    """The step a rounding's row name belongs to ("2a", "2r", "2out": 2; "c0", "slices", "out": None)."""
    digits = row[: len(row) - len(row.lstrip("0123456789"))]
    return int(digits) if digits else None


def _fixed_row(r: Rounding) -> tuple[str, ...]:
    """A rounding no kernel makes (a cast, a sum over ranks or slices, the final rounding), as a table row."""
    return (r.row, r.what, "-", "-", "-", "-", "-", "-" if r.bound is None else f"{r.bound:.2g}", "-")


def explain(
    subscripts: str,
    /,
    *operands_or_shapes: object,
    optimize: object = "auto",
    precision: str | None = None,
    target_forward_error: float | None = None,
    target_relative_error: float | None = None,
    dtype: object = None,
    out: object = None,
    memory_limit: int | str | None = None,
    route: str = "trn",
    device: object = None,
) -> Explanation:
    """What ``einsum(subscripts, *operands, optimize=..., precision=...)`` would run: path, per-step plans,
    every rounding with its bound, totals. Operands may be arrays (NeuronArray, NumPy, torch) or shapes.
    ``dtype``: the dtype shapes stand for (default: the default float), and the result's where arrays of other
    dtypes are cast to it (numpy.einsum's dtype=); ``out``: an array or dtype the result is delivered in (out=,
    a final rounding where it is narrower); ``memory_limit``: the sliced contraction of ``contract(...,
    memory_limit=)``; ``route="opt_einsum"``: what ``opt_einsum.contract(..., backend="trn")`` runs, each of its
    calls an expression of its own. ``device``: the device the plan is for (a torch.device or a string such as
    ``"neuron"``, ``"neuron:0"``, ``"xla"``, ``"cuda"``; default None: the operands' device, else the default
    device). A Neuron device needs no Neuron toolchain here: without one the result is a preview of what a
    Neuron device with the NKI toolchain runs (its default mode, its ranking of modes for targets, the kernel
    layer's routing rule and the cost model's times), the same Explanation the device would build."""
    shapes, dtypes, operands_device, ranks = _describe(operands_or_shapes, dtype)
    tensors = [
        x._t if isinstance(x, NeuronArray) else x
        for x in operands_or_shapes
        if isinstance(x, (NeuronArray, torch.Tensor))
    ]
    target = _target(device, operands_device)
    spec = parse(subscripts, shapes, "explain")
    if route not in _ROUTES:
        raise ValueError(f"explain(): route must be one of {', '.join(map(repr, _ROUTES))}, got {route!r}")
    request = _precision.request_of(precision, target_forward_error, target_relative_error, "explain()")
    paths.check_optimize(optimize, "explain")
    result = (
        _dtypes.to_dtype(dtype, "explain()")
        if dtype is not None and any(isinstance(x, (NeuronArray, torch.Tensor, np.ndarray)) for x in operands_or_shapes)
        else None
    )
    out_dtype = _out_dtype(out)
    try:
        if route == "opt_einsum":
            return _opt_einsum_route(subscripts, spec, shapes, dtypes, target, request, optimize)
        if memory_limit is not None:
            path, indices = slicing(spec, shapes, memory_limit_of(memory_limit, shapes), optimize)
            program = programs.sliced(spec, shapes, path, indices)
        else:
            program = paths.program(spec, shapes, optimize)
        c = compile(program, request, dtypes, target.device, result=result, out=out_dtype, ranks=ranks)
    except _precision.PrecisionError as e:  # a target no plan meets
        raise e.named("explain()") from e.__cause__
    explanation = _explanation(subscripts, shapes, c, target, request)
    placer = next((PLACEMENTS[type(t)] for t in tensors if type(t) in PLACEMENTS), None)
    if placer is not None and memory_limit is None and len(tensors) == len(operands_or_shapes):
        explanation = dataclasses.replace(explanation, sharding=placer(c.program, c.plans, tensors))
    return explanation


@dataclasses.dataclass(frozen=True)
class _Target:
    """The device a plan is for: the torch.device the compiler and the routing rule get, the device type to show
    (None: not named by the caller) and whether it is a preview of a Neuron device (its routing as a device with
    the NKI toolchain, which this machine lacks)."""

    device: torch.device
    name: str | None = None
    preview: bool = False


def _target(device: object, operands_device: torch.device) -> _Target:
    """explain()'s ``device``: None keeps the operands' device; a Neuron device (``neuron``, ``xla``, with or
    without an index, or such a torch.device) is the device itself where this machine has torch-neuronx and the
    NKI toolchain, else a preview: the compiler plans it as a Neuron device (its default mode and ranking of
    modes, by device type) and the kernel layer routes it as one with the toolchain. Other devices need not exist
    here (a plan for CUDA from a CPU-only machine)."""
    if device is None:
        return _Target(operands_device)
    kind = _device.device_type(device, "explain()")
    assert isinstance(device, (torch.device, str))  # device_type refuses anything else (TypeError)
    if kind not in kernels.NEURON_DEVICE_TYPES:
        return _Target(device if isinstance(device, torch.device) else torch.device(device), kind)
    from ..kernels.nki import toolchain

    if _device.neuron_available() and toolchain.REAL:
        return _Target(_device.normalize(device, "explain()"), kind)
    index = device.index if isinstance(device, torch.device) else device.partition(":")[2]
    # torch knows the type "xla" without torch-xla: the stand-in every choice by device type reads as Neuron
    return _Target(torch.device("xla", int(index)) if index not in (None, "") else torch.device("xla"), kind, True)


def _explanation(
    subscripts: str,
    shapes: Shapes,
    c: Compiled,
    target: _Target,
    request: _precision.Request | None,
    note: str | None = None,
    plans: Sequence[Plan] | None = None,
    rounding_steps: Sequence[Rounding] | None = None,
    path: tuple[tuple[int, ...], ...] | None = None,
) -> Explanation:
    plans = tuple(c.plans if plans is None else plans)
    if note is None and c.relative is not None:
        note = (
            f"checked as a whole, a posteriori, to target_relative_error={c.relative:g}: the modes above are the "
            "first forward try, carried in float64; a miss reruns them tighter"
        )
    device = target.device
    implementations = tuple(_implementation(p, device, preview=target.preview) for p in plans)
    # the modelled kernel of every step that runs one once compiled (a first call may run torch meanwhile)
    compiled = tuple(_implementation(p, device, compiled=True, preview=target.preview) for p in plans)
    dominated = _dominated(plans, compiled) if device.type in kernels.NEURON_DEVICE_TYPES else ()
    return Explanation(
        subscripts,
        shapes,
        _dtypes.PUBLIC[c.out],
        c.program.path if path is None else path,
        plans,
        implementations,
        tuple(_estimate(p, impl) for p, impl in zip(plans, compiled, strict=True)),
        compiled,
        _cost_basis(c.result, device, request),
        tuple(c.roundings if rounding_steps is None else rounding_steps),
        note,
        device=target.name,
        preview=target.preview,
        dominated=dominated,
        sum_implementations=tuple(
            tuple(_sum_implementation(s, device, target.preview) for s in p.sums if s is not None) for p in plans
        ),
    )


def _dominated(plans: Sequence[Plan], compiled: Sequence[str]) -> tuple[str, ...]:
    """For a Neuron device: per step that runs an NKI kernel (once compiled), the line saying which modes
    dominate its mode on Trainium, where any does (trn_backend._neuron_front.step_note)."""
    from .. import _neuron_front

    lines = []
    for i, (p, impl) in enumerate(zip(plans, compiled, strict=True), start=1):
        if p.kernel is None or not impl.startswith("nki."):
            continue
        assert p.resolved is not None  # the compiler resolves every step with a kernel
        line = _neuron_front.step_note(i, p.resolved.mode, p.dtype, p.bmkn[2], p.resolved.bound, _slices(p.resolved))
        if line is not None:
            lines.append(line)
    return tuple(lines)


def _opt_einsum_route(
    subscripts: str,
    spec,
    shapes: Shapes,
    dtypes: tuple[torch.dtype, ...],
    target: _Target,
    request: _precision.Request | None,
    optimize: object,
) -> Explanation:
    """Each call opt_einsum's own loop makes (a tensordot, an einsum), compiled as the expression of its own it
    is, on the dtypes it gets (an operand's, or an earlier call's result): the rows of every call, their bounds
    composed, and a note of what a target then holds for."""
    _, contraction_list = opt_einsum.contract_path(
        subscripts, *shapes, shapes=True, optimize=optimize, einsum_call=True
    )
    terms = list(zip(shapes, dtypes, strict=True))
    plans: list[Plan]
    first: Compiled | None
    plans, rows, first, path, sizes = [], [], None, [], []
    for inds, _, einsum_str, _, _ in contraction_list:
        taken = [terms.pop(x) for x in inds]  # in the order of einsum_str's inputs, as opt_einsum passes them
        call_shapes = tuple(tuple(s) for s, _ in taken)
        call = parse(einsum_str, call_shapes, "explain")
        one = paths.program(call, call_shapes, [(0, 1)] * (len(taken) - 1) if len(taken) > 2 else "auto")
        c = compile(one, request, tuple(d for _, d in taken), target.device)
        first = first or c
        plans += c.plans
        # each call's rows, numbered by the steps of the whole: "2" a product, "2a" a pre-sum, "2c0" a cast
        # before step 2, "2out" the call's final rounding after its last step
        start, last = len(plans) - len(c.plans) + 1, len(plans)
        rows += [dataclasses.replace(r, row=_renumbered(r.row, start, last)) for r in c.roundings]
        sizes.append(len(c.plans))
        terms.append((tuple(shape_of(call.output, list(zip(call.inputs, call_shapes, strict=True)))), c.out))
        path.append(tuple(sorted(inds)))
    assert first is not None  # opt_einsum's contraction list has a call for every contraction (one operand too)
    targeted = request is not None and request.mode is None
    note = (
        f"opt_einsum.contract(backend='trn') runs its loop itself: each of its {len(contraction_list)} "
        "call(s) (tensordot or einsum) is an expression of its own, "
        + ("and a target holds for each call, not for the whole; " if targeted else "")
        + "the bound above composes the calls' bounds (trn_backend.contract runs the whole as one program)"
    )
    return dataclasses.replace(
        _explanation(subscripts, shapes, first, target, request, note, plans, rows, tuple(path)),
        call_steps=tuple(sizes),
    )


def _renumbered(row: str, start: int, last: int) -> str:
    """A row name of one call's program, as a row of the whole (its steps numbered from ``start``; its casts
    before ``start``, its final rounding after ``last``)."""
    step = _step_of(row)
    rest = row.lstrip("0123456789")
    if step is not None:
        return f"{start + step - 1}{rest}"
    return f"{start}{rest}" if rest.startswith("c") else f"{last}{rest}"


def _out_dtype(out: object) -> torch.dtype | None:
    if out is None:
        return None
    if isinstance(out, NeuronArray):
        return out._t.dtype
    if isinstance(out, (torch.Tensor, np.ndarray)):
        return _dtypes.to_dtype(out.dtype, "explain()")
    return _dtypes.to_dtype(out, "explain()")


def error_bound(
    mode: str, dtype: object, K: int | str, /, *shapes: object, ranks: int = 1, optimize: object = "auto", **params: Any
) -> float | None:
    """The published bound of ``mode`` (with its ``params``) for results of ``dtype``, in units of the absolute
    value: for one step of contracted length ``K`` (units of ``|A||B|``, output rounding included), or, with
    subscripts and operand shapes in place of K (``error_bound("dd", xp.float32, "ij,jk->ik", (8, 64),
    (64, 8))``), for the whole expression along ``optimize``'s path, in units of the expression on ``|operands|``
    (``Explanation.bound``). ``ranks``: the result a pending sum over that many ranks of a sharded contraction.
    None where no bound is published (native bf16/fp16); 0 for exact (integer) contractions."""
    if not isinstance(K, str):
        if shapes:
            raise TypeError("error_bound(): operand shapes go with subscripts, not with a contracted length K")
        # (any dtype spelling: _precision.error_bound converts it, ``_check_problem``; its annotation names torch's)
        return _precision.error_bound(mode, cast(torch.dtype, dtype), K, ranks=ranks, **params)
    with _precision.precision(mode, **params):
        explanation = explain(K, *shapes, optimize=optimize, dtype=dtype)
    bound = explanation.bound
    if ranks == 1 or bound is None or not explanation.roundings:
        return bound
    # the partial results of the ranks are summed as the sharded engine sums them: see _precision.error_bound
    return _precision.compose([bound, _precision.error_bound(mode, cast(torch.dtype, dtype), 0, ranks=ranks, **params)])


def _cost_basis(dtype: torch.dtype, device: torch.device, request: _precision.Request | None) -> str | None:
    """What the modes were ranked by, where a target (per call or of the innermost block) chose them."""
    if request is None or request.mode is not None or not (dtype.is_floating_point or dtype.is_complex):
        return None
    return _precision.cost_basis(dtype, device)


def _implementation(p: Plan, device: torch.device, compiled: bool | None = None, preview: bool = False) -> str:
    """What the kernel layer runs this step on (its routing rule, data aside; ``compiled`` and ``preview``: see
    ``kernels.implementation``)."""
    if p.kernel is None:
        return "-"
    assert p.resolved is not None  # the compiler resolves every step with a kernel
    if p.loop is None:
        return kernels.implementation(
            p.kernel, p.resolved.mode, p.dtype, device, p.bmkn, p.resolved.kwargs, compiled, preview
        )
    calls = p.loop[1]  # one call per entry of the loop's axis, each of the rest of the batch
    each = (p.bmkn[0] // calls, *p.bmkn[1:])
    one = kernels.implementation(p.kernel, p.resolved.mode, p.dtype, device, each, p.resolved.kwargs, compiled, preview)
    return f"{one} x{calls}"


def _estimate(p: Plan, implementation: str) -> object:
    if not implementation.startswith("nki."):
        return None
    from ..kernels.nki import cost

    # an NKI implementation: a step with a kernel, which the compiler resolves
    assert p.kernel is not None and p.resolved is not None
    return cost.modelled(
        p.kernel, cost.runs_as(p.resolved.mode), p.bmkn, float64=p.dtype is torch.float64, slices=_slices(p.resolved)
    )


def _describe(operands: Sequence[object], dtype: object) -> tuple[Shapes, tuple[torch.dtype, ...], torch.device, int]:
    """Shapes, dtypes, device and ranks (sharded arrays') of arrays or shapes (shapes take ``dtype`` and the
    default device)."""
    default = _dtypes.to_dtype(dtype, "explain()") if dtype is not None else _dtypes.default_float()
    shapes, dtypes, device, tensors = [], [], _device.default_device(), []
    for i, x in enumerate(operands):
        if isinstance(x, (NeuronArray, torch.Tensor)):
            t = x._t if isinstance(x, NeuronArray) else x
            shapes.append(tuple(t.shape))
            dtypes.append(_supported(t.dtype, i))
            device = t.device
            tensors.append(t)
        elif isinstance(x, np.ndarray):
            shapes.append(x.shape)
            dtypes.append(_supported(_numpy_dtype(x.dtype, i), i))
        elif isinstance(x, Sequence) and all(isinstance(d, (int, np.integer)) and d >= 0 for d in x):
            shapes.append(tuple(int(d) for d in x))
            dtypes.append(default)
        else:
            raise TypeError(f"explain(): operand {i} must be an array or a shape (a tuple of sizes), got {x!r}")
    return tuple(shapes), tuple(dtypes), device, ranks_of(tensors)


def _numpy_dtype(dtype: np.dtype, i: int) -> torch.dtype:
    try:
        return _dtypes.to_dtype(dtype)
    except TypeError:
        raise TypeError(
            f"explain(): operand {i} has NumPy dtype {dtype}, which trn_backend does not support; "
            f"supported: {', '.join(_dtypes.NAMES.values())}"
        ) from None


def _supported(dtype: torch.dtype, i: int) -> torch.dtype:
    """A dtype of the namespace; others (float16, bfloat16, ...) are a TypeError naming the operand."""
    if dtype not in _dtypes.ALL:
        raise TypeError(
            f"explain(): operand {i} has dtype {_dtypes.name(dtype)}, which trn_backend does not "
            f"support; supported: {', '.join(_dtypes.NAMES.values())}"
        )
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
    assert p.resolved is not None  # an estimate: an NKI step, with a kernel and its mode
    slices = _slices(p.resolved) or reference.ozaki_default_slices(p.dtype)
    passes = _precision.MODES[p.resolved.mode].passes(slices)
    work = "one fp32 pass" if passes is None else f"{passes} bf16 pass{'es' if passes > 1 else ''}"
    from ..kernels.nki import cost

    return (
        f"{estimate.seconds * 1e3:.3g} ms, {work}, {estimate.program_instructions:,} instructions "
        f"(compile ~{cost.format_seconds(estimate.compile_seconds)}), LNC={estimate.cores}"
    )


def _bound_text(p: Plan) -> str:
    return "-" if p.resolved is None or p.resolved.bound is None else f"{p.resolved.bound:.2g}"


def _sum_implementation(p: Plan, device: torch.device, preview: bool = False) -> str:
    """A pre-sum runs torch's sum under native, else the mode's matmul with a vector of ones."""
    assert p.resolved is not None  # the compiler resolves every pre-sum
    if p.resolved.mode == "native":
        return "torch.sum"
    return kernels.implementation(
        "matmul", p.resolved.mode, p.dtype, device, p.bmkn, p.resolved.kwargs, preview=preview
    )


def _slices(r: _precision.Resolved) -> int | None:
    """ozaki's slice count (None for the other modes), an int: ``_precision`` checks mode parameters."""
    return cast("int | None", r.kwargs.get("slices"))


def _shape_text(shape: tuple[int, ...]) -> str:
    return "x".join(map(str, shape)) if shape else "scalar"
