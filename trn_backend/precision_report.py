"""``python -m trn_backend precision-report``: every precision mode measured against its published bound.

For each mode and contracted length K it multiplies an M x K by a K x N operand with the mode's torch reference
on a torch device (the CPU by default; ``--device cuda`` measures the modes on a GPU's own arithmetic), and
reports the bound, the measured max and mean componentwise error (units of |A||B|) against a more precise
reference, the cost in bf16 Tensor Engine passes, and the median time; then it plots error against K per mode.
With --device-model trn2 (or trn1) it adds each mode's modelled NKI kernel time on that NeuronCore, its ratio to
fast, the binding engine and the Vector Engine's share, and plots the accuracy/cost frontier at the largest K.
With --front it runs nothing: it prints the NKI modes on trn2 as a front of modelled time against published bound
(matmul n^3, n = 1024 to 8192) and which modes another dominates (docs/precision.md, "Modes on Trainium").
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import cast

import numpy as np
import torch

from . import _device, _precision
from .kernels import reference
from .kernels.nki import cost

MODES = ("native", "fast", "sr", "dd", "bf16x6", "ozaki", "fp64")
KS = (16, 512, 4096)
DEVICE_KERNEL = "matmul"  # the report's products are 2-D: one nki.matmul[mode] call each
NO_DEVICE_KERNEL = "host fp64: no device kernel"
COLORS = {mode: f"C{i}" for i, mode in enumerate(MODES)}  # one colour per mode in both panels


@dataclasses.dataclass(frozen=True)
class Row:
    """One mode at one K: its published bound, what it measured, what it costs."""

    mode: str  # the registry name
    label: str  # with its parameters, e.g. "ozaki(slices=4) ran 5"
    K: int
    passes: int | None
    bound: float | None
    max_error: float
    mean_error: float
    seconds: float
    slices: int | None = None  # ozaki: the digit slices it ran (its kernel's cost depends on them)


def operands(kind: str, M: int, K: int, N: int, dtype: torch.dtype, seed: int = 0):
    """Test operands: "normal", "uniform" (positive) or "cancel" (rows with large equal-and-opposite terms)."""
    g = np.random.default_rng(seed)
    if kind == "uniform":
        a, b = g.random((M, K)), g.random((K, N))
    else:
        a, b = g.standard_normal((M, K)), g.standard_normal((K, N))
    if kind == "cancel" and K >= 2:
        r = 1e4 * g.standard_normal(M)
        a[:, 0], a[:, 1], b[1] = r, -r, b[0]
    return torch.from_numpy(a).to(dtype), torch.from_numpy(b).to(dtype)


def _reference(a: torch.Tensor, b: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """A @ B and |A| @ |B|: float64 for float32 data (error ~K 2**-53), extended precision for float64 data."""
    wide = np.float64 if a.dtype is torch.float32 else np.longdouble
    x, y = a.double().numpy().astype(wide), b.double().numpy().astype(wide)
    return x @ y, np.abs(x) @ np.abs(y)


def _median_seconds(call, repeats: int, device: torch.device) -> float:
    def timed() -> float:
        start = time.perf_counter()
        call()
        if device.type == "cuda":  # kernels run asynchronously: time them to completion
            torch.cuda.synchronize(device)
        return time.perf_counter() - start

    timed()  # warm-up: first calls pay allocation and dispatch costs
    return statistics.median(timed() for _ in range(repeats))


def measure(
    ks: Sequence[int] = KS,
    *,
    size: int = 256,
    dtype: torch.dtype = torch.float32,
    kind: str = "normal",
    repeats: int = 3,
    device: torch.device | str = "cpu",
) -> list[Row]:
    """Every mode at every K on ``size`` x K @ K x ``size`` operands (the same operands for every mode), run on
    ``device``; the reference is computed on the host."""
    device = _device.normalize(device, "precision-report --device")
    rows = []
    for K in ks:
        a, b = operands(kind, size, K, size, dtype, seed=K)
        exact, scale = _reference(a, b)
        a, b = a.to(device), b.to(device)
        for mode in MODES:
            resolved = _precision.resolve(dtype, K, a.device, precision=mode)
            call = functools.partial(reference.MODES[mode], a, b, **resolved.kwargs)
            error = np.abs(call().cpu().numpy().astype(exact.dtype) - exact) / np.where(scale > 0, scale, 1)
            # ozaki's slice count, an int (_precision checks it); 0 for the modes without one
            label, slices = resolved.label, cast(int, resolved.kwargs.get("slices", 0))
            if mode == "ozaki":  # the kernel adds slices where the data's dynamic range needs them
                slices = reference.ozaki_slices(a, b, slices)
                label += "" if f"={slices})" in label else f" ran {slices}"
            rows.append(
                Row(
                    mode,
                    label,
                    K,
                    _precision.MODES[mode].passes(slices),
                    resolved.bound,
                    float(error.max()),
                    float(error.mean()),
                    _median_seconds(call, repeats, device),
                    slices if mode == "ozaki" else None,
                )
            )
    return rows


def host_only(mode: str, dtype: torch.dtype) -> bool:
    """Whether ``mode`` on ``dtype`` data runs on the host, so that no NKI kernel time models it.
    fp64 sums in float64 on the host; the NeuronCore has no float64 arithmetic, so native float64 is host-side too."""
    return mode == "fp64" or (mode == "native" and dtype is torch.float64)


def modelled(rows: Sequence[Row], *, size: int, dtype: torch.dtype, generation: str) -> list[cost.Estimate | None]:
    """Per row, the modelled cost of its mode's NKI kernel on ``generation`` at the row's size x K @ K x size shape.
    None where the mode has no device kernel (``host_only``); ozaki is modelled with the slices it ran."""
    return [
        None
        if host_only(r.mode, dtype)
        else cost.modelled(
            DEVICE_KERNEL, r.mode, (1, size, r.K, size), generation, float64=dtype is torch.float64, slices=r.slices
        )
        for r in rows
    ]


def relative_to_fast(rows: Sequence[Row], costs: Sequence[cost.Estimate | None]) -> list[float | None]:
    """Per row, its modelled time over fast's at the same K: fast is one bf16 pass, the natural unit of cost.
    None where the row, or fast at its K, has no modelled time."""
    fast = {r.K: c.seconds for r, c in zip(rows, costs, strict=True) if r.mode == "fast" and c is not None}
    return [None if c is None or not fast.get(r.K) else c.seconds / fast[r.K] for r, c in zip(rows, costs, strict=True)]


def pareto_front(points: Sequence[tuple[float, float]]) -> list[int]:
    """Indices of the (cost, error) points no other point dominates (no costlier, no less accurate, better in one),
    ordered by cost then error: the frontier's line. Equal points are all kept; a tie in one coordinate keeps the
    point better in the other."""

    def dominated(p: tuple[float, float]) -> bool:
        return any(q[0] <= p[0] and q[1] <= p[1] and q != p for q in points)

    return sorted((i for i, p in enumerate(points) if not dominated(p)), key=lambda i: points[i])


def _device_cells(estimate: cost.Estimate | None, ratio: float | None) -> str:
    """The modelled columns of one row: time, ratio to fast, binding engine, Vector Engine share.
    A mode without a device kernel says so in the time column."""
    if estimate is None:
        return f" {NO_DEVICE_KERNEL} | - | - | - |"
    vs_fast = "-" if ratio is None else f"{ratio:.1f}x"
    seconds = cost.format_seconds(estimate.seconds)
    return f" {seconds} | {vs_fast} | {estimate.bound_by} | {estimate.share('vector'):.0%} |"


def table(rows: Sequence[Row], costs: Sequence[cost.Estimate | None] | None = None, generation: str = "trn2") -> str:
    """The rows as a markdown table; with ``costs`` (from ``modelled``), four modelled columns on ``generation``:
    kernel time, time relative to fast at the same K, the binding engine, and the Vector Engine's busy share."""
    header = "| mode | K | bf16 passes | bound | max error | mean error | max / bound | time (ms) |"
    rule = "|---|---:|---:|---:|---:|---:|---:|---:|"
    if costs is not None:
        header += f" {generation} time | vs fast | bound by | vector busy |"
        rule += "---:|---:|---|---:|"
        ratios = relative_to_fast(rows, costs)
    lines = [header, rule]
    for i, r in enumerate(rows):
        bound = "-" if r.bound is None else f"{r.bound:.2e}"
        ratio = "-" if not r.bound else f"{r.max_error / r.bound:.3f}"
        passes = "-" if r.passes is None else str(r.passes)
        line = (
            f"| {r.label} | {r.K} | {passes} | {bound} | {r.max_error:.2e} | {r.mean_error:.2e} | "
            f"{ratio} | {r.seconds * 1e3:.1f} |"
        )
        lines.append(line if costs is None else line + _device_cells(costs[i], ratios[i]))
    return "\n".join(lines)


