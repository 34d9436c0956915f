"""Benchmark: ``trn_backend.contract(..., memory_limit=...)`` against cotengra's own sliced contraction.

A 20-tensor network (``opt_einsum.testing.rand_equation`` with a fixed seed) whose intermediates outgrow
``--limit`` elements (64 by default: thousands of slices). cotengra's tree is built once (opt_einsum's greedy
path, then ``ContractionTree.slice(target_size=limit, allow_outer=False, seed=0)``) and used by every side:

- ``trn``: ``xp.contract(eq, *NeuronArrays, memory_limit=limit, optimize=tree, progress=False)`` (the tree's path
  and sliced indices, every binary step a kernel call);
- ``numpy`` and ``torch``: ``tree.contract(arrays, backend=...)``, cotengra's slice-by-slice contraction.

All sides run in one process, interleaved (each repetition runs every side once, cycling through all six
orders), with idle BLAS/OpenMP threads set to sleep rather than spin, on the same float32 data; "trn" runs in
its default precision mode on the CPU. Times are medians; ratios are medians of per-repetition ratios. The JSON
in benchmarks/results/ keeps every sample. A measurement, not a test. Against the code before the fast path
(``PYTHONPATH=/tmp/base``), which took no tree, the script pins that code's slicing to the same tree.

    python benchmarks/bench_sliced.py [--reps 7] [--seed 1] [--limit 64] [--out benchmarks/results/x.json]
"""

from __future__ import annotations

import os

# Idle BLAS/OpenMP threads spin for a while after each call; on a small shared machine they steal the cores
# from the next side's call. Make idle threads sleep at once (set before numpy and torch load their pools).
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import itertools
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import cotengra as ctg
import numpy as np
import opt_einsum as oe
import opt_einsum.testing
import torch
from _results import run_metadata, save

import trn_backend as xp
from trn_backend.contraction import slicing as _slicing

SIDES = ("trn", "numpy", "torch")
RESULTS = Path(__file__).parent / "results"


def network(seed: int, limit: int) -> tuple[str, list[tuple[int, ...]], ctg.ContractionTree]:
    """The network (20 tensors, 3 indices per tensor, 2 output indices, sizes 2 to 4) and its sliced tree."""
    eq, shapes = oe.testing.rand_equation(20, 3, n_out=2, d_min=2, d_max=4, seed=seed)
    inputs, output = eq.split("->")
    sizes = {
        c: d for term, shape in zip(inputs.split(","), shapes, strict=True) for c, d in zip(term, shape, strict=True)
    }
    path = oe.contract_path(eq, *shapes, shapes=True, optimize="greedy")[0]
    tree = ctg.ContractionTree.from_path([tuple(t) for t in inputs.split(",")], tuple(output), sizes, path=path)
    return eq, shapes, tree.slice(target_size=limit, allow_outer=False, seed=0)


def _trn(eq: str, ops: list, tree: ctg.ContractionTree, limit: int) -> Callable[[], object]:
    if hasattr(_slicing, "_Program"):
        return lambda: xp.contract(eq, *ops, memory_limit=limit, optimize=tree, progress=False)
    # the code before the fast path takes no tree: pin its slicing to this tree's path and sliced indices
    choice = (tuple(map(tuple, tree.get_path())), tuple(tree.sliced_inds))
    _slicing.slicing = lambda *args, **kwargs: choice
    return lambda: xp.contract(eq, *ops, memory_limit=limit)


def measure(seed: int, limit: int, reps: int) -> dict:
    eq, shapes, tree = network(seed, limit)
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    tensors = [torch.from_numpy(a) for a in arrays]
    calls = {
        "trn": _trn(eq, [xp.NeuronArray(t) for t in tensors], tree, limit),
        "numpy": lambda: tree.contract(arrays, backend="numpy"),
        "torch": lambda: tree.contract(tensors, backend="torch"),
    }
    results = {s: np.asarray(f(), dtype=np.float64) for s, f in calls.items()}  # also warms caches
    ref = np.einsum(eq, *(a.astype(np.float64) for a in arrays), optimize="greedy")
    scale = max(float(np.abs(ref).max(initial=0.0)), 1e-30)
    errors = {s: float(np.abs(r - ref).max(initial=0.0)) / scale for s, r in results.items()}
    samples: dict[str, list[float]] = {s: [] for s in SIDES}
    orders = list(itertools.permutations(SIDES))  # each side follows each other equally often
    for r in range(reps):
        for s in orders[r % len(orders)]:
            time.sleep(0.05)  # let the previous side's threads go idle
            t0 = time.perf_counter()
            calls[s]()
            samples[s].append(time.perf_counter() - t0)
    med = {s: statistics.median(x) for s, x in samples.items()}
    # medians of per-repetition ratios: the sides of one repetition ran seconds apart, so load changes cancel
    ratio = {
        s: statistics.median(a / b for a, b in zip(samples["trn"], samples[s], strict=True)) for s in ("numpy", "torch")
    }
    return {
        "name": f"20-tensor network, seed {seed}, memory_limit={limit}",
        "subscripts": eq,
        "shapes": [list(s) for s in shapes],
        "dtype": "float32",
        "reps": reps,
        "slices": tree.multiplicity,
        "sliced": list(tree.sliced_inds),
        "max_intermediate": tree.max_size(),
        "unsliced_max_intermediate": ctg.ContractionTree.from_path(
            tree.inputs, tree.output, tree.size_dict, path=tree.get_path()
        ).max_size(),
        "median_s": med,
        "min_s": {s: min(x) for s, x in samples.items()},
        "trn_over_numpy": ratio["numpy"],
        "trn_over_torch": ratio["torch"],
        "max_rel_err_vs_float64_einsum": errors,
        "samples_s": samples,
    }


def table(rows: list[dict]) -> str:
    lines = [
        "| workload | slices | trn (s) | numpy (s) | torch (s) | trn/numpy | trn/torch |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        m = r["median_s"]
        lines.append(
            f"| {r['name']} | {r['slices']} | {m['trn']:.3f} | {m['numpy']:.3f} | {m['torch']:.3f} | "
            f"{r['trn_over_numpy']:.3f} | {r['trn_over_torch']:.3f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--seed", type=int, default=1, help="rand_equation's seed (1: 3072 slices at 64)")
    parser.add_argument("--limit", type=int, default=64, help="memory_limit, elements")
    parser.add_argument("--out", type=Path, default=RESULTS / "bench_sliced.json")
    args = parser.parse_args()
    rows = [measure(args.seed, args.limit, args.reps)]
    meta = run_metadata(
        opt_einsum=oe.__version__,
        cotengra=ctg.__version__,
        precision_mode="native",
        dtype="float32",
        fast_path=hasattr(_slicing, "_Program"),
        note="one cotengra tree for every side; times: medians over interleaved repetitions; ratios: medians of "
        "per-repetition ratios; every side gets the same float32 operands",
    )
    save(args.out, meta, rows, table(rows))


if __name__ == "__main__":
    main()
