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

A fifth key is read but never fitted: ``kernels``, rows ``{"kernel": "matmul" | "bmm", "mode", "bmkn": [b, m, k, n],
"lnc", "seconds"}`` (optionally ``"a_transposed"``, default false): our kernels measured on the device (their
dynamic loops, at the LNC they ran). ``Fit.kernels`` holds, per row, the model's time under the fitted calibration
and its error against the measurement: an out-of-sample check of the schedule, not an input to it. ``seconds``
is taken as the kernel's time (as check-neuron's other probes, less the warm launch).

``fit_published`` is the other fit: the cost model's two constants fitted to published kernel times (the
calibration points of docs/trainium.md), with each point's error when the fit leaves it out.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from . import cost

__all__ = ["FORMAT", "Fit", "KernelCheck", "fit", "PublishedFit", "fit_published"]

FORMAT = "trn_backend check-neuron measurements, version 1"  # the measurement file's "format" field


@dataclasses.dataclass(frozen=True)
class KernelCheck:
    """One measured call of our kernels against the model's time for it (out of sample: nothing is fitted to it)."""

    kernel: str
    mode: str
    bmkn: tuple[int, int, int, int]
    lnc: int
    measured_s: float
    modelled_s: float

    @property
    def error(self) -> float:
        """modelled / measured - 1 (positive: the model is slower than the device)."""
        return self.modelled_s / self.measured_s - 1


@dataclasses.dataclass(frozen=True)
class Fit:
    """The fitted calibration, for each field left at its default why, and the model's error on each measured
    kernel call under the fitted calibration (``kernels``: empty when the file has none)."""

    calibration: cost.Calibration
    kept: dict[str, str]
    kernels: tuple[KernelCheck, ...] = ()


def _number(row: Mapping, key: str, what: str) -> float:
    """Field ``key`` of ``row`` as a finite float, or a ValueError naming the measurement ``what``."""
    if not isinstance(row, Mapping) or key not in row:
        raise ValueError(
            f"calibrate: {what} has no {key!r} (expected an object with {key!r}; rerun check-neuron "
            "--json to write a complete file)"
        )
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
        raise ValueError(
            f"calibrate: the {what} measurements are inconsistent: they fit {shown}, which cannot be "
            "negative (noisy timings: rerun check-neuron --json on an idle device)"
        )


def _lstsq(features: np.ndarray, seconds: np.ndarray, what: str, needs: str) -> np.ndarray:
    """Least squares of ``seconds`` on the columns of ``features``, scaled to unit norm first (the columns differ by
    orders of magnitude); a ValueError saying what ``needs`` when the columns do not determine the solution."""
    scale = np.linalg.norm(features, axis=0)
    if (
        features.shape[0] < features.shape[1]
        or not scale.all()
        or np.linalg.matrix_rank(features / scale) < features.shape[1]
    ):
        raise ValueError(
            f"calibrate: too few {what} measurements to fit: it needs {needs} ({features.shape[0]} rows given)"
        )
    solution, *_ = np.linalg.lstsq(features / scale, seconds, rcond=None)
    return solution / scale


def _dma(rows: Sequence[Mapping]) -> dict[str, float]:
    """dma_bytes_per_s, dma_half_run_bytes, dma_fixed_s from the DMA rows. One dma_copy of S bytes in runs of R
    costs f + S (R + h) / (R b); per transfer that is linear in (1, S, S / R): t / n = f + S / b + (h / b) S / R,
    fitted by least squares for x = (f, 1 / b, h / b), then b = 1 / x1, h = x2 / x1."""
    table = np.array(
        [
            [_number(r, key, f"dma row {i}") for key in ("run_bytes", "bytes", "transfers", "seconds")]
            for i, r in enumerate(rows)
        ]
    ).reshape(-1, 4)
    run, size, transfers, seconds = table.T
    if (run <= 0).any() or (size <= 0).any() or (transfers <= 0).any():
        raise ValueError("calibrate: a dma row has a run length, size or transfer count <= 0")
    features = np.stack((np.ones_like(size), size, size / run), axis=1)
    fixed, per_byte, per_run_byte = _lstsq(
        features, seconds / transfers, "DMA", "at least two transfer sizes and two run lengths"
    )
    _physical({"the time per byte": per_byte}, "DMA")
    if per_byte == 0:
        raise ValueError("calibrate: the DMA measurements are inconsistent: the time does not grow with the bytes")
    found = {"dma_bytes_per_s": 1 / per_byte, "dma_half_run_bytes": per_run_byte / per_byte, "dma_fixed_s": fixed}
    _physical(found, "DMA")
    return found


