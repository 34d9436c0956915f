"""Benchmark: what NumPy dispatch (NEP 18 ``__array_function__``, NEP 13 ``__array_ufunc__``) adds to a call.

Each row is a NumPy call on small float32 NeuronArrays (10 elements: shape (10,) or (2, 5); square matrices of
sides 4, 16 and 64 for the matrix products) beside the direct namespace call that computes the same thing
(checked equal first); the difference is the cost of dispatch: NumPy's protocol, binding the call against
NumPy's signature, converting the arguments, ``out=``. Both calls run in
one process, interleaved (each repetition runs both, alternating which goes first), with idle BLAS/OpenMP threads
set to sleep (see below). Times are medians of per-call means over a sample; the overhead and the ratio are
medians of per-repetition differences and ratios, robust to load changes on a shared machine. The JSON in
benchmarks/results/ keeps every sample. A measurement, not a test.

    python benchmarks/bench_numpy_dispatch.py [--reps 21] [--only sum,add] [--clock wall|cpu]
                                              [--out benchmarks/results/x.json] [--before earlier.json]

``--clock cpu`` times with this thread's CPU time instead of wall time: on a loaded machine, time spent waiting
for a core then does not count (what the calls compute is the same).

``--before`` takes this script's JSON from another version of the code (``PYTHONPATH=/tmp/base python
benchmarks/bench_numpy_dispatch.py --out /tmp/before.json``) and adds its overheads to the table.
"""

from __future__ import annotations

import os

# Idle BLAS/OpenMP threads spin for a while after each call; on a small shared machine they then steal the cores
# from the next call. Make idle threads sleep at once (set before numpy and torch load their thread pools).
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import gc
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from _results import run_metadata, save

import trn_backend as xp

RESULTS = Path(__file__).parent / "results"
FORMS = ("numpy", "namespace")


def _data() -> dict[str, object]:
    """The operands: x, y of shape (10,), m of shape (2, 5), a boolean c, out arrays o0 (0-d) and o10, and square
    matrices a4, a16, a64 (sides 4, 16, 64)."""
    rng = np.random.default_rng(0)
    x, y = (rng.random(10, dtype=np.float32) + 1 for _ in range(2))
    squares = {f"a{n}": xp.asarray(rng.random((n, n), dtype=np.float32) + 1) for n in (4, 16, 64)}
    return {
        "x": xp.asarray(x),
        "y": xp.asarray(y),
        "m": xp.asarray(x.reshape(2, 5)),
        "c": xp.asarray(x > y),
        "o0": xp.zeros((), dtype=xp.float32),
        "o10": xp.zeros((10,), dtype=xp.float32),
        **squares,
    }


def _into(out: object, value: object) -> object:
    """The namespace's spelling of ``out=``: write the result into out, and give out."""
    out[...] = value
    return out


# (NumPy call, namespace call): each a string evaluated with the operands, np and xp in scope. Every function
# group of the table is here: reductions, element-wise ufuncs (array and scalar operands), out= of functions and
# ufuncs, contractions, shapes and joins, indexing, linalg, fft, ufunc methods, creation, the directly registered
# array-API functions, dtype arguments.
CASES: list[tuple[str, str]] = [
    ("np.sum(x)", "xp.sum(x)"),
    ("np.sum(x, axis=0)", "xp.sum(x, axis=0)"),
    ("np.sum(x, out=o0)", "_into(o0, xp.sum(x))"),
    ("np.mean(x)", "xp.mean(x)"),
    ("np.max(x)", "xp.max(x)"),
    ("np.std(x)", "xp.std(x)"),
    ("np.cumsum(x)", "xp.cumulative_sum(x)"),
    ("np.add(x, y)", "xp.add(x, y)"),
    ("np.add(x, 1.0)", "xp.add(x, 1.0)"),
    ("np.multiply(x, y)", "xp.multiply(x, y)"),
    ("np.exp(x)", "xp.exp(x)"),
    ("np.sqrt(x)", "xp.sqrt(x)"),
    ("np.greater(x, y)", "xp.greater(x, y)"),
    ("np.add(x, y, out=o10)", "_into(o10, xp.add(x, y))"),
    ("np.matmul(x, y)", "xp.matmul(x, y)"),
    ("np.matmul(a4, a4)", "xp.matmul(a4, a4)"),
    ("np.matmul(a16, a16)", "xp.matmul(a16, a16)"),
    ("np.matmul(a64, a64)", "xp.matmul(a64, a64)"),
    ("np.einsum('i,i->', x, y)", "xp.einsum('i,i->', x, y)"),
    ("np.reshape(x, (2, 5))", "xp.reshape(x, (2, 5))"),
    ("np.transpose(m)", "xp.permute_dims(m, (1, 0))"),
    ("np.concatenate([x, y])", "xp.concat([x, y])"),
    ("np.stack([x, y])", "xp.stack([x, y])"),
    ("np.where(c, x, y)", "xp.where(c, x, y)"),
    ("np.clip(x, 1.25, 1.75)", "xp.clip(x, 1.25, 1.75)"),
    ("np.argsort(x)", "xp.argsort(x, stable=True)"),
    ("np.linalg.norm(x)", "xp.linalg.vector_norm(x)"),
    ("np.linalg.vector_norm(x)", "xp.linalg.vector_norm(x)"),
    ("np.astype(x, np.float64)", "xp.astype(x, xp.float64)"),
    ("np.fft.fft(x)", "xp.fft.fft(xp.astype(x, xp.complex64))"),
    ("np.add.reduce(x)", "xp.sum(x, axis=0)"),
    ("np.add.accumulate(x)", "xp.cumulative_sum(x, axis=0)"),
    ("np.multiply.outer(x, y)", "xp.multiply(xp.reshape(x, (10, 1)), y)"),
    ("np.zeros_like(x)", "xp.zeros_like(x)"),
]


