"""Benchmark: what a ``with trn_backend.precision("native"):`` block costs a small contraction call.

Each contraction runs on small float32 operands in three forms: the torch call on the bare tensors, the
trn_backend call outside any precision block (the device default, native on the CPU), and the same call inside
a ``precision("native")`` block (entered once around the sample, so the block's own entry is not counted: the
cost measured is that of a call made while a block is in force). All forms run in one process, interleaved (each
repetition runs every form once, rotating their order), with idle BLAS/OpenMP threads set to sleep. Times are
medians of per-call means over a sample; "over torch" and "block - outside" are medians of per-repetition
differences, robust to load changes on a shared machine. The JSON in benchmarks/results/ keeps every sample. A
measurement, not a test.

    python benchmarks/bench_precision_block.py [--reps 41] [--out benchmarks/results/bench_precision_block.json]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse  # noqa: E402
import gc  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
from _results import run_metadata, save  # noqa: E402

import trn_backend as xp  # noqa: E402

RESULTS = Path(__file__).parent / "results"
FORMS = ("torch", "trn", "trn_native_block")
INNER = 400


def _operations() -> list[tuple[str, Callable[[dict], object], Callable[[dict], object]]]:
    """(name, the trn call on the NeuronArrays, the torch call on their tensors)."""
    return [
        ("x @ y, 4x4", lambda d: d["a4"] @ d["b4"], lambda d: d["a4"] @ d["b4"]),
        ("x @ y, 16x16", lambda d: d["a16"] @ d["b16"], lambda d: d["a16"] @ d["b16"]),
        ("matmul(x, y), 16x16", lambda d: xp.matmul(d["a16"], d["b16"]), lambda d: torch.matmul(d["a16"], d["b16"])),
        (
            "einsum('ij,jk->ik'), 16x16",
            lambda d: xp.einsum("ij,jk->ik", d["a16"], d["b16"]),
            lambda d: torch.einsum("ij,jk->ik", d["a16"], d["b16"]),
        ),
        (
            "tensordot(x, y, axes=1), 16x16",
            lambda d: xp.tensordot(d["a16"], d["b16"], axes=1),
            lambda d: torch.tensordot(d["a16"], d["b16"], dims=1),
        ),
        (
            "vecdot(x, y), 16",
            lambda d: xp.vecdot(d["v16"], d["w16"]),
            lambda d: torch.linalg.vecdot(d["v16"], d["w16"]),
        ),
        (
            "einsum('ij,jk,kl->il'), 16x16",
            lambda d: xp.einsum("ij,jk,kl->il", d["a16"], d["b16"], d["a16"]),
            lambda d: torch.einsum("ij,jk,kl->il", d["a16"], d["b16"], d["a16"]),
        ),
    ]


def _data() -> tuple[dict, dict]:
    rng = np.random.default_rng(0)
    tensors = {"a4": (4, 4), "b4": (4, 4), "a16": (16, 16), "b16": (16, 16), "v16": (16,), "w16": (16,)}
    tensors = {k: torch.from_numpy(rng.random(s, dtype=np.float32) + 1) for k, s in tensors.items()}
    return tensors, {k: xp.NeuronArray(t) for k, t in tensors.items()}


def _timed(call: Callable[[], object], block: bool) -> float:
    """Microseconds per call over ``INNER`` calls (inside a ``precision("native")`` block where ``block``)."""
    if block:
        with xp.precision("native"):
            start = time.perf_counter()
            for _ in range(INNER):
                call()
            return (time.perf_counter() - start) / INNER * 1e6
    start = time.perf_counter()
    for _ in range(INNER):
        call()
    return (time.perf_counter() - start) / INNER * 1e6


def measure(name: str, trn: Callable, bare: Callable, reps: int) -> dict:
    tensors, arrays = _data()
    calls = {"torch": lambda: bare(tensors), "trn": lambda: trn(arrays), "trn_native_block": lambda: trn(arrays)}
    want = np.asarray(calls["torch"]())
    for form, call in calls.items():  # a sanity check of the benchmark, and the warm-up
        got = np.asarray(_call_in(form, call))
        if not np.allclose(got, want, rtol=1e-5):
            raise AssertionError(f"{name}: {form} differs from torch")
        for _ in range(INNER):
            _call_in(form, call)
    samples: dict[str, list[float]] = {f: [] for f in FORMS}
    gc.collect()
    gc.disable()
    try:
        for r in range(reps):
            for form in FORMS[r % len(FORMS) :] + FORMS[: r % len(FORMS)]:
                samples[form].append(_timed(calls[form], form == "trn_native_block"))
    finally:
        gc.enable()

    def over(a: str, b: str) -> float:
        return statistics.median(x - y for x, y in zip(samples[a], samples[b], strict=True))

    return {
        "name": name,
        "reps": reps,
        "calls_per_sample": INNER,
        "median_us": {f: statistics.median(s) for f, s in samples.items()},
        "trn_over_torch_us": over("trn", "torch"),
        "block_over_torch_us": over("trn_native_block", "torch"),
        "block_over_outside_us": over("trn_native_block", "trn"),
        "samples_us": samples,
    }


def _call_in(form: str, call: Callable[[], object]) -> object:
    if form == "trn_native_block":
        with xp.precision("native"):
            return call()
    return call()


def table(rows: list[dict]) -> str:
    lines = [
        "| call | torch (us) | trn (us) | in precision('native') (us) | trn - torch | block - torch | "
        "block - outside |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        m = r["median_us"]
        lines.append(
            f"| `{r['name']}` | {m['torch']:.2f} | {m['trn']:.2f} | {m['trn_native_block']:.2f} | "
            f"{r['trn_over_torch_us']:+.2f} | {r['block_over_torch_us']:+.2f} | "
            f"{r['block_over_outside_us']:+.2f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=41)
    parser.add_argument("--out", type=Path, default=RESULTS / "bench_precision_block.json")
    args = parser.parse_args()
    rows = [measure(name, trn, bare, args.reps) for name, trn, bare in _operations()]
    meta = run_metadata(
        trn_backend=str(Path(xp.__file__).parent),
        inner=INNER,
        note="block - outside: a call inside `with precision('native'):` less the same call outside "
        "it, median of per-repetition differences",
    )
    save(args.out, meta, rows, table(rows))


if __name__ == "__main__":
    main()