def _compile(rows: Sequence[Mapping]) -> dict[str, float]:
    """compile_fixed_s and compile_s_per_instruction: the first call's time less the warm one, linear in the
    kernel's instruction count (least squares)."""
    table = np.array(
        [
            [_number(r, key, f"compile row {i}") for key in ("instructions", "first_s", "warm_s")]
            for i, r in enumerate(rows)
        ]
    ).reshape(-1, 3)
    instructions, first, warm = table.T
    features = np.stack((np.ones_like(instructions), instructions), axis=1)
    fixed, per_instruction = _lstsq(
        features, first - warm, "compile", "at least two shapes with different instruction counts"
    )
    found = {"compile_fixed_s": fixed, "compile_s_per_instruction": per_instruction}
    _physical(found, "compile")
    return found


def _kernel_rows(data: Mapping) -> list[tuple[str, str, tuple[int, int, int, int], int, bool, float]]:
    """The ``kernels`` rows as (kernel, mode, bmkn, lnc, a_transposed, seconds), checked."""
    rows = []
    for i, row in enumerate(_rows(data, "kernels")):
        what = f"kernels row {i}"
        if not isinstance(row, Mapping):
            raise ValueError(f"calibrate: {what} is a {type(row).__name__}, expected an object")
        kernel, mode, bmkn, lnc = row.get("kernel"), row.get("mode"), row.get("bmkn"), row.get("lnc")
        if kernel not in ("matmul", "bmm"):
            raise ValueError(f"calibrate: {what}'s 'kernel' is {kernel!r}, expected 'matmul' or 'bmm'")
        if not isinstance(mode, str):
            raise ValueError(f"calibrate: {what}'s 'mode' is {mode!r}, expected a mode name")
        if (
            not isinstance(bmkn, (list, tuple))
            or len(bmkn) != 4
            or not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in bmkn)
        ):
            raise ValueError(f"calibrate: {what}'s 'bmkn' is {bmkn!r}, expected [b, m, k, n] of positive ints")
        if lnc not in (1, 2) or isinstance(lnc, bool):
            raise ValueError(f"calibrate: {what}'s 'lnc' is {lnc!r}, expected 1 or 2")
        seconds = _number(row, "seconds", what)
        if seconds <= 0:
            raise ValueError(f"calibrate: {what}'s 'seconds' is {seconds!r}; a measured time is positive")
        transposed = row.get("a_transposed", False)
        if not isinstance(transposed, bool):
            raise ValueError(f"calibrate: {what}'s 'a_transposed' is {transposed!r}, expected true or false")
        rows.append((kernel, mode, tuple(bmkn), lnc, transposed, seconds))
    return rows


def _modelled_kernel(
    kernel: str,
    mode: str,
    bmkn: tuple[int, int, int, int],
    generation: str,
    lnc: int,
    a_transposed: bool,
    calibration: cost.Calibration,
) -> float:
    """The cost model's time of ``nki.<kernel>[<mode>]`` as the kernel layer calls it, at ``lnc``."""
    return cost.modelled(
        kernel, cost.runs_as(mode), bmkn, generation, a_transposed, lnc=lnc, calibration=calibration
    ).seconds


def fit(data: Mapping, source: str, model: Callable[..., float] = _modelled_kernel) -> Fit:
    """The calibration the measurements in ``data`` (a check-neuron --json object) determine, defaults elsewhere;
    ``source`` (the measurement file) goes into its ``source`` field. Each ``kernels`` row is then priced under
    that calibration by ``model(kernel, mode, bmkn, generation, lnc, a_transposed, calibration)`` (seconds; the
    cost model's by default) on the file's generation (``device.generation``, else trn2)."""
    if not isinstance(data, Mapping) or data.get("format") != FORMAT:
        got = data.get("format") if isinstance(data, Mapping) else type(data).__name__
        raise ValueError(
            f"calibrate: {source} is not a check-neuron --json measurement file (format {got!r}, "
            f"expected {FORMAT!r}); write one with python -m trn_backend check-neuron --json FILE"
        )
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
            raise ValueError(
                f"calibrate: the tensor measurement is inconsistent: measured {seconds!r} s against "
                f"{modelled!r} s modelled; both must be positive"
            )
        found["tensor_efficiency"] = min(1.0, modelled / seconds)  # above 1: the model's rate is a ceiling
    else:
        kept["tensor_efficiency"] = f"Tensor Engine time {absent}"
    calibration = dataclasses.replace(cost.Calibration(), source=source, **found)
    device = data.get("device")
    generation = device.get("generation") if isinstance(device, Mapping) else None
    generation = generation if generation in cost.GENERATIONS else "trn2"
    checks = tuple(
        KernelCheck(
            kernel, mode, bmkn, lnc, seconds, model(kernel, mode, bmkn, generation, lnc, transposed, calibration)
        )
        for kernel, mode, bmkn, lnc, transposed, seconds in _kernel_rows(data)
    )
    return Fit(calibration, kept, checks)


