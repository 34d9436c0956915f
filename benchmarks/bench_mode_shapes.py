"""Benchmark: what each emulated precision mode costs against native on the CPU reference, per shape family.

Per case (batched small matrices, skinny products, K = 1, a large K, square and mid-size products; float32 and
float64 data, uniform in [-1, 1)) every mode (fast, dd, bf16x6, ozaki with 4 slices, fp64 for reference) runs
as a direct call of ``trn_backend.kernels.reference.MODES[mode](a, b)`` next to native's. Each repetition runs
every mode once, the order rotating; a mode's cost is the median over repetitions of its time over native's in
the same repetition. The target of a mode is its bf16 pass count (``reference.PASSES``; ozaki counts the slices
it ran, which the data may raise) plus a fixed per-call cost of FIXED_CALLS native calls, and tighter explicit
targets on the batched 48 x [48x48 @ 48x48] case (dd 3.5x, bf16x6 6.6x, ozaki 12x). One more case runs a
two-step four-index transform of a 48^4 tensor ("pqrs,pi,qj,rk,sl->ijkl") through ``trn_backend.einsum`` under
``trn_backend.precision(mode)`` against native (ozaki at the dtype's default slices there). A measurement, not
a test: the table says which targets were met on this run.

    python benchmarks/bench_mode_shapes.py [--reps 5] [--only batched48,k1] [--out benchmarks/results/x.json]
"""

from __future__ import annotations

import os

# Idle BLAS/OpenMP threads sleep at once rather than spin, so interleaved calls do not steal each other's cores.
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import statistics
from collections.abc import Callable
from pathlib import Path

import torch
from _results import interleaved_seconds, run_metadata, save

import trn_backend as xp
from trn_backend.kernels import reference

# name: (family, batch or None, M, K, N)
CASES = {
    "batched48": ("batched", 48, 48, 48, 48),
    "batched8": ("batched", 125, 8, 8, 8),
    "skinny_outer": ("skinny", None, 4096, 16, 4096),
    "skinny_inner": ("skinny", None, 64, 8192, 64),
    "k1": ("K = 1", None, 256, 1, 256),
    "k1_batched": ("K = 1", 64, 64, 1, 64),
    "large_k": ("large K", None, 64, 65536, 64),
    "square512": ("square", None, 512, 512, 512),
    "mid": ("mid-size", None, 1024, 4096, 1024),
}
DTYPES = {"float32": torch.float32, "float64": torch.float64}
MODES = {"fast": {}, "dd": {}, "bf16x6": {}, "ozaki": {"slices": 4}, "fp64": {}}
FIXED_CALLS = 3  # the per-call cost a mode may add to its passes, in native calls of the same product
EXPLICIT = {"batched48": {"dd": 3.5, "bf16x6": 6.6, "ozaki": 12.0}}
# The four-index transform: every step contracts a 48^4 tensor with a 48 x 48 matrix (K = 48).
TRANSFORM = "pqrs,pi,qj,rk,sl->ijkl"
TRANSFORM_MODES = {"dd": {}, "bf16x6": {}, "ozaki": {}}


