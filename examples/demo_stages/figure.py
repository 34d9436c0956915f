"""Stage 4 of the demo: one PNG with the accuracy/cost frontier of the precision settings and the network's time
per backend. Drawn with matplotlib's object API on an Agg canvas: no pyplot, no global backend switch."""

from __future__ import annotations

from pathlib import Path

from .chemistry import CHEMICAL_ACCURACY, MICROHARTREE, Row
from .network import Timing

# |error| of 0 (an exact energy) cannot sit on a log axis: it is drawn here and marked as such
FLOOR = 1e-16


def write_png(path: Path, rows: list[Row], timings: list[Timing], title: str) -> Path:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(17, 6.4), layout="constrained")
    FigureCanvasAgg(figure)
    cpu, trn2, network = figure.subplots(1, 3, width_ratios=(1.2, 1.2, 0.8))
    colours = {r.setting: f"C{i % 10}" for i, r in enumerate(rows)}
    _frontier(cpu, rows, [r.seconds for r in rows], "wall time on this CPU (s)", colours)
    modelled = [r for r in rows if r.trn2_seconds is not None]
    _frontier(trn2, modelled, [r.trn2_seconds * 1e3 for r in modelled], "modelled trn2 time of the contractions (ms)",
              colours)
    cpu.set_title("DF-MP2 energy error against PySCF, per precision setting")
    trn2.set_title("the same errors against the trn2 cost model")
    _network(network, timings)
    handles, labels = cpu.get_legend_handles_labels()  # the CPU panel has every setting
    figure.legend(handles, labels, loc="outside lower center", ncol=5, fontsize=8)
    figure.suptitle(title)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    return path


def _frontier(axes, rows: list[Row], times: list[float], xlabel: str, colours: dict) -> None:
    from matplotlib.ticker import NullFormatter

    for row, seconds in zip(rows, times, strict=True):
        error = max(abs(row.error), FLOOR)
        marker = "s" if str(row.setting.dtype) == "float64" else "o"
        # targets land on the mode they picked: a hollow marker keeps both visible
        hollow = row.setting.target is not None
        axes.scatter(seconds, error, marker=marker, s=90 if hollow else 40, zorder=3,
                     facecolors="none" if hollow else colours[row.setting], edgecolors=colours[row.setting],
                     label=f"{row.setting.label} ({row.setting.dtype}): {_modes(row.modes)}")
    axes.axhline(CHEMICAL_ACCURACY, color="tab:red", linestyle="--", linewidth=1)
    axes.axhline(MICROHARTREE, color="tab:gray", linestyle=":", linewidth=1)
    axes.text(0.01, CHEMICAL_ACCURACY * 1.3, "chemical accuracy, 1.6 mEh", color="tab:red", fontsize=8,
              transform=axes.get_yaxis_transform())
    axes.text(0.01, MICROHARTREE * 1.3, "1 uEh", color="tab:gray", fontsize=8, transform=axes.get_yaxis_transform())
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.xaxis.set_minor_formatter(NullFormatter())
    axes.set_xlabel(xlabel)
    axes.set_ylabel("|E_corr - E_corr(PySCF)| (Eh)")
    axes.grid(True, which="major", alpha=0.3)


def _modes(modes: tuple[str, ...]) -> str:
    return modes[0] if len(set(modes)) == 1 else ", ".join(modes)


def _network(axes, timings: list[Timing]) -> None:
    names = [t.backend for t in timings]
    medians = [t.median for t in timings]
    bars = axes.bar(names, medians, color=["tab:blue", "tab:orange", "tab:green"][: len(names)])
    axes.bar_label(bars, labels=[f"{m:.3g} s" for m in medians], fontsize=8)
    axes.set_ylabel("median time (s)")
    axes.set_title("circuit amplitude on one sliced tree")
