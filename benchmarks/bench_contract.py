"""Benchmark: opt_einsum.contract with backend="trn" against backend="torch" and backend="numpy".

All backends run in one process, interleaved (each repetition runs every backend once, cycling through all six
orders), with idle BLAS/OpenMP threads set to sleep rather than spin (see below), on the same float32 data
(float32 is the workloads' natural dtype on Trainium, which has no fp64); "trn" runs in its default precision
mode on the CPU, native. Times are medians; ratios are medians of per-repetition ratios (robust to load changes
on a shared machine). The JSON in benchmarks/results/ keeps every sample. A measurement, not a test.

    python benchmarks/bench_contract.py [--reps 15] [--only chain,network] [--out benchmarks/results/x.json]
"""

from __future__ import annotations

import os

# Idle BLAS/OpenMP threads spin for a while after each call; on a small shared machine numpy's spinning OpenBLAS
# threads then steal the cores from the next torch call (and vice versa), tripling its time. Make idle threads
# sleep at once (set before numpy and torch load their thread pools), so interleaving is fair.
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import datetime
import itertools
import json
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import opt_einsum as oe
import opt_einsum.testing
import torch

import trn_backend as xp

BACKENDS = ("trn", "torch", "numpy")
RESULTS = Path(__file__).parent / "results"


def workloads() -> list[dict]:
    """The five workloads of issue 3, plus the network with its path precomputed (pure per-call overhead)."""
    network_eq, network_shapes = oe.testing.rand_equation(40, 3, n_out=2, d_min=2, d_max=3, seed=7)
    return [
        dict(name="chain of four 1024x1024", eq="ij,jk,kl,lm->im", shapes=[(1024, 1024)] * 4),
        dict(name="batched bij,bjk->bik 64x256x256x256", eq="bij,bjk->bik", shapes=[(64, 256, 256), (64, 256, 256)]),
        dict(name="abcd,cdef,efgh->abgh at 24", eq="abcd,cdef,efgh->abgh", shapes=[(24,) * 4] * 3),
        dict(name="DF-MP2 Qmn,mi,na->Qia", eq="Qmn,mi,na->Qia", shapes=[(600, 200, 200), (200, 20), (200, 180)]),
        dict(name="40-tensor network (contract)", eq=network_eq, shapes=network_shapes, small=True),
        dict(name="40-tensor network (contract_expression)", eq=network_eq, shapes=network_shapes, small=True,
             expression=True),
    ]


def _operands(shapes: list[tuple[int, ...]], seed: int) -> dict[str, list]:
    rng = np.random.default_rng(seed)
    base = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    torch_ops = [torch.from_numpy(a) for a in base]
    return {"numpy": base, "torch": torch_ops, "trn": [xp.NeuronArray(t) for t in torch_ops]}


def _callables(w: dict, ops: dict[str, list]) -> dict[str, Callable[[], object]]:
    if w.get("expression"):
        expr = oe.contract_expression(w["eq"], *w["shapes"])
        return {b: (lambda b=b: expr(*ops[b], backend=b)) for b in BACKENDS}
    return {b: (lambda b=b: oe.contract(w["eq"], *ops[b], backend=b)) for b in BACKENDS}


def _check(results: dict[str, object]) -> float:
    """Largest difference from numpy's result, relative to its largest magnitude (a sanity check)."""
    ref = np.asarray(results["numpy"], dtype=np.float64)
    scale = max(float(np.abs(ref).max(initial=0.0)), 1e-30)
    return max(float(np.abs(np.asarray(results[b], dtype=np.float64) - ref).max(initial=0.0)) / scale
               for b in ("trn", "torch"))


def measure(w: dict, reps: int) -> dict:
    ops = _operands(w["shapes"], seed=0)
    calls = _callables(w, ops)
    error = _check({b: f() for b, f in calls.items()})  # also warms caches and thread pools
    inner = 20 if w.get("small") else 1  # small workloads: each sample averages several calls
    samples: dict[str, list[float]] = {b: [] for b in BACKENDS}
    orders = list(itertools.permutations(BACKENDS))  # each backend follows each other equally often
    for r in range(reps):
        for b in orders[r % len(orders)]:
            time.sleep(0.02)  # let the previous backend's threads go idle
            t0 = time.perf_counter()
            for _ in range(inner):
                calls[b]()
            samples[b].append((time.perf_counter() - t0) / inner * 1e3)
    med = {b: statistics.median(s) for b, s in samples.items()}
    # Ratios are medians of per-repetition ratios: both backends of a repetition ran within a second of each
    # other, so a change of machine load between repetitions (this box is shared) cancels out.
    ratio = {b: statistics.median(x / y for x, y in zip(samples["trn"], samples[b], strict=True))
             for b in ("torch", "numpy")}
    return {
        "name": w["name"], "subscripts": w["eq"] if len(w["eq"]) < 80 else w["eq"][:77] + "...",
        "shapes": [list(s) for s in w["shapes"]] if len(w["shapes"]) < 8 else f"{len(w['shapes'])} tensors",
        "dtype": "float32", "reps": reps, "calls_per_sample": inner,
        "median_ms": med, "min_ms": {b: min(s) for b, s in samples.items()},
        "trn_over_torch": ratio["torch"], "trn_over_numpy": ratio["numpy"],
        "max_rel_diff_vs_numpy": error, "samples_ms": samples,
    }


def table(rows: list[dict]) -> str:
    lines = ["| workload | trn (ms) | torch (ms) | numpy (ms) | trn/torch | trn/numpy |",
             "|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        m = r["median_ms"]
        lines.append(f"| {r['name']} | {m['trn']:.2f} | {m['torch']:.2f} | {m['numpy']:.2f} | "
                     f"{r['trn_over_torch']:.3f} | {r['trn_over_numpy']:.3f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--only", default="", help="comma-separated substrings of workload names")
    parser.add_argument("--out", type=Path, default=RESULTS / "bench_contract_cpu.json")
    args = parser.parse_args()
    chosen = [w for w in workloads()
              if not args.only or any(s.strip().lower() in w["name"].lower() for s in args.only.split(","))]
    rows = []
    for w in chosen:
        rows.append(measure(w, args.reps))
        print(f"{w['name']}: trn/torch {rows[-1]['trn_over_torch']:.3f}", flush=True)
    meta = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": platform.processor() or platform.machine(), "python": platform.python_version(),
        "torch": torch.__version__, "numpy": np.__version__, "opt_einsum": oe.__version__,
        "cpus": os.cpu_count(), "torch_threads": torch.get_num_threads(), "precision_mode": "native",
        "dtype": "float32", "env": {k: os.environ[k] for k in ("OMP_WAIT_POLICY", "OPENBLAS_THREAD_TIMEOUT")},
        "note": "times: medians over interleaved repetitions; ratios: medians of per-repetition ratios; "
                "every backend gets the same float32 operands",
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"meta": meta, "results": rows}, indent=1))
    print()
    print(table(rows))
    print(f"\nwritten to {args.out}")


if __name__ == "__main__":
    main()
