"""``Program``: the one representation of a contraction of several steps, its compiler and its runner.

A program is a sequence of one- or two-operand contractions over numbered registers: registers 0 to n - 1 hold
the n operands, step i writes register n + i, and the last step's register holds the result. ``build`` builds
it from either source of a contraction order:

- an einsum path (what ``paths`` gets from opt_einsum or cotengra, or the caller gives), followed symbolically:
  the labels and shapes of every intermediate, each in the order the kernel produces it (the final output at the
  end), a path entry of three or more operands folded left to right;
- opt_einsum's ``contraction_list`` (what ``opt_einsum.contract._core_contract`` loops over, the pinned series):
  each step the planner entry that the backend's ``tensordot`` or ``einsum`` call would reach, with the same
  validation and errors, and the transpose opt_einsum applies to a tensordot's result.

Its consumers: einsum's path runner (``paths.run``), ``Expression`` (``contract_expression``), ``explain`` and
the sliced contraction (``slicing``), which keeps registers alive between slices.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

import torch
from opt_einsum.parser import convert_to_valid_einsum_chars, has_valid_einsum_chars_only

from . import execute
from .axes import canonical_axes, tensordot_entry
from .parse import Shapes, Spec, parse
from .plan import Entry, Plan, entry, natural_output, result_dtype

__all__ = ["Step", "Program", "build", "single", "run", "label_sizes", "shape_of"]


@dataclasses.dataclass(frozen=True)
class Step:
    """One one- or two-operand contraction of a program.

    Its operands are given twice, for the two ways programs run: ``operands``, the registers it reads (the
    sliced contraction keeps every register between slices), and ``positions``, where ``run`` pops them from
    its list of live terms (the operands, then each result appended), so an operand is freed once consumed.
    Its contraction is given twice too, the union of what the two compilers know: ``inputs``, ``output`` and
    ``shapes`` (labels and symbolic shapes; a step of a path is planned from these and its operands' own shapes
    and dtypes, as the planner's cache keys them) and ``entry``, the planner entry where the compiler knew the
    dtypes (opt_einsum's steps: a tensordot step's entry has tensordot's own labels). ``perm``: the permutation
    applied to its result (opt_einsum's transpose after a tensordot), None when there is none."""

    register: int
    operands: tuple[int, ...]
    positions: tuple[int, ...]
    inputs: tuple[str, ...]
    output: str
    shapes: Shapes
    entry: Entry | None = dataclasses.field(default=None, repr=False)
    perm: tuple[int, ...] | None = None

    def __str__(self) -> str:
        reads = ", ".join(f"r{i}" for i in self.operands)
        shapes = ", ".join("x".join(map(str, s)) or "scalar" for s in self.shapes)
        then = "" if self.perm is None else f", then permute {self.perm}"
        return f"r{self.register} = {','.join(self.inputs)}->{self.output} of {reads} ({shapes}){then}"


@dataclasses.dataclass(frozen=True)
class Program:
    """A contraction of ``operands`` operands as ``steps`` over registers (see the module docstring); ``path``:
    the einsum path it follows, each entry's operand positions ascending (what ``explain`` shows)."""

    operands: int
    path: tuple[tuple[int, ...], ...]
    steps: tuple[Step, ...]

    @property
    def result(self) -> int:
        """The register that holds the result."""
        return self.steps[-1].register

    def roundings(self, dtypes: tuple[torch.dtype, ...], sharded: bool = False) -> int:
        """The rounding steps of the whole expression (kernel calls and pre-sums of inexact dtypes): what a target
        is shared among (``_precision.share``). A step without a bound entry counts in the result dtype of
        ``dtypes``. ``sharded``: operands of a registered executor (DTensor), whose steps may each end in a sum
        over ranks and its rounding back to the dtype, two more each."""
        dtype = None
        counts = []
        for step in self.steps:
            found = step.entry
            if found is None:
                dtype = dtype or result_dtype(dtypes)
                found = entry(step.inputs, step.output, step.shapes, (dtype,) * len(step.inputs))
            counts.append(found.base.roundings)
        return sum(counts) + (2 * sum(c > 0 for c in counts) if sharded else 0)

    def __str__(self) -> str:
        return "\n".join([f"program of {self.operands} operand(s), path {list(self.path)}:",
                          *(f"  {step}" for step in self.steps)])


def build(shapes: Shapes, *, spec: Spec | None = None, path: Sequence[Sequence[int]] | None = None,
            contraction_list: Sequence[Any] | None = None,
            dtypes: tuple[torch.dtype, ...] | None = None) -> Program | None:
    """The program of a contraction of operands of ``shapes``: along the einsum ``path`` of ``spec``, or along
    opt_einsum's ``contraction_list`` for operands of ``dtypes`` (None where one of its steps takes three or
    more operands, an explicit path such as [(0, 1, 2)]: a planner entry is one binary step, so opt_einsum's own
    call, through the backend's ``einsum``, runs those)."""
    if contraction_list is None:
        return _from_path(spec, shapes, path)
    if any(len(step[0]) > 2 for step in contraction_list):
        return None
    return _from_contraction_list(contraction_list, shapes, dtypes)


def single(spec: Spec, shapes: Shapes) -> Program:
    """The program of one or two operands: one step of ``spec`` itself (what ``build`` makes of the path that
    takes them all at once, without following it)."""
    n = len(shapes)
    step = Step(n, tuple(range(n)), (0,) * n, spec.inputs, spec.output, tuple(map(tuple, shapes)))
    return Program(n, (tuple(range(n)),), (step,))


def _from_path(spec: Spec, shapes: Shapes, path: Sequence[Sequence[int]]) -> Program:
    """Follow ``path`` symbolically: labels and shapes of every intermediate, and each binary step's output
    order (the final output at the end; elsewhere the order the kernel produces, so no permute is needed)."""
    terms = list(zip(spec.inputs, (tuple(int(d) for d in s) for s in shapes), strict=True))
    live = list(range(len(terms)))  # the register of each term
    links: list[tuple[tuple[int, ...], tuple[str, ...], str, Shapes]] = []
    for number, step in enumerate(path):
        if not step or len(set(step)) != len(step) or not all(0 <= p < len(terms) for p in step):
            raise ValueError(f"einsum(): path step {number} {tuple(step)} must name distinct operands among the "
                             f"{len(terms)} left at that point")
        positions = tuple(sorted(step, reverse=True))
        taken = [terms.pop(p) for p in positions][::-1]
        registers = [live.pop(p) for p in positions][::-1]
        last = not terms  # this step consumes every operand left: it produces the output
        needed = "".join(t for t, _ in terms) + spec.output
        acc, register = taken[0], registers[0]
        if len(taken) == 1:
            out = spec.output if last else "".join(dict.fromkeys(c for c in acc[0] if c in needed))
            links.append(((register,), (acc[0],), out, (acc[1],)))
            acc, register = (out, shape_of(out, [acc])), len(shapes) + len(links) - 1
        for i, (nxt, other) in enumerate(zip(taken[1:], registers[1:], strict=True), start=2):
            keep = needed + "".join(t for t, _ in taken[i:])
            pair = (acc[0], nxt[0])
            if last and i == len(taken):
                out = spec.output
            else:
                out = natural_output(pair, "".join(dict.fromkeys(c for c in acc[0] + nxt[0] if c in keep)),
                                     (acc[1], nxt[1]))
            links.append(((register, other), pair, out, (acc[1], nxt[1])))
            acc, register = (out, shape_of(out, [acc, nxt])), len(shapes) + len(links) - 1
        terms.append(acc)
        live.append(register)
    if len(terms) != 1:
        raise ValueError(f"einsum(): the path leaves {len(terms)} operands uncontracted; it must end with one")
    return Program(len(shapes), tuple(tuple(sorted(s)) for s in path), tuple(
        Step(register, operands, positions, inputs, output, step_shapes)
        for register, positions, (operands, inputs, output, step_shapes) in _placed(len(shapes), links)))


def _from_contraction_list(contraction_list: Sequence[Any], shapes: Shapes,
                           dtypes: tuple[torch.dtype, ...]) -> Program:
    """Follow opt_einsum's contraction loop on shapes and dtypes: each step reaches the planner entry that its
    ``tensordot`` or ``einsum`` call to the backend would, with the same validation and errors."""
    terms = list(zip(shapes, dtypes, strict=True))
    live = list(range(len(terms)))
    links = []
    for inds, idx_rm, einsum_str, _, blas_flag in contraction_list:
        taken = [terms.pop(x) for x in inds]
        operands = tuple(live.pop(x) for x in inds)
        (sa, da), *rest = taken
        if blas_flag and "EINSUM" not in blas_flag:  # opt_einsum's tensordot, then a transpose if needed
            (sb, db), = rest
            inputs, results_index = einsum_str.split("->")
            left, right = inputs.split(",")
            tensor_result = "".join(s for s in left + right if s not in idx_rm)
            pairs = sorted((left.find(s), right.find(s)) for s in idx_rm)
            axes = (tuple(i for i, _ in pairs), tuple(j for _, j in pairs))
            found = tensordot_entry(sa, sb, da, db, canonical_axes(axes))
            perm = None
            if tensor_result != results_index:
                perm = tuple(map(tensor_result.index, results_index))
            labels, output = (left, right), tensor_result
        else:  # opt_einsum's einsum, on its labels made valid einsum letters as it passes them
            if not has_valid_einsum_chars_only(einsum_str):
                einsum_str = convert_to_valid_einsum_chars(einsum_str)
            step_shapes = tuple(s for s, _ in taken)
            spec = parse(einsum_str, step_shapes)
            found = entry(spec.inputs, spec.output, step_shapes, tuple(d for _, d in taken))
            perm = None
            labels, output = spec.inputs, spec.output
        base = found.base
        shape = base.shape if perm is None else tuple(base.shape[i] for i in perm)
        terms.append((shape, base.dtype))
        live.append(len(shapes) + len(links))
        links.append((operands, labels, output, tuple(s for s, _ in taken), found, perm))
    return Program(len(shapes), tuple(tuple(sorted(step[0])) for step in contraction_list), tuple(
        Step(register, operands, positions, inputs, output, step_shapes, found, perm)
        for register, positions, (operands, inputs, output, step_shapes, found, perm)
        in _placed(len(shapes), links)))


def _placed(n: int, links: Sequence[tuple]) -> Iterable[tuple[int, tuple[int, ...], tuple]]:
    """(register, positions, link) of each step of a program of ``n`` operands whose ``links`` start with the
    registers they read: the positions ``run`` pops them from, its list of live terms holding the operands, then
    each result appended."""
    live = list(range(n))
    for number, link in enumerate(links):
        positions = []
        for register in link[0]:
            positions.append(live.index(register))
            live.pop(positions[-1])
        live.append(n + number)
        yield n + number, tuple(positions), link


def run(program: Program, tensors: Sequence[torch.Tensor], roundings: int = 1, precision: str | None = None,
        target_forward_error: float | None = None, ledger: list[Plan] | None = None) -> torch.Tensor:
    """Run ``program`` on ``tensors``, each step planned and executed on its own (its mode resolved per call,
    under ``precision``, ``target_forward_error`` or the precision in force, for an expression of ``roundings``
    rounding steps); ``ledger`` collects the plans run."""
    ops = list(tensors)
    for step in program.steps:
        args = [ops.pop(p) for p in step.positions]
        found = step.entry
        if found is None:
            found = entry(step.inputs, step.output, tuple(t.shape for t in args), tuple(t.dtype for t in args))
        plan = found.plan(args[0].device, precision, target_forward_error, roundings)
        if ledger is not None:
            ledger.append(plan)
        out = execute.execute(plan, args)
        ops.append(out if step.perm is None else out.permute(step.perm))
    return ops[0]


def label_sizes(terms: Iterable[tuple[str, Sequence[int]]]) -> dict[str, int]:
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
