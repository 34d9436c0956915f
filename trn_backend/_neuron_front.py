"""The precision modes on Trainium as a front of time against accuracy: which modes another mode dominates.

A mode is *dominated* when another mode is no slower and no less accurate (its published bound is no larger), and
strictly better in one of the two. Time is the trn2 cost model's (``kernels/nki/cost.py``) for the kernel the kernel
layer runs for a float32 step of the mode (``cost.runs_as``: sr's float32 results run fast's kernel); accuracy is
the library's own published bound (``_precision.error_bound``, from ``kernels/bounds.py``) at the step's K.

native's bound depends on the Tensor Engine's fp32 precision, which is undocumented (check-neuron measures it:
assumption d). Every comparison is therefore made in two cases:

- ``fp32-accurate``: fp32 products as accurate as an SGEMM's (u_s per product), native's bound gamma_K(u_s);
- ``unknown``: native's bound is unknown, so native neither dominates nor is dominated: only known facts count.

A dominance that holds in the ``unknown`` case holds on the known facts alone; one that holds only in the
``fp32-accurate`` case depends on what check-neuron measures.

``front()`` computes the table for matmul n^3 (fp32 data, A as a transposed view) at ``SIZES``; ``markdown()``
prints it (``python -m trn_backend precision-report --front``) with its summary, as docs/precision.md carries it
between ``<!-- front-table -->`` markers (``update_docs`` rewrites them). ``step_note()`` is what ``explain()``
prints for a step on a Neuron device whose mode is dominated there.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import torch

from . import _precision
from .kernels import NKI_MODES, bounds, reference

__all__ = [
    "SIZES",
    "CASES",
    "Point",
    "Row",
    "dominators",
    "front",
    "markdown",
    "summary",
    "update_docs",
    "step_note",
    "MARKER",
]

SIZES = (1024, 2048, 4096, 8192)
GENERATION = "trn2"
CASES = ("fp32-accurate", "unknown")
CASE_TEXT = {
    "fp32-accurate": "if the Tensor Engine's fp32 products are as accurate as SGEMM's (u_s per product)",
    "unknown": "on the known facts alone (native's fp32 precision unknown: native neither dominates nor is dominated)",
}
MARKER = "front-table"
MODES = NKI_MODES  # fast, native, dd, bf16x6, ozaki, sr: every mode with an NKI kernel


@dataclasses.dataclass(frozen=True)
class Point:
    """One mode on one problem: its time (None: no kernel runs it there) and bound (None: unknown)."""

    mode: str
    seconds: float | None
    bound: float | None


def dominates(x: Point, y: Point) -> bool:
    """Whether ``x`` dominates ``y``: no slower and no less accurate, strictly better in one; a point with an
    unknown time or bound is incomparable."""
    if x.seconds is None or x.bound is None or y.seconds is None or y.bound is None:
        return False
    return x.seconds <= y.seconds and x.bound <= y.bound and (x.seconds < y.seconds or x.bound < y.bound)


def dominators(points: Sequence[Point], mode: str) -> tuple[str, ...]:
    """The modes among ``points`` that dominate ``mode``'s point."""
    point = next(p for p in points if p.mode == mode)
    return tuple(p.mode for p in points if p.mode != mode and dominates(p, point))


def native_bound(case: str, K: int) -> float | None:
    """native's bound on float32 data at K in ``case``: SGEMM's gamma_K(u_s), or unknown."""
    if case not in CASES:
        raise ValueError(f"unknown case {case!r}; cases: {', '.join(CASES)}")
    return bounds.native_bound(torch.float32, K) if case == "fp32-accurate" else None


@dataclasses.dataclass(frozen=True)
class Row:
    """One mode at one n: the kernel the kernel layer runs, its modelled trn2 time (None with ``problem``: no
    kernel at this size), the library's bound at K = n (native: SGEMM's, the fp32-accurate case), and per case
    the modes that dominate it."""

    n: int
    mode: str
    kernel: str
    seconds: float | None
    bound: float | None
    dominated_by: dict[str, tuple[str, ...]]
    problem: str = ""


