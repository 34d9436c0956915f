"""What target-based precision selection ranks the modes by: each mode's cost on the device a step runs on.

``basis(device_type, dtype)`` gives one of three bases, with ``cost(name, slices, flops)`` (only the order of the
costs of one basis matters) and the ``text`` that ``explain()`` shows:

- calibration (CPU, CUDA, any device type with an entry): ``trn_backend/data/mode_costs.json``, written by
  ``benchmarks/calibrate_modes.py``: each mode's time relative to native of the same dtype (medians of interleaved
  per-repetition ratios), for float32 and float64, at a few sizes. A step's cost is interpolated linearly in
  log2 of its FLOPs (2 B M K N) between the measured sizes, and clamped to the smallest and largest of them.
  ozaki is measured at a few slice counts; other counts are interpolated linearly in the pass count
  s(s+1)/2 + 1, proportionally to it below the fewest measured, and along the line through the two largest
  counts above them (the script checks this against a held-out count). Complex dtypes use their real dtype's entry.
- cost model (Neuron: torch device types "neuron" and "xla"): ``kernels/nki/cost.py``'s modelled trn2 time of each
  mode's NKI kernel at one representative size, ``NEURON_SIZE`` (Tensor-Engine-bound for every mode there, the
  regime where the choice matters; each model run takes up to a second, so it runs once per mode, on first use).
  ozaki is modelled at ``NEURON_OZAKI_SLICES`` and scaled by the pass count to other slice counts (the model's
  time per pass varies by under 10% between 1 and 8 slices). fp64, a float64 product on the host, comes last.
- pass count (a device type with no entry, or a dtype its entry lacks): bf16 Tensor Engine passes
  (``kernels.reference.PASSES``, the registry's ``_precision.MODES[m].passes``), native counting as one fp32 pass,
  ``NATIVE_PASSES`` bf16 passes; fp64 last.

This module is loaded, and the table read, on the first target-based choice (importing trn_backend does neither).
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import json
import math
from pathlib import Path
from typing import Any

import torch

from .kernels import NEURON_DEVICE_TYPES, reference

TABLE = Path(__file__).parent / "data" / "mode_costs.json"
NEURON_SIZE = (1, 2048, 2048, 2048)
NEURON_OZAKI_SLICES = 4
NATIVE_PASSES = 4  # an fp32 Tensor Engine pass costs four bf16 passes (kernels.nki.cost.FP32_MATMUL_FACTOR)
# the modes a calibration entry must hold (native is 1 by definition; ozaki as "ozaki(slices=s)" at any counts)
CALIBRATED = ("fast", "dd", "bf16x6", "fp64")

_planted: dict[str, Any] | None = None
# how many times ``plant`` has swapped the table: what caches of target-based choices key by (a table planted
# later may rank the modes differently)
generation = 0


def _passes(name: str, slices: int | None) -> int:
    """bf16 Tensor Engine passes of a mode (ozaki: with ``slices``)."""
    return reference.PASSES[name](slices)


@functools.cache
def _committed() -> dict[str, Any]:
    return json.loads(TABLE.read_text())


def table() -> dict[str, Any]:
    """The cost table in force: the committed one, or one planted by ``plant``."""
    return _committed() if _planted is None else _planted


def plant(replacement: dict[str, Any] | None) -> dict[str, Any] | None:
    """Use ``replacement`` (the layout of data/mode_costs.json; None: the committed table) from now on, and return
    the one planted before. For tests and what-if comparisons; ``_precision.planted_costs`` also clears the
    selection caches."""
    global _planted, generation
    previous, _planted = _planted, replacement
    generation += 1
    basis.cache_clear()
    return previous


@dataclasses.dataclass(frozen=True, eq=False)
class Basis:
    """How the modes are ranked for one device type and real dtype."""

    kind: str  # "calibration", "cost model" or "pass count"
    text: str  # as explain() shows it
    log_flops: tuple[float, ...] = ()  # calibration: the measured sizes, log2 FLOPs, ascending
    costs_by_size: dict[str, tuple[float, ...]] = dataclasses.field(default_factory=dict)  # relative to native
    ozaki: tuple[tuple[int, tuple[float, ...]], ...] = ()  # calibration: (passes, costs per size), by passes
    float64: bool = False  # cost model: the float64 kernels (words split on the host)

    def cost(self, name: str, slices: int | None, flops: float) -> float:
        """The cost of mode ``name`` (ozaki with ``slices``) on a step of ``flops`` FLOPs."""
        return self.costs([(name, slices)], flops)[0]

    def costs(self, modes: list[tuple[str, int | None]], flops: float) -> list[float]:
        """The cost of each (mode, ozaki slices) in ``modes`` on a step of ``flops`` FLOPs."""
        if self.kind == "calibration":
            x = math.log2(max(flops, 1.0))
            at_size = {name: _interpolate(self.log_flops, ys, x) for name, ys in self.costs_by_size.items()}
            at_size["native"] = 1.0
            passes, ozaki = zip(*((p, _interpolate(self.log_flops, ys, x)) for p, ys in self.ozaki), strict=True)

            def one(name: str, slices: int | None) -> float:
                if name == "ozaki":
                    return _interpolate(passes, ozaki, _passes("ozaki", slices), extrapolate=True)
                return at_size[name]
        elif self.kind == "cost model":

            def one(name: str, slices: int | None) -> float:
                if name == "fp64":
                    return math.inf  # off the bf16 engine: a float64 product on the host, the last resort
                if name == "ozaki":
                    reference = _modelled("ozaki", self.float64, NEURON_OZAKI_SLICES)
                    return reference * _passes("ozaki", slices) / _passes("ozaki", NEURON_OZAKI_SLICES)
                return _modelled(name, self.float64, None)
        else:

            def one(name: str, slices: int | None) -> float:
                if name == "fp64":
                    return math.inf  # as above
                return NATIVE_PASSES if name == "native" else _passes(name, slices)

        return [one(name, slices) for name, slices in modes]


@functools.cache
def basis(device_type: str, dtype: torch.dtype) -> Basis:
    """The basis that ranks the modes for a step of ``dtype`` (complex: its real dtype) on ``device_type``."""
    real = dtype.to_real() if dtype.is_complex else dtype
    if device_type in NEURON_DEVICE_TYPES:
        return Basis("cost model", "trn2 cost model", float64=real is torch.float64)
    entry = table().get("devices", {}).get(device_type)
    name = str(real).removeprefix("torch.")
    if entry is None or name not in entry:
        missing = f"no calibration for {device_type}" if entry is None else f"no {name} calibration for {device_type}"
        return Basis("pass count", f"pass count ({missing})")
    return _calibration(device_type, entry, name)


def _calibration(device_type: str, entry: dict[str, Any], dtype: str) -> Basis:
    """The entry for one device type and dtype, checked: a hand-edited table fails here, naming what is wrong."""
    data = entry[dtype]

    def check(what: str, values: object) -> tuple[float, ...]:
        if not (
            isinstance(values, list)
            and len(values) == len(data["flops"])
            and all(isinstance(v, int | float) and 0 < v < math.inf for v in values)
        ):
            raise ValueError(
                f"{TABLE.name}: the {device_type} {dtype} entry's {what} must be a list of "
                f"{len(data['flops'])} positive numbers, one per size in 'flops', got {values!r}"
            )
        return tuple(float(v) for v in values)

    flops = check("flops", data.get("flops"))
    if list(flops) != sorted(set(flops)):
        raise ValueError(f"{TABLE.name}: the {device_type} {dtype} entry's flops must be ascending, got {flops}")
    modes = data.get("modes", {})
    costs = {name: check(f"mode {name!r}", modes.get(name)) for name in CALIBRATED}
    ozaki = sorted(
        (_passes("ozaki", int(key[len("ozaki(slices=") : -1])), check(f"mode {key!r}", values))
        for key, values in modes.items()
        if key.startswith("ozaki(slices=")
    )
    if not ozaki:
        raise ValueError(f"{TABLE.name}: the {device_type} {dtype} entry measures ozaki at no slice count")
    return Basis(
        "calibration",
        f"{device_type} calibration, benchmarks {entry.get('date', 'undated')}",
        tuple(math.log2(f) for f in flops),
        costs,
        tuple(ozaki),
    )


def _interpolate(xs, ys, x: float, extrapolate: bool = False) -> float:
    """ys at x, linear between the points xs (ascending); outside them the nearest y, or with ``extrapolate``
    (costs in pass counts) y proportional to x below the first point and the line through the last two points
    above the last (never falling there: a costlier computation is not cheaper)."""
    if extrapolate and (x < xs[0] or len(xs) == 1):
        return ys[0] * x / xs[0]
    if x <= xs[0] or x >= xs[-1]:
        if not extrapolate or x <= xs[-1]:
            return ys[0] if x <= xs[0] else ys[-1]
        return ys[-1] + max((ys[-1] - ys[-2]) / (xs[-1] - xs[-2]), 0.0) * (x - xs[-1])
    i = bisect.bisect_right(xs, x)
    return ys[i - 1] + (ys[i] - ys[i - 1]) / (xs[i] - xs[i - 1]) * (x - xs[i - 1])


@functools.cache
def _modelled(mode: str, float64: bool, slices: int | None) -> float:
    """The cost model's trn2 time of ``nki.matmul[mode]`` at NEURON_SIZE, in seconds."""
    from .kernels.nki import cost

    return cost.modelled("matmul", mode, NEURON_SIZE, float64=float64, slices=slices).seconds
