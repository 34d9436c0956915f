"""Benchmark: opt_einsum.contract with backend="trn" against backend="torch" and backend="numpy".

All backends run in one process, interleaved (each repetition runs every backend once, cycling through all six
orders), with idle BLAS/OpenMP threads set to sleep rather than spin (see below), on the same float32 data
(float32 is the workloads' natural dtype on Trainium, which has no fp64); "trn" runs in its default precision
mode on the CPU, native. Times are medians; ratios are medians of per-repetition ratios (robust to load changes
on a shared machine). The JSON in benchmarks/results/ keeps every sample. A measurement, not a test.

Beside those: steps with nothing to contract (Hadamard products in float32 and float64, outer products), a full
contraction, networks of 100 and 200 tensors through contract_expression (per-step overhead; see ``_network``),
the same networks through ``trn_backend.contract_expression`` (its compiled program, "xp.contract_expression"
rows; torch and numpy still run opt_einsum's expression), and a first-call row: ``xp.contract(eq, *ops,
optimize=path)`` on a 100-tensor network with the planner's caches cleared (path search excluded: the path is
passed), in microseconds per binary step, the warm call beside it (trn only, no ratio; ``--only plan`` selects it).

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
import itertools
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import opt_einsum as oe
import opt_einsum.testing
import torch
from _results import run_metadata, save

import trn_backend as xp

BACKENDS = ("trn", "torch", "numpy")
RESULTS = Path(__file__).parent / "results"


def _network(n: int, regularity: int = 3) -> tuple[str, list[tuple[int, ...]]]:
    """A random network of n tensors. Regularity 3 contracts cheaply at 40 tensors only: at 100 its best known
    paths need ~1e9 FLOPs and at 200 ~1e16 (treewidth grows with n), so the per-step overhead rows at 100 and
    200 use regularity 2 (rings: intermediates of at most ~160 elements)."""
    eq, shapes = oe.testing.rand_equation(n, regularity, n_out=2, d_min=2, d_max=3, seed=7)
    return eq, [tuple(s) for s in shapes]


def workloads() -> list[dict]:
    """The five original workloads, the network with its path precomputed (pure per-call overhead), and
    the steps without contraction, full contraction and larger networks."""
    network_eq, network_shapes = _network(40)
    return [
        dict(name="chain of four 1024x1024", eq="ij,jk,kl,lm->im", shapes=[(1024, 1024)] * 4),
        dict(name="batched bij,bjk->bik 64x256x256x256", eq="bij,bjk->bik", shapes=[(64, 256, 256), (64, 256, 256)]),
        dict(name="abcd,cdef,efgh->abgh at 24", eq="abcd,cdef,efgh->abgh", shapes=[(24,) * 4] * 3),
        dict(name="DF-MP2 Qmn,mi,na->Qia", eq="Qmn,mi,na->Qia", shapes=[(600, 200, 200), (200, 20), (200, 180)]),
        dict(name="40-tensor network (contract)", eq=network_eq, shapes=network_shapes, small=True),
        dict(
            name="40-tensor network (contract_expression)",
            eq=network_eq,
            shapes=network_shapes,
            small=True,
            expression=True,
        ),
        dict(name="Hadamard ij,ij,ij->ij 1024^2 float32", eq="ij,ij,ij->ij", shapes=[(1024, 1024)] * 3),
        dict(
            name="Hadamard ij,ij,ij->ij 1024^2 float64", eq="ij,ij,ij->ij", shapes=[(1024, 1024)] * 3, dtype="float64"
        ),
        dict(name="outer i,j->ij 2048", eq="i,j->ij", shapes=[(2048,), (2048,)]),
        dict(name="outer ij,kl->ijkl 64^2 x 64^2", eq="ij,kl->ijkl", shapes=[(64, 64), (64, 64)]),
        dict(name="full abcd,dcba-> 48^4", eq="abcd,dcba->", shapes=[(48,) * 4] * 2),
        *(
            dict(
                name=f"{n}-tensor ring network (contract_expression)", eq=eq, shapes=shapes, small=True, expression=True
            )
            for n in (100, 200)
            for eq, shapes in [_network(n, regularity=2)]
        ),
        # trn_backend.contract_expression: its program runs the steps without opt_einsum's per-step dispatch
        # (torch and numpy rows: opt_einsum's expression, as above)
        dict(
            name="40-tensor network (xp.contract_expression)",
            eq=network_eq,
            shapes=network_shapes,
            small=True,
            expression=True,
            program=True,
        ),
        *(
            dict(
                name=f"{n}-tensor ring network (xp.contract_expression)",
                eq=eq,
                shapes=shapes,
                small=True,
                expression=True,
                program=True,
            )
            for n in (100, 200)
            for eq, shapes in [_network(n, regularity=2)]
        ),
    ]


def _operands(shapes: list[tuple[int, ...]], seed: int, dtype: str = "float32") -> dict[str, list]:
    rng = np.random.default_rng(seed)
    base = [rng.standard_normal(s).astype(dtype) for s in shapes]
    torch_ops = [torch.from_numpy(a) for a in base]
    return {"numpy": base, "torch": torch_ops, "trn": [xp.NeuronArray(t) for t in torch_ops]}


def _callables(w: dict, ops: dict[str, list]) -> dict[str, Callable[[], object]]:
    if w.get("expression"):
        expr = oe.contract_expression(w["eq"], *w["shapes"])
        calls = {b: (lambda b=b: expr(*ops[b], backend=b)) for b in BACKENDS}
        if w.get("program"):
            program = xp.contract_expression(w["eq"], *w["shapes"])
            calls["trn"] = lambda: program(*ops["trn"])
        return calls
    return {b: (lambda b=b: oe.contract(w["eq"], *ops[b], backend=b)) for b in BACKENDS}


def _check(results: dict[str, object]) -> float:
    """Largest difference from numpy's result, relative to its largest magnitude (a sanity check)."""
    ref = np.asarray(results["numpy"], dtype=np.float64)
    scale = max(float(np.abs(ref).max(initial=0.0)), 1e-30)
    return max(
        float(np.abs(np.asarray(results[b], dtype=np.float64) - ref).max(initial=0.0)) / scale for b in ("trn", "torch")
    )