def modelled_seconds(mode: str, n: int, generation: str = GENERATION) -> float:
    """The cost model's time of the kernel a float32 matmul step of ``mode`` runs at n^3, A as a transposed view
    (``cost.runs_as``: sr's float32 results run fast's kernel)."""
    from .kernels.nki import cost

    return cost.modelled("matmul", cost.runs_as(mode), (1, n, n, n), generation, a_is_transposed=True).seconds


def _kernel(mode: str) -> str:
    from .kernels.nki import cost

    return f"nki.matmul[{cost.runs_as(mode)}]"


def front(
    sizes: Sequence[int] = SIZES, seconds: Callable[[str, int], float] = modelled_seconds, modes: Sequence[str] = MODES
) -> list[Row]:
    """Every mode at every n in ``sizes``: its time (``seconds(mode, n)``; a kernel that refuses the size gets
    None and the reason), bound at K = n and dominators in each case."""
    rows = []
    for n in sizes:
        found: dict[str, tuple[float | None, str]] = {}
        for mode in modes:
            try:
                found[mode] = (seconds(mode, n), "")
            except Exception as e:  # a kernel that cannot run this size (e.g. a 32-bit offset): no time
                found[mode] = (None, f"{type(e).__name__}: {e}")
        bound = {
            mode: native_bound("fp32-accurate", n)
            if mode == "native"
            else _precision.error_bound(mode, torch.float32, n)
            for mode in modes
        }
        by_case = {}
        for case in CASES:
            points = [Point(m, found[m][0], native_bound(case, n) if m == "native" else bound[m]) for m in modes]
            by_case[case] = {m: dominators(points, m) for m in modes}
        rows += [
            Row(n, m, _kernel(m), found[m][0], bound[m], {c: by_case[c][m] for c in CASES}, found[m][1]) for m in modes
        ]
    return rows


def _ms(seconds: float | None) -> str:
    return "no kernel" if seconds is None else f"{seconds * 1e3:.3g} ms"


def _by(row: Row, case: str) -> str:
    if row.seconds is None:
        return "-"
    if case == "unknown" and row.mode == "native":
        return "not compared (bound unknown)"
    return ("by " + ", ".join(row.dominated_by[case])) if row.dominated_by[case] else "no"


def table(rows: Sequence[Row]) -> str:
    """The rows as a Markdown table."""
    lines = [
        "| n (M = K = N) | mode | kernel | modelled trn2 time | bound at K = n | dominated (native "
        "fp32-accurate) | dominated (native unknown) |",
        "|---:|---|---|---:|---:|---|---|",
    ]
    for r in rows:
        bound = f"{r.bound:.2e}" + (" if fp32-accurate, else unknown" if r.mode == "native" else "")
        lines.append(
            f"| {r.n} | {r.mode} | {r.kernel} | {_ms(r.seconds)} | {bound} | {_by(r, 'fp32-accurate')} | "
            f"{_by(r, 'unknown')} |"
        )
    return "\n".join(lines) + "\n"


def _sizes(ns: Sequence[int]) -> str:
    return "n = " + ", ".join(map(str, ns))


def summary(rows: Sequence[Row]) -> list[str]:
    """Plain sentences: per case which modes are dominated, where and by what; modes that tie; sizes a kernel
    refuses."""
    lines = []
    for case in CASES:
        found: dict[tuple[str, tuple[str, ...]], list[int]] = {}
        for r in rows:
            if r.dominated_by[case]:
                found.setdefault((r.mode, r.dominated_by[case]), []).append(r.n)
        if found:
            said = "; ".join(
                f"{mode} is dominated at {_sizes(ns)} (by {', '.join(by)})" for (mode, by), ns in found.items()
            )
        else:
            said = "no mode is dominated"
        lines.append(f"- {CASE_TEXT[case][0].upper()}{CASE_TEXT[case][1:]}: {said}.")
    ties: dict[tuple[str, str], list[int]] = {}
    for n in sorted({r.n for r in rows}):
        at = [r for r in rows if r.n == n and r.seconds is not None and r.mode != "native"]
        for i, x in enumerate(at):
            for y in at[i + 1 :]:
                if x.seconds == y.seconds and x.bound == y.bound:
                    ties.setdefault((x.mode, y.mode), []).append(n)
    lines += [
        f"- {x} and {y} tie (the same kernel time and bound) at {_sizes(ns)}: neither dominates the other."
        for (x, y), ns in ties.items()
    ]
    refused: dict[tuple[str, str], list[int]] = {}
    for r in rows:
        if r.problem:
            refused.setdefault((r.mode, r.problem), []).append(r.n)
    lines += [
        f"- {mode} has no kernel at {_sizes(ns)} ({problem}): not compared there."
        for (mode, problem), ns in refused.items()
    ]
    return lines