def _error_panel(ax, rows: Sequence[Row], title: str) -> None:
    """Measured max error (solid) and bound (dashed) against K per mode, log-log, on ``ax``.
    The first panel: how each mode's error grows with K, against what it promises."""
    from matplotlib.ticker import NullFormatter

    for mode in dict.fromkeys(r.mode for r in rows):
        mine = [r for r in rows if r.mode == mode]
        ks = [r.K for r in mine]
        # sr coincides with fast wherever the output is float32/float64: draw it so both stay visible
        style = {"linestyle": ":", "marker": "x"} if mode == "sr" else {"marker": "o"}
        ax.plot(ks, [max(r.max_error, 1e-20) for r in mine], label=mode, color=COLORS.get(mode), **style)
        if all(r.bound for r in mine):
            ax.plot(ks, [r.bound for r in mine], linestyle="--", color=COLORS.get(mode), linewidth=0.8)
    ax.set(xscale="log", yscale="log", xlabel="K (contracted length)", ylabel="max error / (|A||B|)", title=title)
    ax.set_xticks(sorted({r.K for r in rows}), [str(k) for k in sorted({r.K for r in rows})])
    ax.xaxis.set_minor_formatter(NullFormatter())  # the K ticks only: minor labels crowd a short range
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(title="measured (solid), bound (dashed)", fontsize="small", loc="center left", bbox_to_anchor=(1.01, 0.5))


