"""Measurements -> ``cost.Calibration``: the fit behind ``check-neuron --calibrate``.

The measurement file is what ``check-neuron --json`` writes (``"format": FORMAT``); the fit reads four of its
keys (each empty or null where nothing was measured, as on the CPU model):

- ``dma``: rows ``{"run_bytes": R, "bytes": S, "transfers": n, "seconds": t}``: a kernel of n dma_copy calls,
  each moving S bytes HBM -> SBUF in contiguous runs of R bytes, took t seconds (its median less the warm launch);
- ``launch``: ``{"cold_s", "warm_s"}`` of the smallest kernel;
- ``compile``: rows ``{"instructions": i, "first_s", "warm_s"}`` of one kernel at several shapes;
- ``tensor``: ``{"seconds", "tensor_s"}``: a large fast matmul's measured time (less the warm launch) and its
  modelled Tensor Engine time at efficiency 1.

A constant whose measurement is absent keeps its default (``Fit.kept`` says why); a measurement present but too
thin to fit, or fitting to a non-physical value (a negative rate, size or time), raises a ValueError naming it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

import numpy as np

from . import cost

__all__ = ["FORMAT", "Fit", "fit"]

FORMAT = "trn_backend check-neuron measurements, version 1"  # the measurement file's "format" field


@dataclasses.dataclass(frozen=True)
class Fit:
    """The fitted calibration, and for each field left at its default, why."""

    calibration: cost.Calibration
    kept: dict[str, str]


def _number(row: Mapping, key: str, what: str) -> float:
    """Field ``key`` of ``row`` as a finite float, or a ValueError naming the measurement ``what``."""
    if not isinstance(row, Mapping) or key not in row:
        raise ValueError(f"calibrate: {what} has no {key!r} (expected an object with {key!r}; rerun check-neuron "
                         "--json to write a complete file)")
    value = row[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"calibrate: {what}'s {key!r} is {value!r}, expected a finite number")
    return float(value)


def _rows(data: Mapping, key: str) -> list[Mapping]:
    """The list under ``key`` (absent or null: empty)."""
    rows = data.get(key) or []
    if not isinstance(rows, list):
        raise ValueError(f"calibrate: {key!r} is a {type(rows).__name__}, expected a list of measurement rows")
    return rows


def _physical(values: Mapping[str, float], what: str) -> None:
    """A ValueError when a fitted constant is negative (no rate, size or time is)."""
    bad = {name: value for name, value in values.items() if not value >= 0}
    if bad:
        shown = ", ".join(f"{name} = {value:.3g}" for name, value in bad.items())
        raise ValueError(f"calibrate: the {what} measurements are inconsistent: they fit {shown}, which cannot be "
                         "negative (noisy timings: rerun check-neuron --json on an idle device)")


def _lstsq(features: np.ndarray, seconds: np.ndarray, what: str, needs: str) -> np.ndarray:
    """Least squares of ``seconds`` on the columns of ``features``, scaled to unit norm first (the columns differ by
    orders of magnitude); a ValueError saying what ``needs`` when the columns do not determine the solution."""
    scale = np.linalg.norm(features, axis=0)
    if features.shape[0] < features.shape[1] or not scale.all() or \
            np.linalg.matrix_rank(features / scale) < features.shape[1]:
        raise ValueError(f"calibrate: too few {what} measurements to fit: it needs {needs} "
                         f"({features.shape[0]} rows given)")
    solution, *_ = np.linalg.lstsq(features / scale, seconds, rcond=None)
    return solution / scale


def _dma(rows: Sequence[Mapping]) -> dict[str, float]:
    """dma_bytes_per_s, dma_half_run_bytes, dma_fixed_s from the DMA rows. One dma_copy of S bytes in runs of R
    costs f + S (R + h) / (R b); per transfer that is linear in (1, S, S / R): t / n = f + S / b + (h / b) S / R,
    fitted by least squares for x = (f, 1 / b, h / b), then b = 1 / x1, h = x2 / x1."""
    table = np.array([[_number(r, key, f"dma row {i}") for key in ("run_bytes", "bytes", "transfers", "seconds")]
                      for i, r in enumerate(rows)]).reshape(-1, 4)
    run, size, transfers, seconds = table.T
    if (run <= 0).any() or (size <= 0).any() or (transfers <= 0).any():
        raise ValueError("calibrate: a dma row has a run length, size or transfer count <= 0")
    features = np.stack((np.ones_like(size), size, size / run), axis=1)
    fixed, per_byte, per_run_byte = _lstsq(features, seconds / transfers, "DMA",
                                           "at least two transfer sizes and two run lengths")
    _physical({"the time per byte": per_byte}, "DMA")
    if per_byte == 0:
        raise ValueError("calibrate: the DMA measurements are inconsistent: the time does not grow with the bytes")
    found = {"dma_bytes_per_s": 1 / per_byte, "dma_half_run_bytes": per_run_byte / per_byte, "dma_fixed_s": fixed}
    _physical(found, "DMA")
    return found


def _compile(rows: Sequence[Mapping]) -> dict[str, float]:
    """compile_fixed_s and compile_s_per_instruction: the first call's time less the warm one, linear in the
    kernel's instruction count (least squares)."""
    table = np.array([[_number(r, key, f"compile row {i}") for key in ("instructions", "first_s", "warm_s")]
                      for i, r in enumerate(rows)]).reshape(-1, 3)
    instructions, first, warm = table.T
    features = np.stack((np.ones_like(instructions), instructions), axis=1)
    fixed, per_instruction = _lstsq(features, first - warm, "compile",
                                    "at least two shapes with different instruction counts")
    found = {"compile_fixed_s": fixed, "compile_s_per_instruction": per_instruction}
    _physical(found, "compile")
    return found


