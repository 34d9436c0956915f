"""Benchmark: per-call cost of the array-API namespace (trn_backend) against plain torch and array_api_compat.torch.

Each operation runs on float32 data in three forms: through trn_backend (NeuronArray wrapping a torch tensor),
as the same torch call on the bare tensor, and through array_api_compat.torch (a second reference for what an
array-API layer over torch costs; operators and indexing have no compat form: they are torch's own). Small
arrays (10 elements, shape (10,) or (2, 5); square matrices of sides 4, 16 and 64 for the matrix products)
measure the per-call overhead in microseconds over torch; large ones
(1e6 elements, shape (10**6,) or (1000, 1000)) measure the ratio to torch. All forms run in one process,
interleaved (each repetition runs every form once, rotating their order), with idle BLAS/OpenMP threads set to
sleep (see below). Times are medians of per-call means over a sample; "over torch" and ratios are medians of
per-repetition differences and ratios, robust to load changes on a shared machine. The JSON in
benchmarks/results/ keeps every sample. A measurement, not a test.

    python benchmarks/bench_namespace.py [--reps 81] [--only add,sum] [--size small] [--threads 1]
                                         [--out benchmarks/results/x.json]
"""

from __future__ import annotations

import os

# Idle BLAS/OpenMP threads spin for a while after each call; on a small shared machine they then steal the cores
# from the next call. Make idle threads sleep at once (set before numpy and torch load their thread pools).
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import gc
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import array_api_compat
import array_api_compat.torch as compat
import numpy as np
import torch
from _results import run_metadata, save

import trn_backend as xp

FORMS = ("trn", "torch", "compat")
RESULTS = Path(__file__).parent / "results"
SMALL = {"1d": (10,), "2d": (2, 5), "m4": (4, 4), "m16": (16, 16), "m64": (64, 64)}
LARGE = {"1d": (10**6,), "2d": (1000, 1000)}


def _data(shapes: dict[str, tuple[int, ...]], seed: int) -> dict[str, dict[str, object]]:
    """Per form, the operands: x and y of each shape, values in [1, 2), and ones (what in-place updates use, so
    repeated ones stay normal floats). Every form works on the same tensors (NeuronArrays wrap them without a
    copy), so memory layout and alignment never differ between forms."""
    rng = np.random.default_rng(seed)
    torch_ops = {
        f"{name}{k}": torch.from_numpy(rng.random(shape, dtype=np.float32) + 1)
        for name, shape in shapes.items()
        for k in "xy"
    }
    torch_ops.update({f"{name}one": torch.ones(shape) for name, shape in shapes.items()})
    trn_ops = {k: xp.NeuronArray(t) for k, t in torch_ops.items()}
    return {"torch": torch_ops, "compat": torch_ops, "trn": trn_ops}