def _operands(case: str, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    _, batch, m, k, n = CASES[case]
    lead = () if batch is None else (batch,)
    g = torch.Generator().manual_seed(0)
    a = torch.rand(*lead, m, k, generator=g, dtype=torch.float64) * 2 - 1
    b = torch.rand(*lead, k, n, generator=g, dtype=torch.float64) * 2 - 1
    return a.to(dtype), b.to(dtype)


def _interleaved(calls: dict[str, Callable[[], object]], reps: int) -> dict[str, list[float]]:
    """Seconds per call of each entry (``interleaved_seconds``), after one warm-up call each."""
    for call in calls.values():
        call()
    return interleaved_seconds(calls, reps)


def _row(samples: dict[str, list[float]], targets: dict[str, float | None]) -> dict:
    """Per mode: the seconds, the per-repetition ratios to native, their median, the target and whether it was
    met."""
    native = samples["native"]
    modes = {}
    for mode, seconds in samples.items():
        ratios = [t / base for t, base in zip(seconds, native, strict=True)]
        ratio = statistics.median(ratios)
        target = targets.get(mode)
        modes[mode] = {
            "seconds": seconds,
            "median_seconds": statistics.median(seconds),
            "ratios": ratios,
            "median_ratio": ratio,
            "target": target,
            "met": None if target is None else ratio <= target,
        }
    return modes


def _target(case: str, mode: str, slices: int) -> float | None:
    if mode == "fp64":
        return None  # a float64 product on the host: shown for reference, no pass count
    explicit = EXPLICIT.get(case, {}).get(mode)
    if explicit is not None:
        return explicit
    return reference.PASSES[mode](slices) + FIXED_CALLS


def run_case(case: str, dtype: str, reps: int) -> dict:
    a, b = _operands(case, DTYPES[dtype])
    calls: dict[str, Callable[[], object]] = {"native": lambda: reference.native(a, b)}
    for mode, params in MODES.items():
        calls[mode] = lambda mode=mode, params=params: reference.MODES[mode](a, b, **params)
    slices = reference.ozaki_slices(a, b, MODES["ozaki"]["slices"])
    samples = _interleaved(calls, reps)
    family, batch, m, k, n = CASES[case]
    return {
        "case": case,
        "family": family,
        "shape": [batch, m, k, n],
        "dtype": dtype,
        "ozaki_slices_ran": slices,
        "modes": _row(samples, {mode: _target(case, mode, slices) for mode in MODES}),
    }


def run_transform(dtype: str, reps: int) -> dict:
    """The 48^4 four-index transform through trn_backend.einsum, native against each mode."""
    g = torch.Generator().manual_seed(0)
    t = xp.NeuronArray((torch.rand(48, 48, 48, 48, generator=g, dtype=torch.float64) * 2 - 1).to(DTYPES[dtype]))
    c = xp.NeuronArray((torch.rand(48, 48, generator=g, dtype=torch.float64) * 2 - 1).to(DTYPES[dtype]))

    def under(mode: str, params: dict) -> Callable[[], object]:
        def call() -> object:
            with xp.precision(mode, **params):
                return xp.einsum(TRANSFORM, t, c, c, c, c)

        return call

    calls = {"native": under("native", {}), **{mode: under(mode, p) for mode, p in TRANSFORM_MODES.items()}}
    samples = _interleaved(calls, reps)
    slices = reference.ozaki_default_slices(DTYPES[dtype])
    return {
        "case": "transform48",
        "family": "einsum 48^4 transform",
        "shape": [48, 48, 48, 48],
        "dtype": dtype,
        "ozaki_slices_ran": slices,
        "steps": 4,
        "modes": _row(samples, {mode: reference.PASSES[mode](slices) + FIXED_CALLS for mode in TRANSFORM_MODES}),
    }


def table(rows: list[dict]) -> str:
    modes = [*MODES]
    lines = ["| case | dtype | native ms | " + " | ".join(modes) + " |", "|---|---|---:|" + "---:|" * len(modes)]
    for row in rows:
        cells = []
        for mode in modes:
            entry = row["modes"].get(mode)
            if entry is None:
                cells.append("-")
                continue
            verdict = "" if entry["target"] is None else (" ok" if entry["met"] else " MISS")
            target = "" if entry["target"] is None else f" (<= {entry['target']:g}{verdict})"
            cells.append(f"{entry['median_ratio']:.1f}{target}")
        shape = "x".join(str(d) for d in row["shape"] if d is not None)
        lines.append(
            f"| {row['case']} {shape} | {row['dtype']} | {row['modes']['native']['median_seconds'] * 1e3:.3f}"
            f" | " + " | ".join(cells) + " |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument(
        "--only",
        default=",".join([*CASES, "transform48"]),
        help="comma-separated cases: " + ", ".join([*CASES, "transform48"]),
    )
    parser.add_argument("--dtypes", default=",".join(DTYPES), help="comma-separated: float32, float64")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "bench_mode_shapes.json"))
    args = parser.parse_args()
    rows = []
    for case in args.only.split(","):
        for dtype in args.dtypes.split(","):
            rows.append(run_transform(dtype, args.reps) if case == "transform48" else run_case(case, dtype, args.reps))
            print(table(rows[-1:]).splitlines()[-1], flush=True)
    meta = run_metadata(
        reps=args.reps,
        fixed_calls=FIXED_CALLS,
        explicit_targets=EXPLICIT,
        modes=MODES,
        transform=TRANSFORM,
        note="ratios: medians of per-repetition time / native time; targets: "
        "pass count + fixed_calls, or the explicit ones",
    )
    save(Path(args.out), meta, rows, table(rows))


if __name__ == "__main__":
    main()