# --- the published calibration points --------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class PublishedFit:
    """The cost model's fitted constants (``cost.Calibration.tensor_efficiency`` and trn1's DMA rate,
    ``cost.TRN1.dma_bytes_per_s``), each point's error at them (``errors``: in sample, modelled / published - 1)
    and its error when the fit leaves it out (``left_out``: the constants refitted to the other points)."""

    tensor_efficiency: float
    trn1_dma_bytes_per_s: float
    errors: dict[str, float]
    left_out: dict[str, float]


def _least_squares(
    names: Sequence[str],
    seconds: Callable[[str, float, float], float],
    published: Mapping[str, float],
    start: tuple[float, float],
    slopes: Mapping[str, np.ndarray] | None = None,
    steps: int = 10,
) -> tuple[float, float, dict[str, np.ndarray]]:
    """(efficiency, rate) minimizing the sum over ``names`` of log(modelled / published)^2, and each point's
    slopes (d log modelled / d log constant). Gauss-Newton in the logarithms of the two constants with the
    slopes taken once, by finite differences at ``start`` (or given: a refit reuses them), a step that does not
    improve halved; the efficiency is capped at 1 (the model's rate is a ceiling)."""
    theta = np.log(np.array(start, dtype=float))

    def residuals(t: np.ndarray) -> np.ndarray:
        efficiency, rate = np.exp(t)
        return np.array([math.log(seconds(name, float(efficiency), float(rate)) / published[name]) for name in names])

    r = residuals(theta)
    if slopes is None:
        h = 1e-3
        columns = [(residuals(theta + h * np.eye(2)[i]) - r) / h for i in range(2)]
        slopes = {name: np.array([columns[0][j], columns[1][j]]) for j, name in enumerate(names)}
    jacobian = np.stack([slopes[name] for name in names])
    for _ in range(steps):
        step, *_ = np.linalg.lstsq(jacobian, -r, rcond=None)
        candidate = theta + step
        candidate[0] = min(candidate[0], 0.0)  # efficiency <= 1
        new = residuals(candidate)
        while new @ new > r @ r and np.abs(candidate - theta).max() > 1e-6:
            candidate = (theta + candidate) / 2
            new = residuals(candidate)
        done = np.abs(candidate - theta).max() < 1e-4 or new @ new >= r @ r
        if new @ new < r @ r:
            theta, r = candidate, new
        if done:
            break
    efficiency, rate = np.exp(theta)
    return float(efficiency), float(rate), dict(slopes)


def fit_published(
    points: Sequence, modelled: Callable[[object, float, float], float], start: tuple[float, float] = (0.88, 151e9)
) -> PublishedFit:
    """Fit tensor_efficiency and trn1's DMA rate to ``points`` (each with ``name`` and ``published_s``), where
    ``modelled(point, efficiency, trn1_rate)`` is the cost model's time of its port under those constants; then
    refit without each point in turn for its left-out error. Repeated evaluations are cached."""
    by_name = {p.name: p for p in points}
    published = {p.name: p.published_s for p in points}
    cache: dict[tuple[str, float, float], float] = {}

    def seconds(name: str, efficiency: float, rate: float) -> float:
        key = (name, efficiency, rate)
        if key not in cache:
            cache[key] = modelled(by_name[name], efficiency, rate)
        return cache[key]

    names = list(by_name)
    efficiency, rate, slopes = _least_squares(names, seconds, published, start)
    errors = {name: seconds(name, efficiency, rate) / published[name] - 1 for name in names}
    left_out = {}
    for name in names:
        others = [other for other in names if other != name]
        e, r, _ = _least_squares(others, seconds, published, (efficiency, rate), slopes)
        left_out[name] = seconds(name, e, r) / published[name] - 1
    return PublishedFit(efficiency, rate, errors, left_out)
