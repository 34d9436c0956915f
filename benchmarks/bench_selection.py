"""Benchmark: what a target_forward_error= costs, relative to native, with the mode it picks.

float32 M x K @ K x N products (default 1024^3, the issue's K = 1024) through ``trn_backend.matmul`` with
``target_forward_error=`` each target, interleaved with the plain native call in one process (rotating orders);
the ratio is the median of per-repetition ratios. The mode is read from the kernel layer's call counter, so the
row says what actually ran. Run it against another checkout with PYTHONPATH to compare selection rules.
A measurement, not a test.

    python benchmarks/bench_selection.py [--reps 7] [--size 1024] [--out benchmarks/results/bench_selection.json]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")  # idle BLAS threads sleep (see bench_contract.py)
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import statistics
import time
from pathlib import Path

import torch
from _results import run_metadata, save

import trn_backend as xp
from trn_backend import kernels

TARGETS = (1e-2, 1e-4, 1e-6, 1e-7)
RESULTS = Path(__file__).parent / "results"


def _ran(call) -> str:
    """The kernel mode(s) one call ran, from the kernel layer's counter."""
    with kernels.count_calls() as calls:
        call()
    return "+".join(sorted({mode for _, mode in calls}))


def measure(size: int, reps: int) -> list[dict]:
    g = torch.Generator().manual_seed(0)
    a = xp.asarray(torch.randn(size, size, generator=g))
    b = xp.asarray(torch.randn(size, size, generator=g))
    calls = {"native": lambda: xp.matmul(a, b)}
    calls.update({f"{t:g}": (lambda t=t: xp.matmul(a, b, target_forward_error=t)) for t in TARGETS})
    modes = {name: _ran(call) for name, call in calls.items()}  # also warms caches
    samples: dict[str, list[float]] = {name: [] for name in calls}
    names = list(calls)
    for r in range(reps):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            time.sleep(0.02)
            t0 = time.perf_counter()
            calls[name]()
            samples[name].append((time.perf_counter() - t0) * 1e3)
    rows = []
    for t in TARGETS:
        name = f"{t:g}"
        ratio = statistics.median(x / y for x, y in zip(samples[name], samples["native"], strict=True))
        rows.append(
            {
                "target": t,
                "mode": modes[name],
                "median_ms": statistics.median(samples[name]),
                "native_ms": statistics.median(samples["native"]),
                "over_native": ratio,
                "samples_ms": samples[name],
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--out", type=Path, default=RESULTS / "bench_selection.json")
    args = parser.parse_args()
    rows = measure(args.size, args.reps)
    lines = [f"| target_forward_error | mode run | time / native ({args.size}^3 float32) |", "|---|---|---:|"]
    lines += [f"| {r['target']:g} | {r['mode']} | {r['over_native']:.2f} |" for r in rows]
    save(args.out, run_metadata(size=args.size, dtype="float32", trn_backend=xp.__file__), rows, "\n".join(lines))


if __name__ == "__main__":
    main()