def _ops() -> list[tuple[str, str, Callable[[object, dict], object]]]:
    """(name, kind, call(ns, d)) with ns the namespace (trn_backend, torch or the compat namespace) and d the
    form's operands (in-place rows update x by an array of ones, so repeated updates stay normal floats). kind:
    "function" (all three forms), "torch-function" (trn and torch spell it differently:
    the call receives None for ns on the torch form), "syntax" (operators and indexing: trn and torch only)."""
    return [
        ("add(x, y)", "function", lambda ns, d: ns.add(d["1dx"], d["1dy"])),
        ("subtract(x, y)", "function", lambda ns, d: ns.subtract(d["1dx"], d["1dy"])),
        ("multiply(x, y)", "function", lambda ns, d: ns.multiply(d["1dx"], d["1dy"])),
        ("divide(x, y)", "function", lambda ns, d: ns.divide(d["1dx"], d["1dy"])),
        ("x + y", "syntax", lambda ns, d: d["1dx"] + d["1dy"]),
        ("x - y", "syntax", lambda ns, d: d["1dx"] - d["1dy"]),
        ("x * y", "syntax", lambda ns, d: d["1dx"] * d["1dy"]),
        ("x / y", "syntax", lambda ns, d: d["1dx"] / d["1dy"]),
        ("x + 2.0", "syntax", lambda ns, d: d["1dx"] + 2.0),
        ("x - 2.0", "syntax", lambda ns, d: d["1dx"] - 2.0),
        ("x * 2.0", "syntax", lambda ns, d: d["1dx"] * 2.0),
        ("x / 2.0", "syntax", lambda ns, d: d["1dx"] / 2.0),
        ("x * 2 (int)", "syntax", lambda ns, d: d["1dx"] * 2),
        ("2.0 + x", "syntax", lambda ns, d: 2.0 + d["1dx"]),
        ("2.0 - x", "syntax", lambda ns, d: 2.0 - d["1dx"]),
        ("2.0 * x", "syntax", lambda ns, d: 2.0 * d["1dx"]),
        ("2.0 / x", "syntax", lambda ns, d: 2.0 / d["1dx"]),
        ("x += y", "syntax", _inplace("__iadd__", "1done")),
        ("x -= y", "syntax", _inplace("__isub__", "1done")),
        ("x *= y", "syntax", _inplace("__imul__", "1done")),
        ("x /= y", "syntax", _inplace("__itruediv__", "1done")),
        ("x += 1.0", "syntax", _inplace("__iadd__", 1.0)),
        ("x -= 1.0", "syntax", _inplace("__isub__", 1.0)),
        ("x *= -1.0", "syntax", _inplace("__imul__", -1.0)),
        ("x /= -1.0", "syntax", _inplace("__itruediv__", -1.0)),
        ("sum(x)", "function", lambda ns, d: ns.sum(d["1dx"])),
        ("mean(x)", "function", lambda ns, d: ns.mean(d["1dx"])),
        (
            "sum(x2d, axis=1)",
            "torch-function",
            lambda ns, d: ns.sum(d["2dx"], axis=1) if ns is not None else torch.sum(d["2dx"], dim=1),
        ),
        (
            "mean(x2d, axis=0)",
            "torch-function",
            lambda ns, d: ns.mean(d["2dx"], axis=0) if ns is not None else torch.mean(d["2dx"], dim=0),
        ),
        (
            "sum(x2d, axis=(0, 1))",
            "torch-function",
            lambda ns, d: ns.sum(d["2dx"], axis=(0, 1)) if ns is not None else torch.sum(d["2dx"], dim=(0, 1)),
        ),
        ("x @ y, 4x4", "syntax", lambda ns, d: d["m4x"] @ d["m4y"]),
        ("x @ y, 16x16", "syntax", lambda ns, d: d["m16x"] @ d["m16y"]),
        ("x @ y, 64x64", "syntax", lambda ns, d: d["m64x"] @ d["m64y"]),
        ("matmul(x, y), 16x16", "function", lambda ns, d: ns.matmul(d["m16x"], d["m16y"])),
        ("x[1:5]", "syntax", lambda ns, d: d["1dx"][1:5]),
        ("x2d[:, 2]", "syntax", lambda ns, d: d["2dx"][:, 2]),
        ("x[...]", "syntax", lambda ns, d: d["1dx"][...]),
        ("x[3]", "syntax", lambda ns, d: d["1dx"][3]),
    ]


def _elements(name: str, size: str) -> int:
    """Elements of each operand: 10 or 10**6, or a square matrix's where the row names its sides."""
    sides = [int(w.split("x")[0]) for w in name.replace(",", " ").split() if w[0].isdigit() and "x" in w]
    return sides[0] ** 2 if sides else 10 if size == "small" else 10**6


def _inplace(method: str, operand: str | float) -> Callable[[object, dict], object]:
    def call(ns: object, d: dict) -> object:
        x = d["1dx"]
        return getattr(x, method)(d[operand] if isinstance(operand, str) else operand)

    return call


# The large-array rows: reductions (where the arithmetic dominates), elementwise work and views.
LARGE_OPS = (
    "add(x, y)",
    "x * 2.0",
    "x += y",
    "sum(x)",
    "mean(x)",
    "sum(x2d, axis=1)",
    "mean(x2d, axis=0)",
    "sum(x2d, axis=(0, 1))",
    "x[1:5]",
    "x2d[:, 2]",
    "x[...]",
)


def _namespaces(form: str) -> object:
    return {"trn": xp, "torch": torch, "compat": compat}[form]


def _check(name: str, kind: str, results: dict[str, object]) -> None:
    """Every form computes the same values (a sanity check of the benchmark, not a test)."""
    ref = np.asarray(results["torch"], dtype=np.float64)
    for form, r in results.items():
        got = np.asarray(r, dtype=np.float64)
        if got.shape != ref.shape or not np.allclose(got, ref, rtol=1e-5, atol=1e-5, equal_nan=True):
            raise AssertionError(f"{name}: {form} differs from torch")


