"""``python -m trn_backend precision-report``: every precision mode measured against its published bound.

For each mode and contracted length K it multiplies an M x K by a K x N operand on the CPU emulation, and
reports the bound, the measured max and mean componentwise error (units of |A||B|) against a more precise
reference, the cost in bf16 Tensor Engine passes, and the median CPU time; then it plots error against K per mode.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import statistics
import time
from collections.abc import Sequence

import numpy as np
import torch

from . import _precision
from .kernels import reference

MODES = ("native", "fast", "sr", "dd", "bf16x6", "ozaki", "kahan")
KS = (16, 512, 4096)


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


def _median_seconds(call, repeats: int) -> float:
    call()  # warm-up: first calls pay allocation and dispatch costs
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(ks: Sequence[int] = KS, *, size: int = 256, dtype: torch.dtype = torch.float32,
            kind: str = "normal", repeats: int = 3) -> list[Row]:
    """Every mode at every K on ``size`` x K @ K x ``size`` operands (the same operands for every mode)."""
    rows = []
    for K in ks:
        a, b = operands(kind, size, K, size, dtype, seed=K)
        exact, scale = _reference(a, b)
        for mode in MODES:
            resolved = _precision.resolve(dtype, K, a.device, precision=mode)
            call = functools.partial(reference.MODES[mode], a, b, **resolved.kwargs)
            error = np.abs(call().numpy().astype(exact.dtype) - exact) / np.where(scale > 0, scale, 1)
            label, slices = resolved.label, resolved.kwargs.get("slices", 0)
            if mode == "ozaki":  # the kernel adds slices where the data's dynamic range needs them
                slices = reference.ozaki_slices(a, b, slices)
                label += "" if f"={slices})" in label else f" ran {slices}"
            rows.append(Row(mode, label, K, _precision.MODES[mode].passes(slices), resolved.bound,
                            float(error.max()), float(error.mean()), _median_seconds(call, repeats)))
    return rows


def table(rows: Sequence[Row]) -> str:
    """The rows as a markdown table."""
    lines = ["| mode | K | bf16 passes | bound | max error | mean error | max / bound | time (ms) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        bound = "-" if r.bound is None else f"{r.bound:.2e}"
        ratio = "-" if not r.bound else f"{r.max_error / r.bound:.3f}"
        passes = "-" if r.passes is None else str(r.passes)
        lines.append(f"| {r.label} | {r.K} | {passes} | {bound} | {r.max_error:.2e} | {r.mean_error:.2e} | "
                     f"{ratio} | {r.seconds * 1e3:.1f} |")
    return "\n".join(lines)


def plot(rows: Sequence[Row], path: str, title: str) -> None:
    """Measured max error (solid) and bound (dashed) against K per mode, log-log, into a PNG at ``path``."""
    import matplotlib

    matplotlib.use("Agg")  # no display: the report runs headless
    from matplotlib import pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 5.5))
    for mode in dict.fromkeys(r.mode for r in rows):
        mine = [r for r in rows if r.mode == mode]
        ks = [r.K for r in mine]
        # sr coincides with fast wherever the output is float32/float64: draw it so both stay visible
        style = {"linestyle": ":", "marker": "x"} if mode == "sr" else {"marker": "o"}
        line, = ax.plot(ks, [max(r.max_error, 1e-20) for r in mine], label=mode, **style)
        if all(r.bound for r in mine):
            ax.plot(ks, [r.bound for r in mine], linestyle="--", color=line.get_color(), linewidth=0.8)
    ax.set(xscale="log", yscale="log", xlabel="K (contracted length)", ylabel="max error / (|A||B|)",
           title=title)
    ax.set_xticks(sorted({r.K for r in rows}), [str(k) for k in sorted({r.K for r in rows})])
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(title="measured (solid), bound (dashed)", fontsize="small", loc="center left",
              bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The precision-report subcommand's options."""
    parser.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    parser.add_argument("--inputs", default="normal", choices=("normal", "uniform", "cancel"))
    parser.add_argument("--size", type=int, default=256, help="M = N of the M x K @ K x N products (default 256)")
    parser.add_argument("--k", type=int, nargs="+", default=list(KS), help="contracted lengths (default 16 512 4096)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per cell; the median is shown")
    parser.add_argument("--png", default="precision-report.png", help="where the plot goes")


def run(args: argparse.Namespace) -> int:
    """Measure, print the table, write the plot."""
    dtype = getattr(torch, args.dtype)
    rows = measure(args.k, size=args.size, dtype=dtype, kind=args.inputs, repeats=args.repeats)
    ref = "float64" if dtype is torch.float32 else "extended-precision"
    print(f"{args.size}xK @ Kx{args.size}, {args.dtype} {args.inputs} inputs, errors / (|A||B|) against a {ref} "
          f"reference, CPU emulation (times are this host's, not Trainium's)\n")
    print(table(rows))
    plot(rows, args.png, f"{args.dtype} {args.inputs} inputs, {args.size}xK @ Kx{args.size}")
    print(f"\nplot: {args.png}")
    return 0