def _callables(numpy_call: str, namespace_call: str) -> dict[str, Callable[[], object]]:
    scope = {"np": np, "xp": xp, "_into": _into, **_data()}
    return {
        form: eval(f"lambda: {code}", scope) for form, code in zip(FORMS, (numpy_call, namespace_call), strict=True)
    }


def _check(name: str, results: dict[str, object]) -> None:
    """Both forms compute the same thing: same type, dtype and values (a wrong pair would measure nothing)."""
    a, b = (results[f] for f in FORMS)
    if type(a) is not type(b) or a.dtype != b.dtype:
        raise AssertionError(
            f"{name}: the NumPy call gives {type(a).__name__} {a.dtype}, the namespace call "
            f"{type(b).__name__} {b.dtype}"
        )
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=name)


CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.thread_time}


def measure(numpy_call: str, namespace_call: str, reps: int, inner: int, clock: Callable[[], float]) -> dict:
    calls = _callables(numpy_call, namespace_call)
    _check(numpy_call, {f: c() for f, c in calls.items()})
    for c in calls.values():  # warm up
        for _ in range(inner):
            c()
    samples: dict[str, list[float]] = {f: [] for f in FORMS}
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for r in range(reps):
            for f in FORMS[r % 2 :] + FORMS[: r % 2]:  # each form goes first in every other repetition
                c = calls[f]
                t0 = clock()
                for _ in range(inner):
                    c()
                samples[f].append((clock() - t0) / inner * 1e6)
            gc.collect()
    finally:
        if gc_was_enabled:
            gc.enable()
    pairs = list(zip(samples["numpy"], samples["namespace"], strict=True))
    return {
        "name": numpy_call,
        "namespace_call": namespace_call,
        "reps": reps,
        "calls_per_sample": inner,
        "median_us": {f: statistics.median(s) for f, s in samples.items()},
        "overhead_us": statistics.median(a - b for a, b in pairs),
        "ratio": statistics.median(a / b for a, b in pairs),
        "samples_us": samples,
    }


def table(rows: list[dict], before: dict[str, dict] | None) -> str:
    head = "| NumPy call | namespace call | numpy (us) | namespace (us) | overhead (us) | ratio |"
    rule = "|---|---|---:|---:|---:|---:|"
    if before:
        head += " overhead before (us) | numpy before (us) |"
        rule += "---:|---:|"
    lines = [head, rule]
    for r in rows:
        m = r["median_us"]
        line = (
            f"| `{r['name']}` | `{r['namespace_call']}` | {m['numpy']:.2f} | {m['namespace']:.2f} | "
            f"{r['overhead_us']:.2f} | {r['ratio']:.2f} |"
        )
        if before:
            b = before.get(r["name"])
            line += f" {b['overhead_us']:.2f} | {b['median_us']['numpy']:.2f} |" if b else " - | - |"
        lines.append(line)
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=21)
    parser.add_argument("--inner", type=int, default=200, help="calls per sample")
    parser.add_argument("--only", default="", help="comma-separated substrings of the NumPy calls")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall")
    parser.add_argument("--out", type=Path, default=RESULTS / "bench_numpy_dispatch.json")
    parser.add_argument("--before", type=Path, help="this script's JSON from another version, to compare")
    args = parser.parse_args()
    chosen = [c for c in CASES if not args.only or any(s.strip() in c[0] for s in args.only.split(","))]
    rows = []
    for numpy_call, namespace_call in chosen:
        rows.append(measure(numpy_call, namespace_call, args.reps, args.inner, CLOCKS[args.clock]))
        print(f"{numpy_call}: {rows[-1]['overhead_us']:.2f} us over the namespace", flush=True)
    meta = run_metadata(
        trn_backend=os.path.dirname(xp.__file__),
        dtype="float32",
        clock=args.clock,
        note="times: medians over interleaved repetitions of per-call means; overhead and ratio: medians of "
        "per-repetition differences and ratios (NumPy call minus, over, the namespace call)",
    )
    before = None
    if args.before:
        before = {r["name"]: r for r in json.loads(args.before.read_text())["results"]}
    worst = max(rows, key=lambda r: r["overhead_us"])
    save(
        args.out,
        meta,
        rows,
        f"{table(rows, before)}\n\nlargest overhead: {worst['overhead_us']:.2f} us ({worst['name']})",
    )


if __name__ == "__main__":
    main()