def fit(data: Mapping, source: str) -> Fit:
    """The calibration the measurements in ``data`` (a check-neuron --json object) determine, defaults elsewhere;
    ``source`` (the measurement file) goes into its ``source`` field."""
    if not isinstance(data, Mapping) or data.get("format") != FORMAT:
        got = data.get("format") if isinstance(data, Mapping) else type(data).__name__
        raise ValueError(f"calibrate: {source} is not a check-neuron --json measurement file (format {got!r}, "
                         f"expected {FORMAT!r}); write one with python -m trn_backend check-neuron --json FILE")
    found: dict[str, float] = {}
    kept: dict[str, str] = {}
    absent = "not measured (no Neuron device, or its probe did not run)"
    dma_rows = _rows(data, "dma")
    if dma_rows:
        found.update(_dma(dma_rows))
    else:
        kept.update(dict.fromkeys(("dma_bytes_per_s", "dma_half_run_bytes", "dma_fixed_s"), f"DMA {absent}"))
    launch = data.get("launch")
    if launch is not None:
        found["launch_s"] = _number(launch, "warm_s", "launch")
        _physical({"launch_s": found["launch_s"]}, "launch")
    else:
        kept["launch_s"] = f"launch {absent}"
    compile_rows = _rows(data, "compile")
    if compile_rows:
        found.update(_compile(compile_rows))
    else:
        kept.update(dict.fromkeys(("compile_fixed_s", "compile_s_per_instruction"), f"compile time {absent}"))
    tensor = data.get("tensor")
    if tensor is not None:
        seconds, modelled = _number(tensor, "seconds", "tensor"), _number(tensor, "tensor_s", "tensor")
        if seconds <= 0 or modelled <= 0:
            raise ValueError(f"calibrate: the tensor measurement is inconsistent: measured {seconds!r} s against "
                             f"{modelled!r} s modelled; both must be positive")
        found["tensor_efficiency"] = min(1.0, modelled / seconds)  # above 1: the model's rate is a ceiling
    else:
        kept["tensor_efficiency"] = f"Tensor Engine time {absent}"
    return Fit(dataclasses.replace(cost.Calibration(), source=source, **found), kept)
