"""Stage 4 of the demo: one PNG with the accuracy/cost frontier of the precision settings and the network's time
per backend. Drawn with matplotlib's object API on an Agg canvas: no pyplot, no global backend switch."""

from __future__ import annotations

from pathlib import Path

from .chemistry import CHEMICAL_ACCURACY, MICROHARTREE, Row
from .network import Timing

# |error| of 0 (an exact energy) cannot sit on a log axis: it is drawn on this line, labelled "exact (0)"
FLOOR = 1e-16
# points closer than this on both log axes (a factor of 10 ** NEAR) would hide each other: they are spread in time
NEAR = 0.04
# why the trn bar can be the longer one on a CPU: the network panel's caption
NETWORK_CAPTION = (
    "On this CPU the trn and torch backends run the same torch\n"
    "kernels. trn plans each step once and runs the steps the\n"
    "slices share once; it adds its planner's Python per step,\n"
    "and one inf/nan sum per operand of a complex product.\n"
    "{per_step}On Trainium the steps run on the NeuronCore."
)


def plotted_error(error: float) -> tuple[float, bool]:
    """Where an energy error sits on the log axis, and whether it is exact (0, drawn at FLOOR and labelled)."""
    return (FLOOR, True) if error == 0 else (abs(error), False)


def spread(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The (time, error) points, each moved right in time by factors of 10 ** NEAR until it is at least NEAR
    decades (on either axis) from every point before it, so that no setting hides another."""
    import math

    placed: list[tuple[float, float]] = []
    for x, y in points:
        while any(abs(math.log10(x / px)) < NEAR and abs(math.log10(y / py)) < NEAR for px, py in placed):
            x *= 10**NEAR
        placed.append((x, y))
    return placed


def log_ticks(axes_axis) -> None:
    """At least three labelled ticks on a log axis of any span: 1, 2 and 5 of each decade, plain numbers."""
    from matplotlib.ticker import LogLocator, NullFormatter, StrMethodFormatter

    axes_axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axes_axis.set_major_formatter(StrMethodFormatter("{x:g}"))
    axes_axis.set_minor_formatter(NullFormatter())


def write_png(path: Path, rows: list[Row], timings: list[Timing], title: str, per_step: str = "") -> Path:
    """The figure; ``per_step``: a measured line for the network caption (what trn's extra time is per step)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(17, 6.4), layout="constrained")
    FigureCanvasAgg(figure)
    cpu, trn2, network = figure.subplots(1, 3, width_ratios=(1.2, 1.2, 0.8))
    colours = {r.setting: f"C{i % 10}" for i, r in enumerate(rows)}
    _frontier(cpu, rows, [r.seconds for r in rows], "wall time on this CPU (s)", colours)
    modelled = [r for r in rows if r.trn2_seconds is not None]
    _frontier(
        trn2, modelled, [r.trn2_seconds * 1e3 for r in modelled], "modelled trn2 time of the contractions (ms)", colours
    )
    cpu.set_title("DF-MP2 energy error against PySCF, per precision setting")
    trn2.set_title("the same errors against the trn2 cost model")
    _network(network, timings, per_step)
    handles, labels = cpu.get_legend_handles_labels()  # the CPU panel has every setting
    figure.legend(handles, labels, loc="outside lower center", ncol=5, fontsize=8)
    figure.suptitle(title)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    return path


def _frontier(axes, rows: list[Row], times: list[float], xlabel: str, colours: dict) -> None:
    placed = spread([(seconds, plotted_error(row.error)[0]) for row, seconds in zip(rows, times, strict=True)])
    for row, (seconds, error) in zip(rows, placed, strict=True):
        exact = plotted_error(row.error)[1]
        marker = "s" if str(row.setting.dtype) == "float64" else "o"
        # targets land on the mode they picked: a hollow marker keeps both visible
        hollow = row.setting.target is not None
        axes.scatter(
            seconds,
            error,
            marker=marker,
            s=90 if hollow else 40,
            zorder=3,
            facecolors="none" if hollow else colours[row.setting],
            edgecolors=colours[row.setting],
            label=f"{row.setting.label} ({row.setting.dtype}): {_modes(row.modes)}",
        )
        if exact:
            axes.annotate("exact (0)", (seconds, error), textcoords="offset points", xytext=(6, 4), fontsize=8)
    axes.axhline(CHEMICAL_ACCURACY, color="tab:red", linestyle="--", linewidth=1)
    axes.axhline(MICROHARTREE, color="tab:gray", linestyle=":", linewidth=1)
    axes.text(
        0.01,
        CHEMICAL_ACCURACY * 1.3,
        "chemical accuracy, 1.6 mEh",
        color="tab:red",
        fontsize=8,
        transform=axes.get_yaxis_transform(),
    )
    axes.text(0.01, MICROHARTREE * 1.3, "1 uEh", color="tab:gray", fontsize=8, transform=axes.get_yaxis_transform())
    if any(plotted_error(row.error)[1] for row in rows):
        axes.axhline(FLOOR, color="black", linewidth=0.6)
        axes.text(
            0.01,
            FLOOR * 1.6,
            "exact results (error 0) are drawn on this line",
            fontsize=8,
            transform=axes.get_yaxis_transform(),
        )
    axes.set_xscale("log")
    axes.set_yscale("log")
    log_ticks(axes.xaxis)
    axes.set_xlabel(xlabel + " (points that would coincide are spread in time)")
    axes.set_ylabel("|E_corr - E_corr(PySCF)| (Eh)")
    axes.grid(True, which="major", alpha=0.3)


def _modes(modes: tuple[str, ...]) -> str:
    return modes[0] if len(set(modes)) == 1 else ", ".join(modes)


def _network(axes, timings: list[Timing], per_step: str) -> None:
    names = [t.backend for t in timings]
    medians = [t.median for t in timings]
    bars = axes.bar(names, medians, color=["tab:blue", "tab:orange", "tab:green"][: len(names)])
    axes.bar_label(bars, labels=[f"{m:.3g} s" for m in medians], fontsize=8)
    axes.set_ylabel("median time (s)")
    axes.set_title("circuit amplitude on one sliced tree")
    axes.text(
        0.0,
        -0.12,
        NETWORK_CAPTION.format(per_step=per_step + "\n" if per_step else ""),
        fontsize=8,
        transform=axes.transAxes,
        verticalalignment="top",
    )
