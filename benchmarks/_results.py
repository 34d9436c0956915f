"""What the benchmarks in this folder share: the metadata of a run and how its results are saved.

Imported by the scripts as a sibling module (``python benchmarks/<script>.py`` puts this folder on sys.path).
"""

from __future__ import annotations

import datetime
import gc
import json
import os
import platform
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

# the thread settings every script makes before importing numpy and torch (see bench_contract.py)
THREAD_ENV = ("OMP_WAIT_POLICY", "OPENBLAS_THREAD_TIMEOUT")


def interleaved_seconds(calls: dict[str, Callable[[], object]], reps: int) -> dict[str, list[float]]:
    """Seconds per call of each entry: every repetition runs each once, in an order rotated between repetitions,
    so that load changes on a shared machine hit every entry alike."""
    names = list(calls)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for rep in range(reps):
        for name in names[rep % len(names) :] + names[: rep % len(names)]:
            start = time.perf_counter()
            calls[name]()
            samples[name].append(time.perf_counter() - start)
    return samples


def interleaved_ms(calls: dict[str, Callable[[], object]], reps: int, inner: int) -> dict[str, list[float]]:
    """Per entry, ``reps`` samples in ms per call, each the mean of ``inner`` calls, interleaved as
    ``interleaved_seconds`` interleaves them; before each sample the previous entry's threads get 10 ms to go idle
    and the garbage is collected, and no collection runs inside a sample (it would land on that entry alone)."""
    names = list(calls)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for rep in range(reps):
        for name in names[rep % len(names) :] + names[: rep % len(names)]:
            time.sleep(0.01)
            gc.collect()
            gc.disable()
            try:
                start = time.perf_counter()
                for _ in range(inner):
                    calls[name]()
                samples[name].append((time.perf_counter() - start) / inner * 1e3)
            finally:
                gc.enable()
    return samples


def run_metadata(**extra: object) -> dict:
    """The machine, versions and thread settings of this run, then ``extra`` (the script's own settings)."""
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": platform.processor() or platform.machine(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "cpus": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "env": {k: os.environ.get(k) for k in THREAD_ENV},
        **extra,
    }


def save(out: Path, meta: dict, rows: list, table: str | None = None, **more: object) -> None:
    """Write ``{"meta", "results", **more}`` as JSON to ``out`` (folders made as needed); print the markdown
    ``table`` of the rows, if given, and where the JSON went."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"meta": meta, "results": rows, **more}, indent=1))
    if table is not None:
        print(f"\n{table}")
    print(f"\nwritten to {out}")


def fixed_hash_seed() -> None:
    """Re-run this script with PYTHONHASHSEED=0 unless it already has it: str hashes (and so the iteration order
    of sets of index names inside path finders such as opt_einsum's random-greedy) then repeat between runs, so
    the same instance gets the same contraction path in a later run. Call before any work is done."""
    import sys

    if os.environ.get("PYTHONHASHSEED") != "0":
        os.environ["PYTHONHASHSEED"] = "0"
        os.execv(sys.executable, [sys.executable, *sys.argv])
