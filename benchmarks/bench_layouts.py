"""Benchmark: multi-operand einsums whose operand layouts need permuting between steps, on five entry points.

Two workloads, each at a few sizes:

- bilinear form ``'ik,klj,jl->ij'`` (float32, i = j = 128, k = l in {128, 256}): every library plans its own
  order (the call as a user writes it: ``optimize`` left at its default, numpy's ``optimize=True``);
- 4-index transform ``'pi,qj,rk,sl,ijkl->pqrs'`` (float64, n in {24, 32, 40}), contracted pairwise along ONE
  fixed path (opt_einsum's greedy path, computed once) wherever the entry point takes a path: trn_backend.einsum,
  both opt_einsum calls and numpy (``optimize=['einsum_path', *path]``); torch.einsum takes none and plans with
  its own opt_einsum strategy ("auto").

Entry points (the same buffers: NeuronArrays wrap the torch tensors without a copy, the NumPy arrays share them):

- ``trn_einsum``: ``trn_backend.einsum(eq, *NeuronArrays)``;
- ``oe_trn``: ``opt_einsum.contract(eq, *NeuronArrays, backend="trn")``;
- ``torch_einsum``: ``torch.einsum(eq, *tensors)``;
- ``oe_torch``: ``opt_einsum.contract(eq, *tensors, backend="torch")``;
- ``numpy``: ``numpy.einsum(eq, *arrays, optimize=True)`` (or the fixed path).

Before timing every result is compared with a float64 NumPy einsum of the same data (norm-wise relative
difference; limit max(1000 eps, 10 x torch.einsum's own error)); an entry point that raises is recorded with its
error and left out. All entry points run in one process, interleaved: each repetition runs every one once
(rotating their order, after a warm-up), idle BLAS/OpenMP threads set to sleep. Times are medians; ratios are
medians of per-repetition ratios (robust to load changes on a shared machine): trn_einsum and oe_trn over each of
torch_einsum, oe_torch and numpy. The JSON in benchmarks/results/ keeps every sample. A measurement, not a test.

    python benchmarks/bench_layouts.py [--reps 11] [--out benchmarks/results/bench_layouts.json]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse  # noqa: E402
import math  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import opt_einsum as oe  # noqa: E402
import torch  # noqa: E402
from _results import interleaved_ms, run_metadata, save  # noqa: E402

import trn_backend as xp  # noqa: E402

RESULTS = Path(__file__).parent / "results"
FORMS = ("trn_einsum", "oe_trn", "torch_einsum", "oe_torch", "numpy")
OURS = ("trn_einsum", "oe_trn")
REFERENCES = ("torch_einsum", "oe_torch", "numpy")
SAMPLE_S = 0.02  # calls shorter than this are repeated within a sample


def cases() -> list[dict]:
    """(name, eq, shapes, dtype, fixed path or None)."""
    out = []
    for kl in (128, 256):
        out.append(
            dict(
                name=f"bilinear ik,klj,jl->ij, i=j=128, k=l={kl}",
                eq="ik,klj,jl->ij",
                shapes=[(128, kl), (kl, kl, 128), (128, kl)],
                dtype="float32",
                fixed_path=False,
            )
        )
    for n in (24, 32, 40):
        out.append(
            dict(
                name=f"4-index transform, n={n}",
                eq="pi,qj,rk,sl,ijkl->pqrs",
                shapes=[(n, n)] * 4 + [(n, n, n, n)],
                dtype="float64",
                fixed_path=True,
            )
        )
    return out


def _callables(case: dict, arrays: list[np.ndarray], path: list | None) -> dict[str, Callable]:
    eq = case["eq"]
    tensors = [torch.from_numpy(a) for a in arrays]
    neuron = [xp.asarray(t) for t in tensors]
    if path is None:
        return {
            "trn_einsum": lambda: xp.einsum(eq, *neuron),
            "oe_trn": lambda: oe.contract(eq, *neuron, backend="trn"),
            "torch_einsum": lambda: torch.einsum(eq, *tensors),
            "oe_torch": lambda: oe.contract(eq, *tensors, backend="torch"),
            "numpy": lambda: np.einsum(eq, *arrays, optimize=True),
        }
    np_path = ["einsum_path", *path]
    return {
        "trn_einsum": lambda: xp.einsum(eq, *neuron, optimize=path),
        "oe_trn": lambda: oe.contract(eq, *neuron, optimize=path, backend="trn"),
        "torch_einsum": lambda: torch.einsum(eq, *tensors),
        "oe_torch": lambda: oe.contract(eq, *tensors, optimize=path, backend="torch"),
        "numpy": lambda: np.einsum(eq, *arrays, optimize=np_path),
    }


def _rel(x: np.ndarray, ref: np.ndarray) -> float:
    return float(np.linalg.norm((x - ref).ravel()) / max(np.linalg.norm(ref.ravel()), 1e-300))


def _check(ref: np.ndarray, eps: float, calls: dict[str, Callable]) -> tuple[dict, dict]:
    results, errors = {}, {}
    for f in list(calls):
        try:
            results[f] = calls[f]()
        except Exception as e:  # a failing entry point is a finding to record
            errors[f] = f"{type(e).__name__}: {e}"
            del calls[f]
    errs = {f: _rel(np.asarray(r).astype(np.float64), ref) for f, r in results.items()}
    limit = max(1000 * eps, 10 * errs.get("torch_einsum", 0.0))
    check = {
        "reference": "numpy.einsum in float64",
        "limit_vs_reference": limit,
        "rel_err_vs_reference": errs,
        "result_type": {f: type(r).__name__ for f, r in results.items()},
        "disagree": [],
    }
    for f, r in results.items():
        if np.asarray(r).shape != ref.shape or not errs[f] <= limit:
            check["disagree"].append(f)
        if f in OURS and type(r) is not xp.NeuronArray:
            check["disagree"].append(f"{f} (result is {type(r).__name__}, not NeuronArray)")
    return errors, check


def measure(case: dict, reps: int) -> dict:
    rng = np.random.default_rng(0)
    arrays = []
    for shape in case["shapes"]:  # scaled so each sum of random-sign terms stays O(1)
        arrays.append((rng.standard_normal(shape) / math.sqrt(shape[0])).astype(case["dtype"]))
    path, info = oe.contract_path(case["eq"], *arrays, optimize="greedy")
    path = [tuple(p) for p in path]
    calls = _callables(case, arrays, path if case["fixed_path"] else None)
    ref = np.einsum(case["eq"], *[a.astype(np.float64) for a in arrays], optimize=["einsum_path", *path])
    errors, check = _check(ref, float(np.finfo(case["dtype"]).eps), calls)
    row = {
        "name": case["name"],
        "eq": case["eq"],
        "shapes": case["shapes"],
        "dtype": case["dtype"],
        "path": path if case["fixed_path"] else None,
        "opt_einsum_greedy_path": path,
        "flops": float(info.opt_cost),
        "planning": "fixed path (torch.einsum: its own)" if case["fixed_path"] else "each library's own",
        "errors": errors,
        "check": check,
    }
    if not calls:
        return row
    first = next(iter(calls.values()))
    t0 = time.perf_counter()
    first()
    inner = max(1, min(20, round(SAMPLE_S / max(time.perf_counter() - t0, 1e-6))))
    for c in calls.values():
        c()
    samples = interleaved_ms(calls, reps, inner)

    def ratio(a: str, b: str) -> float:
        return statistics.median(x / y for x, y in zip(samples[a], samples[b], strict=True))

    row.update(
        reps=reps,
        calls_per_sample=inner,
        median_ms={f: statistics.median(s) for f, s in samples.items()},
        min_ms={f: min(s) for f, s in samples.items()},
        ratios={f"{a}/{b}": ratio(a, b) for a in OURS for b in REFERENCES if a in samples and b in samples},
        samples_ms=samples,
    )
    return row


def _geomean(xs: list[float]) -> float | None:
    return math.exp(statistics.fmean(map(math.log, xs))) if xs else None


def summary(rows: list[dict]) -> dict:
    keys = [f"{a}/{b}" for a in OURS for b in REFERENCES]
    out = {}
    for k in keys:
        have = [r for r in rows if k in r.get("ratios", {})]
        if have:
            worst = max(have, key=lambda r: r["ratios"][k])
            out[k] = {
                "geomean": _geomean([r["ratios"][k] for r in have]),
                "max": worst["ratios"][k],
                "max_instance": worst["name"],
            }
    return out


def table(rows: list[dict], summ: dict) -> str:
    keys = [f"{a}/{b}" for a in OURS for b in REFERENCES]
    head = ["case", "dtype"] + [f"{f} (ms)" for f in FORMS] + keys + ["check"]
    lines = ["| " + " | ".join(head) + " |", "|---|---|" + "---:|" * (len(head) - 3) + "---|"]
    for r in rows:
        med, rat = r.get("median_ms", {}), r.get("ratios", {})
        note = "; ".join([f"{f} error" for f in r["errors"]] + [f"{f} disagrees" for f in r["check"]["disagree"]])
        lines.append(
            "| "
            + " | ".join(
                [r["name"], r["dtype"]]
                + [f"{med[f]:.2f}" if f in med else "-" for f in FORMS]
                + [f"{rat[k]:.3f}" if k in rat else "-" for k in keys]
                + [note or "ok"]
            )
            + " |"
        )
    lines += ["", "| ratio | geomean | max | at |", "|---|---:|---:|---|"]
    for k, s in summ.items():
        lines.append(f"| {k} | {s['geomean']:.3f} | {s['max']:.3f} | {s['max_instance']} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=11)
    parser.add_argument("--out", type=Path, default=RESULTS / "bench_layouts.json")
    args = parser.parse_args()
    load_start = os.getloadavg()
    rows = []
    for case in cases():
        rows.append(r := measure(case, args.reps))
        trouble = [*r["errors"], *r["check"]["disagree"]]
        ratios = ", ".join(f"{k} {x:.2f}" for k, x in r.get("ratios", {}).items())
        print(f"{r['name']}: {ratios}" + (f"; PROBLEMS: {trouble}" if trouble else ""), flush=True)
    summ = summary(rows)
    meta = run_metadata(
        opt_einsum=oe.__version__,
        trn_backend=str(Path(xp.__file__).parent),
        torch_opt_einsum_strategy=torch.backends.opt_einsum.strategy,
        load_average_start=load_start,
        load_average_end=os.getloadavg(),
        note="times: medians over interleaved repetitions (each runs every entry point once, rotating the order); "
        "ratios: medians of per-repetition ratios",
    )
    save(args.out, meta, rows, table(rows, summ), summary=summ)


if __name__ == "__main__":
    main()