def measure(name: str, kind: str, call: Callable, size: str, reps: int) -> dict:
    data = _data(SMALL if size == "small" else LARGE, seed=0)
    forms = FORMS if kind != "syntax" else ("trn", "torch")
    calls = {}
    for f in forms:
        ns = None if (kind == "torch-function" and f == "torch") else _namespaces(f)
        calls[f] = lambda ns=ns, d=data[f]: call(ns, d)
    if "=" not in name:  # in-place calls change their operand: their values are not compared
        _check(name, kind, {f: c() for f, c in calls.items()})
    # a large array's reductions and arithmetic take 0.1-1 ms a call; its views cost what a small one's do
    inner = 20 if size == "large" and "[" not in name else 400
    for c in calls.values():  # warm up
        for _ in range(inner):
            c()
    samples: dict[str, list[float]] = {f: [] for f in forms}
    gc.collect()
    gc.disable()  # a collection inside one form's sample would land on that form alone
    try:
        for r in range(reps):
            order = forms[r % len(forms) :] + forms[: r % len(forms)]
            for f in order:
                c = calls[f]
                t0 = time.perf_counter()
                for _ in range(inner):
                    c()
                samples[f].append((time.perf_counter() - t0) / inner * 1e6)
    finally:
        gc.enable()
    row = {
        "name": name,
        "size": size,
        "elements": _elements(name, size),
        "reps": reps,
        "calls_per_sample": inner,
        "median_us": {f: statistics.median(s) for f, s in samples.items()},
        "samples_us": samples,
    }
    for f in forms[1:]:
        pairs = list(zip(samples["trn"], samples[f], strict=True))
        row[f"trn_over_{f}_us"] = statistics.median(a - b for a, b in pairs)
        row[f"trn_over_{f}_ratio"] = statistics.median(a / b for a, b in pairs)
        if f == "compat":
            row["compat_over_torch_us"] = statistics.median(
                a - b for a, b in zip(samples["compat"], samples["torch"], strict=True)
            )
    return row


def table(rows: list[dict]) -> str:
    lines = [
        "| operation | size | trn (us) | torch (us) | compat (us) | trn - torch (us) | trn / torch | "
        "compat - torch (us) |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        m = r["median_us"]
        compat_us = f"{m['compat']:.2f}" if "compat" in m else "-"
        compat_over = f"{r['compat_over_torch_us']:.2f}" if "compat_over_torch_us" in r else "-"
        lines.append(
            f"| `{r['name']}` | {r['elements']:g} | {m['trn']:.2f} | {m['torch']:.2f} | {compat_us} | "
            f"{r['trn_over_torch_us']:.2f} | {r['trn_over_torch_ratio']:.3f} | {compat_over} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=81)
    parser.add_argument("--only", default="", help="comma-separated substrings of operation names")
    parser.add_argument("--size", choices=("small", "large", "both"), default="both")
    parser.add_argument("--threads", type=int, default=0, help="torch's intra-op threads (0: torch's default)")
    parser.add_argument("--out", type=Path, default=RESULTS / "bench_namespace.json")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    rows = []
    for size in ("small", "large"):
        if args.size not in (size, "both"):
            continue
        for name, kind, call in _ops():
            if size == "large" and name not in LARGE_OPS:
                continue
            if args.only and not any(s.strip() and s.strip() in name for s in args.only.split(",")):
                continue
            rows.append(measure(name, kind, call, size, args.reps))
            r = rows[-1]
            print(
                f"{name} ({r['elements']:g}): trn - torch {r['trn_over_torch_us']:.2f} us, "
                f"trn / torch {r['trn_over_torch_ratio']:.3f}",
                flush=True,
            )
    meta = run_metadata(
        array_api_compat=array_api_compat.__version__,
        trn_backend=str(Path(xp.__file__).parent),
        dtype="float32",
        small_shapes=SMALL,
        large_shapes=LARGE,
        note="times: medians of per-call means over interleaved repetitions; trn - torch and trn / torch: medians "
        "of per-repetition differences and ratios; compat is array_api_compat.torch",
    )
    save(args.out, meta, rows, table(rows))


if __name__ == "__main__":
    main()