def measure(w: dict, reps: int) -> dict:
    ops = _operands(w["shapes"], seed=0, dtype=w.get("dtype", "float32"))
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
    ratio = {
        b: statistics.median(x / y for x, y in zip(samples["trn"], samples[b], strict=True)) for b in ("torch", "numpy")
    }
    return {
        "name": w["name"],
        "subscripts": w["eq"] if len(w["eq"]) < 80 else w["eq"][:77] + "...",
        "shapes": [list(s) for s in w["shapes"]] if len(w["shapes"]) < 8 else f"{len(w['shapes'])} tensors",
        "dtype": w.get("dtype", "float32"),
        "reps": reps,
        "calls_per_sample": inner,
        "median_ms": med,
        "min_ms": {b: min(s) for b, s in samples.items()},
        "trn_over_torch": ratio["torch"],
        "trn_over_numpy": ratio["numpy"],
        "max_rel_diff_vs_numpy": error,
        "samples_ms": samples,
    }


def _clear_planner_caches() -> None:
    """Every cache between subscripts and a plan: parsing, paths, per-front-door specs, the plans, the fast path of
    compiled programs (``testing.reset_caches``, in every version this row is measured against)."""
    from trn_backend import testing

    testing.reset_caches()


def measure_planning(n: int, reps: int) -> dict:
    """First-call time of an n-tensor network (path given, planner caches cleared) per binary step; also the
    warm call and their difference (what building the plans costs)."""
    eq, shapes = _network(n, regularity=2)
    path, _ = oe.contract_path(eq, *shapes, shapes=True)
    ops = _operands(shapes, seed=0)["trn"]
    steps = len(path)
    xp.contract(eq, *ops, optimize=path)  # imports, thread pools
    first, warm = [], []
    for _ in range(reps):
        _clear_planner_caches()
        t0 = time.perf_counter()
        xp.contract(eq, *ops, optimize=path)
        t1 = time.perf_counter()
        xp.contract(eq, *ops, optimize=path)
        t2 = time.perf_counter()
        first.append((t1 - t0) / steps * 1e6)
        warm.append((t2 - t1) / steps * 1e6)
    building = [f - w for f, w in zip(first, warm, strict=True)]
    return {
        "name": f"first call, {n}-tensor ring network (us per step)",
        "kind": "planning",
        "subscripts": f"{n} tensors",
        "steps": steps,
        "reps": reps,
        "building_us_per_step": statistics.median(building),
        "first_call_us_per_step": statistics.median(first),
        "warm_call_us_per_step": statistics.median(warm),
        "samples_us_per_step": building,
    }


def table(rows: list[dict]) -> str:
    lines = [
        "| workload | trn (ms) | torch (ms) | numpy (ms) | trn/torch | trn/numpy |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        if r.get("kind") == "planning":
            lines.append(
                f"| {r['name']} | {r['first_call_us_per_step']:.1f} us (warm "
                f"{r['warm_call_us_per_step']:.1f} us) | - | - | - | - |"
            )
            continue
        m = r["median_ms"]
        lines.append(
            f"| {r['name']} | {m['trn']:.2f} | {m['torch']:.2f} | {m['numpy']:.2f} | "
            f"{r['trn_over_torch']:.3f} | {r['trn_over_numpy']:.3f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--only", default="", help="comma-separated substrings of workload names")
    parser.add_argument("--out", type=Path, default=RESULTS / "bench_contract_cpu.json")
    args = parser.parse_args()
    chosen = [
        w
        for w in workloads()
        if not args.only or any(s.strip().lower() in w["name"].lower() for s in args.only.split(","))
    ]
    rows = []
    for w in chosen:
        rows.append(measure(w, args.reps))
        print(f"{w['name']}: trn/torch {rows[-1]['trn_over_torch']:.3f}", flush=True)
    if not args.only or any(s.strip().lower() in "plan building, first call" for s in args.only.split(",")):
        rows.append(measure_planning(100, args.reps))
        print(f"{rows[-1]['name']}: {rows[-1]['first_call_us_per_step']:.1f}", flush=True)
    meta = run_metadata(
        opt_einsum=oe.__version__,
        precision_mode="native",
        dtype="float32 unless a row says otherwise",
        note="times: medians over interleaved repetitions; ratios: medians of per-repetition ratios; every backend "
        "gets the same operands; planning rows: first call (caches cleared) minus warm call",
    )
    save(args.out, meta, rows, table(rows))


if __name__ == "__main__":
    main()