def markdown(rows: Sequence[Row] | None = None) -> str:
    """The table and its summary, as docs/precision.md carries them between the front-table markers."""
    rows = front() if rows is None else rows
    return table(rows) + "\n" + "\n".join(summary(rows)) + "\n"


def update_docs(path: str | Path, text: str | None = None) -> None:
    """Replace what ``path`` holds between ``<!-- front-table -->`` and ``<!-- /front-table -->`` by ``text``
    (default: ``markdown()``)."""
    path = Path(path)
    document = path.read_text()
    pattern = re.compile(rf"(<!-- {MARKER} -->\n).*?(<!-- /{MARKER} -->)", flags=re.S)
    if not pattern.search(document):
        raise ValueError(f"{path} has no <!-- {MARKER} --> ... <!-- /{MARKER} --> block")
    body = markdown() if text is None else text
    path.write_text(pattern.sub(lambda m: m.group(1) + body + m.group(2), document, count=1))


# --- one step, for explain() ---


def step_costs(dtype: torch.dtype, modes: Sequence[tuple[str, int | None]]) -> list[float]:
    """What targets rank the modes by on Neuron (``_mode_costs``: the trn2 cost model, each mode's kernel at
    ``NEURON_SIZE``), for (mode, ozaki slices) pairs, each mode priced as the kernel the kernel layer runs for it."""
    from . import _mode_costs
    from .kernels.nki import cost

    # each mode as the kernel layer runs it (sr's float results: fast's kernel)
    return _mode_costs.basis("neuron", dtype).costs([(cost.runs_as(m), s) for m, s in modes], 0.0)


def step_note(
    step: int,
    mode: str,
    dtype: torch.dtype,
    K: int,
    bound: float | None,
    slices: int | None = None,
    costs: Callable[[torch.dtype, Sequence[tuple[str, int | None]]], list[float]] | None = None,
) -> str | None:
    """One line for a step of ``mode`` (bound ``bound``) on ``dtype`` data with contracted length K that runs an
    NKI kernel: which modes dominate it on Trainium, on the known facts or only if the Tensor Engine's fp32
    products are as accurate as SGEMM's; None where none does. Times: ``costs`` (default ``step_costs``: the trn2
    cost model's ranking, as targets rank modes on Neuron)."""
    if mode not in MODES or bound is None:
        return None
    candidates = [m for m in MODES if m != "native" or dtype is torch.float32]
    own = slices if mode == "ozaki" else None
    pairs = [
        (m, own if m == mode else (reference.ozaki_default_slices(dtype) if m == "ozaki" else None)) for m in candidates
    ]
    seconds = dict(zip(candidates, (costs or step_costs)(dtype, pairs), strict=True))
    # native's bound is the case's (its resolved bound on Neuron is the fp32-accurate one); the others' published
    known = {m: bound if m == mode else _precision.error_bound(m, dtype, K) for m in candidates if m != "native"}
    by_case = {}
    for case in CASES:
        points = [Point(m, seconds[m], native_bound(case, K) if m == "native" else known[m]) for m in candidates]
        by_case[case] = dominators(points, mode)
    sure, maybe = by_case["unknown"], tuple(m for m in by_case["fp32-accurate"] if m not in by_case["unknown"])
    if not sure and not maybe:
        return None
    where = f"step {step}: {mode} is dominated on Trainium"
    basis = "trn2 cost model's ranking of the kernels; bounds at K = " + f"{K:,}"
    if sure:
        line = (
            f"{where}: {' and '.join(sure)} {'is' if len(sure) == 1 else 'are'} no slower and no less accurate "
            f"({basis})"
        )
        if maybe:
            line += (
                f"; so is {' and '.join(maybe)} {CASE_TEXT['fp32-accurate']} (undocumented: check-neuron measures it)"
            )
        return line
    return (
        f"{where} by {' and '.join(maybe)} {CASE_TEXT['fp32-accurate']} ({basis}); that precision is "
        "undocumented: check-neuron measures it"
    )