def _point_label(row: Row, ratio: float | None) -> str:
    """A frontier point's label: the mode (ozaki with the slices it ran) and its cost relative to fast."""
    name = f"ozaki({row.slices} slices)" if row.mode == "ozaki" else row.mode
    return name if ratio is None else f"{name} {ratio:.1f}x"


def _frontier_panel(ax, rows: Sequence[Row], costs: Sequence[cost.Estimate | None], title: str) -> None:
    """Measured max error against modelled kernel time at the report's largest K, one point per mode, log-log,
    with the line through the Pareto-optimal modes; host-only modes (fp64) are a horizontal line, off the frontier."""
    K = max(r.K for r in rows)
    ratios = relative_to_fast(rows, costs)
    at_k = [(r, c, q) for r, c, q in zip(rows, costs, ratios, strict=True) if r.K == K]
    device = [(r, c, q) for r, c, q in at_k if c is not None]
    points = [(c.seconds * 1e6, max(r.max_error, 1e-20)) for r, c, _ in device]
    for (r, _, q), (x, y) in zip(device, points, strict=True):
        ax.scatter(x, y, color=COLORS.get(r.mode), marker="x" if r.mode == "sr" else "o", zorder=3)
        below = r.mode == "sr"  # sr has fast's error: its label goes under the point, fast's over it
        ax.annotate(
            _point_label(r, q), (x, y), textcoords="offset points", xytext=(5, -12 if below else 5), fontsize="small"
        )
    front = pareto_front(points)
    ax.plot(
        [points[i][0] for i in front],
        [points[i][1] for i in front],
        color="black",
        linewidth=1,
        zorder=2,
        label="Pareto frontier: " + ", ".join(device[i][0].mode for i in front),
    )
    for r, c, _ in at_k:
        if c is None:
            ax.axhline(
                max(r.max_error, 1e-20),
                color=COLORS.get(r.mode),
                linestyle=":",
                linewidth=1,
                label=f"{r.mode}: {NO_DEVICE_KERNEL} (off the frontier)",
            )
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="modelled kernel time (us)",
        ylabel=f"max error / (|A||B|) at K={K}",
        title=title,
    )
    _plain_log_ticks(ax.xaxis)
    fast = next((c.seconds * 1e6 for r, c, _ in device if r.mode == "fast"), None)
    if fast:  # the same axis in fast's unit: one bf16 pass
        top = ax.secondary_xaxis("top", functions=(lambda x: x / fast, lambda x: x * fast))
        top.set_xlabel("cost relative to fast (as in the point labels)")
        _plain_log_ticks(top.xaxis)
    ax.grid(True, which="both", alpha=0.3)
    ax.margins(x=0.2, y=0.1)  # room for the rightmost point's label
    ax.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.12), ncols=2)


def _plain_log_ticks(axis) -> None:
    """Ticks at 1, 2 and 5 per decade labelled as plain numbers, no minor labels, on a log ``axis``.
    A frontier spans one or two decades, where the default labels overlap or are too few to read."""
    from matplotlib import ticker

    axis.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(ticker.NullFormatter())


def figure(
    rows: Sequence[Row], title: str, costs: Sequence[cost.Estimate | None] | None = None, frontier_title: str = ""
):
    """The report's matplotlib Figure: error against K, and with ``costs`` the accuracy/cost frontier beside it.
    Built apart from ``plot`` so that tests can look at its axes without reading a PNG back."""
    import matplotlib

    matplotlib.use("Agg")  # no display: the report runs headless
    from matplotlib import pyplot as plt

    if costs is None:
        fig, ax = plt.subplots(figsize=(10, 5.5))
        _error_panel(ax, rows, title)
    else:
        fig, (ax, frontier) = plt.subplots(1, 2, figsize=(18, 6), gridspec_kw={"width_ratios": (1, 1)})
        _error_panel(ax, rows, title)
        _frontier_panel(frontier, rows, costs, frontier_title)
    fig.tight_layout()
    return fig


