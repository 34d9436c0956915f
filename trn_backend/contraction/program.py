"""``Program``: the one representation of a contraction, as plain data: its steps over numbered registers.

Registers 0 to n - 1 hold the n operands, step i writes register n + i, and the last step's register holds the
result. Each step is a one- or two-operand contraction given by its labels and symbolic shapes; dtypes are not
part of a program (``compiler`` plans it for the dtypes it runs in). A program comes from one of the sources of a
contraction order:

- ``build``: an einsum path (opt_einsum's or cotengra's choice, or the caller's), followed symbolically: the
  labels and shapes of every intermediate, each in the order the kernel produces it (the final output at the
  end), a path entry of three or more operands folded left to right;
- ``from_contraction_list``: opt_einsum's ``contraction_list`` (what ``opt_einsum.contract`` loops over), each
  step the contraction its ``tensordot`` or ``einsum`` call makes, with the transpose opt_einsum applies after a
  tensordot;
- ``single``: one step of one or two operands;
- ``sliced``: the program of one slice of a contraction whose ``sliced`` indices are summed over slices
  (``contract(..., memory_limit=)``).

The compiler (``compiler.compile``) turns a program into the steps and roundings of one call; the runner
(``runner.run``) executes it. Every entry point builds one.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence
from typing import Any

from .parse import Shapes, Spec, parse
from .plan import natural_output

__all__ = ["Step", "Program", "build", "from_contraction_list", "single", "sliced", "label_sizes", "shape_of"]


@dataclasses.dataclass(frozen=True)
class Step:
    """One one- or two-operand contraction of a program: it reads the registers ``operands`` (each once: a
    program is a tree) and writes ``register``; ``inputs -> output`` with operand ``shapes`` is what it computes,
    ``perm`` a permutation applied to its result (opt_einsum's transpose after a tensordot), None when none is."""

    register: int
    operands: tuple[int, ...]
    inputs: tuple[str, ...]
    output: str
    shapes: Shapes
    perm: tuple[int, ...] | None = None

    @property
    def subscripts(self) -> str:
        return f"{','.join(self.inputs)}->{self.output}"

    def __str__(self) -> str:
        reads = ", ".join(f"r{i}" for i in self.operands)
        shapes = ", ".join("x".join(map(str, s)) or "scalar" for s in self.shapes)
        then = "" if self.perm is None else f", then permute {self.perm}"
        return f"r{self.register} = {self.subscripts} of {reads} ({shapes}){then}"


@dataclasses.dataclass(frozen=True)
class Program:
    """A contraction of ``operands`` operands as ``steps`` over registers (see the module docstring).

    ``path``: the einsum path it follows, each entry's operand positions ascending (what ``explain`` shows).
    ``spec``: the labels of the whole contraction, ``shapes`` its operands' shapes. ``sliced`` (with their
    ``sizes``): indices the result is summed over, slice by slice; the steps are then those of one slice (the
    operands without those indices)."""

    operands: int
    path: tuple[tuple[int, ...], ...]
    steps: tuple[Step, ...]
    spec: Spec
    shapes: Shapes  # the operands' (sliced indices included)
    sliced: tuple[str, ...] = ()
    sizes: tuple[int, ...] = ()
    # per operand, the sliced indices it varies along (it broadcasts the others from size 1)
    varies: tuple[tuple[str, ...], ...] = ()

    @property
    def result(self) -> int:
        """The register that holds the result."""
        return self.steps[-1].register

    @property
    def sizes_of_labels(self) -> dict[str, int]:
        """The size of every label of the whole contraction."""
        return label_sizes(zip(self.spec.inputs, self.shapes, strict=True))

    @property
    def contracted(self) -> int:
        """The product of the sizes of the summed labels (what a ``Check`` reports as K)."""
        return math.prod(s for c, s in self.sizes_of_labels.items() if c not in self.spec.output)

    def __str__(self) -> str:
        head = f"program of {self.operands} operand(s), path {list(self.path)}"
        if self.sliced:
            head += f", summed over slices of {', '.join(self.sliced)}"
        return "\n".join([f"{head}:", *(f"  {step}" for step in self.steps)])


def build(spec: Spec, shapes: Shapes, path: Sequence[Sequence[int]]) -> Program:
    """Follow ``path`` symbolically: labels and shapes of every intermediate, and each binary step's output
    order (the final output at the end; elsewhere the order the kernel produces, so no permute is needed)."""
    terms = list(zip(spec.inputs, (tuple(int(d) for d in s) for s in shapes), strict=True))
    live = list(range(len(terms)))  # the register of each term
    n = len(terms)
    steps: list[Step] = []
    for number, step in enumerate(path):
        if not step or len(set(step)) != len(step) or not all(0 <= p < len(terms) for p in step):
            raise ValueError(
                f"einsum(): path step {number} {tuple(step)} must name distinct operands among the "
                f"{len(terms)} left at that point"
            )
        positions = tuple(sorted(step, reverse=True))
        taken = [terms.pop(p) for p in positions][::-1]
        registers = [live.pop(p) for p in positions][::-1]
        last = not terms  # this step consumes every operand left: it produces the output
        needed = "".join(t for t, _ in terms) + spec.output
        acc, register = taken[0], registers[0]
        if len(taken) == 1:
            out = spec.output if last else "".join(dict.fromkeys(c for c in acc[0] if c in needed))
            steps.append(Step(n + len(steps), (register,), (acc[0],), out, (acc[1],)))
            acc, register = (out, shape_of(out, [acc])), steps[-1].register
        for i, (nxt, other) in enumerate(zip(taken[1:], registers[1:], strict=True), start=2):
            keep = needed + "".join(t for t, _ in taken[i:])
            pair = (acc[0], nxt[0])
            if last and i == len(taken):
                out = spec.output
            else:
                out = natural_output(
                    pair, "".join(dict.fromkeys(c for c in acc[0] + nxt[0] if c in keep)), (acc[1], nxt[1])
                )
            steps.append(Step(n + len(steps), (register, other), pair, out, (acc[1], nxt[1])))
            acc, register = (out, shape_of(out, [acc, nxt])), steps[-1].register
        terms.append(acc)
        live.append(register)
    if len(terms) != 1:
        raise ValueError(f"einsum(): the path leaves {len(terms)} operands uncontracted; it must end with one")
    return Program(n, tuple(tuple(sorted(s)) for s in path), tuple(steps), spec, _sizes(shapes))


def from_contraction_list(contraction_list: Sequence[Any], spec: Spec, shapes: Shapes) -> Program:
    """Follow opt_einsum's contraction loop on shapes: each step the contraction its ``tensordot`` (then a
    transpose where the result's order differs) or ``einsum`` call makes. A step of three or more operands (an
    explicit path such as [(0, 1, 2)]) is folded left to right, as ``build`` folds it."""
    terms = [tuple(int(d) for d in s) for s in shapes]
    live = list(range(len(terms)))
    n = len(terms)
    steps: list[Step] = []
    for inds, idx_rm, einsum_str, _, blas_flag in contraction_list:
        taken = [terms.pop(x) for x in inds]
        registers = tuple(live.pop(x) for x in inds)
        inputs, result = einsum_str.split("->")
        labels = tuple(inputs.split(","))
        if blas_flag and "EINSUM" not in blas_flag:  # opt_einsum's tensordot, then a transpose if needed
            left, right = labels
            natural = "".join(s for s in left + right if s not in idx_rm)
            perm = None if natural == result else tuple(map(natural.index, result))
            steps.append(Step(n + len(steps), registers, labels, natural, tuple(taken), perm))
            shape = tuple(steps[-1].shapes[0][left.index(c)] if c in left else taken[1][right.index(c)] for c in result)
        elif len(taken) <= 2:
            step_spec = parse(einsum_str, tuple(taken))
            steps.append(Step(n + len(steps), registers, step_spec.inputs, step_spec.output, tuple(taken)))
            shape = shape_of(step_spec.output, list(zip(step_spec.inputs, taken, strict=True)))
        else:  # one einsum of several operands: a path of its own, left to right
            step_spec = parse(einsum_str, tuple(taken))
            inner = build(step_spec, tuple(taken), ((0, 1),) * (len(taken) - 1))
            offset = n + len(steps)
            renumber = {
                **{i: r for i, r in enumerate(registers)},
                **{s.register: offset + k for k, s in enumerate(inner.steps)},
            }
            for s in inner.steps:
                steps.append(
                    dataclasses.replace(
                        s, register=renumber[s.register], operands=tuple(renumber[r] for r in s.operands)
                    )
                )
            shape = shape_of(step_spec.output, list(zip(step_spec.inputs, taken, strict=True)))
        terms.append(shape)
        live.append(steps[-1].register)
    return Program(n, tuple(tuple(sorted(step[0])) for step in contraction_list), tuple(steps), spec, _sizes(shapes))


def single(spec: Spec, shapes: Shapes) -> Program:
    """The program of one or two operands: one step of ``spec`` itself."""
    n = len(shapes)
    step = Step(n, tuple(range(n)), spec.inputs, spec.output, _sizes(shapes))
    return Program(n, (tuple(range(n)),), (step,), spec, step.shapes)


def sliced(spec: Spec, shapes: Shapes, path: Sequence[Sequence[int]], indices: Sequence[str]) -> Program:
    """The program of a contraction summed over slices of ``indices``: the steps of one slice along ``path``
    (the operands without the sliced indices; one operand: its one step)."""
    indices = tuple(indices)
    inner = Spec(tuple(_drop(labels, indices) for labels in spec.inputs), _drop(spec.output, indices))
    inner_shapes = tuple(
        tuple(int(d) for c, d in zip(labels, s, strict=True) if c not in indices)
        for labels, s in zip(spec.inputs, shapes, strict=True)
    )
    if len(inner_shapes) == 1 or not path:
        one = single(inner, inner_shapes)
    else:
        one = build(inner, inner_shapes, path)
    sizes = label_sizes(zip(spec.inputs, shapes, strict=True))
    varies = tuple(
        tuple(dict.fromkeys(c for c, d in zip(labels, s, strict=True) if c in indices and d != 1))
        for labels, s in zip(spec.inputs, shapes, strict=True)
    )
    return Program(
        one.operands, one.path, one.steps, spec, _sizes(shapes), indices, tuple(sizes[c] for c in indices), varies
    )


def _sizes(shapes: Iterable[Sequence[int]]) -> Shapes:
    return tuple(tuple(int(d) for d in s) for s in shapes)


def _drop(labels: str, indices: tuple[str, ...]) -> str:
    return "".join(c for c in labels if c not in indices)


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