def plot(
    rows: Sequence[Row],
    path: str,
    title: str,
    costs: Sequence[cost.Estimate | None] | None = None,
    frontier_title: str = "",
) -> None:
    """The report's figure (``figure``) into a PNG at ``path``.
    One panel without ``costs``, two with them."""
    from matplotlib import pyplot as plt

    fig = figure(rows, title, costs, frontier_title)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The precision-report subcommand's options."""
    parser.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    parser.add_argument("--inputs", default="normal", choices=("normal", "uniform", "cancel"))
    parser.add_argument("--size", type=int, default=256, help="M = N of the M x K @ K x N products (default 256)")
    parser.add_argument("--k", type=int, nargs="+", default=list(KS), help="contracted lengths (default 16 512 4096)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per cell; the median is shown")
    parser.add_argument(
        "--png",
        default=str(Path("build") / "precision-report.png"),
        help="where the plot goes (default build/precision-report.png; its folder is created)",
    )
    parser.add_argument(
        "--device",
        default="cpu",
        help="torch device the modes run on (default cpu; e.g. cuda measures a GPU's arithmetic)",
    )
    parser.add_argument(
        "--device-model",
        choices=tuple(cost.GENERATIONS),
        default=None,
        help="add each mode's modelled NKI kernel time on this NeuronCore generation, and the "
        "accuracy/cost frontier to the plot (default: none)",
    )
    parser.add_argument(
        "--front",
        action="store_true",
        help="measure nothing: print the NKI modes' front on trn2 (modelled time against published "
        "bound, matmul n^3 for n = 1024 to 8192) and which modes another dominates",
    )
    parser.add_argument(
        "--docs",
        metavar="FILE",
        default=None,
        help="with --front: also rewrite FILE's block between <!-- front-table --> markers (docs/precision.md)",
    )


def _model_note(generation: str) -> str:
    """The lines under the report's heading that say what the modelled columns are.
    Printed only with --device-model, so the plain report reads as before."""
    return (
        f"modelled: one nki.{DEVICE_KERNEL}[mode] call on a {generation} NeuronCore (kernels/nki/cost.py: "
        "engines overlap, the busiest sets the time; no launch overhead),\n"
        "ozaki with the slices it ran; vs fast = time / fast's at the same K; vector busy = the Vector "
        "Engine's share of the time; fp64 sums in float64 on the host: no device kernel, no modelled time\n"
    )


def run(args: argparse.Namespace) -> int:
    """Measure, print the table, write the plot; with --device-model, the modelled kernel costs and frontier too;
    with --front, only the modes' front on trn2 (and with --docs, that block of the document rewritten)."""
    if args.docs and not args.front:
        raise ValueError("precision-report: --docs goes with --front")
    if args.front:
        from . import _neuron_front

        text = _neuron_front.markdown()
        print(text, end="")
        if args.docs:
            _neuron_front.update_docs(args.docs, text)
            print(f"\nwrote the front-table block of {args.docs}")
        return 0
    dtype = getattr(torch, args.dtype)
    rows = measure(args.k, size=args.size, dtype=dtype, kind=args.inputs, repeats=args.repeats, device=args.device)
    ref = "float64" if dtype is torch.float32 else "extended-precision"
    where = "CPU" if args.device == "cpu" else args.device
    print(
        f"{args.size}xK @ Kx{args.size}, {args.dtype} {args.inputs} inputs, errors / (|A||B|) against a {ref} "
        f"reference, emulation on {where} (times are this host's, not Trainium's)\n"
    )
    generation = args.device_model
    costs = None if generation is None else modelled(rows, size=args.size, dtype=dtype, generation=generation)
    if generation is not None:
        print(_model_note(generation))
    print(table(rows, costs, generation or "trn2"))
    if dtype not in (torch.bfloat16, torch.float16) and any(r.mode == "sr" for r in rows):
        print(
            f"\nsr equals fast on {args.dtype} outputs, bit for bit: sr rounds stochastically only where an fp32 "
            "result is rounded to a bf16/fp16 output, so here there is nothing to round at random"
        )
    K = max(args.k)
    plot(
        rows,
        args.png,
        f"{args.dtype} {args.inputs} inputs, {args.size}xK @ Kx{args.size}",
        costs,
        f"accuracy / cost on a {generation} NeuronCore, {args.size}x{K} @ {K}x{args.size} {args.dtype}",
    )
    print(f"\nplot: {args.png}")
    return 0
