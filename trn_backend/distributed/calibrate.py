"""Calibration of the alpha-beta communication model on this machine: gloo collectives between CPU processes.

The model (``_comm``: the ring and pairwise costs of Thakur, Rabenseifner and Gropp, IJHPCA 2005) prices one
collective over ``p`` ranks, each handing in ``n`` bytes, as ``a alpha + b beta`` with ``(a, b) =
_comm.regressors(kind, p, n)``: alpha a latency per step (seconds), beta a cost per byte.

``python -m trn_backend.distributed.calibrate [--ranks 2 4] [--out PATH] [--quick]`` spawns ``p`` gloo processes
for each ``p`` given and times, on every rank, torch.distributed's functional collectives as DTensor issues them,
on float64 buffers of 8 bytes to 8 MiB: a barrier before each repetition, the median over repetitions of the
slowest rank's time. It fits ``alpha`` and ``beta`` per kind over every ``p`` at once, measures this machine's
matmul rate, prints a table and writes the ``gloo-cpu`` entry of the JSON file at ``--out`` (by default the table
the package ships, ``trn_backend/data/interconnects.json``), keeping the file's other entries.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist

from ._comm import KINDS, regressors
from ._mesh import leave_together

__all__ = ["KINDS", "regressors", "modelled_seconds", "fit_alpha_beta", "residuals", "calibrate", "main"]

DEFAULT_OUT = Path(__file__).resolve().parent.parent / "data" / "interconnects.json"
ENTRY = "gloo-cpu"

# 2**3 .. 2**23 bytes: from one float64, where latency is all there is, to 8 MiB, where bandwidth dominates
SIZES = tuple(2**k for k in range(3, 24))
QUICK_SIZES = (2**3, 2**9, 2**15, 2**21)
REPS = 15
QUICK_REPS = 3
MATMUL_SIZES = (512, 1024)
MATMUL_REPS = 7
QUICK_MATMUL_REPS = 3
COLLECTIVE_TIMEOUT_S = 60.0  # a lost rank fails the others after this long, not after gloo's default 30 min
RUN_TIMEOUT_S = 900.0  # the whole run of one group size


# --- the model (``_comm``'s formulas, one place) ---


def modelled_seconds(kind: str, p: int, n_bytes: float, alpha: float, beta: float) -> float:
    """The model's time in seconds of one ``kind`` collective over ``p`` ranks, each handing in ``n_bytes``."""
    a, b = regressors(kind, p, n_bytes)
    return a * alpha + b * beta


def fit_alpha_beta(kind: str, samples: Iterable[tuple[int, float, float]]) -> tuple[float, float]:
    """(alpha, beta), both non-negative, of the least-squares fit of the model to ``samples``, triples
    (p, n_bytes, seconds); samples of several group sizes fit together.

    The residuals are relative (each row is divided by its measured time): the samples span six orders of
    magnitude in size, and absolute residuals would let the largest few decide alpha alone. Where the
    unconstrained fit has a negative parameter, the optimum lies on a face of the feasible quadrant: the better
    of the one-parameter fits (the other parameter 0, the fitted one clipped at 0)."""
    rows = [(*regressors(kind, p, n), t) for p, n, t in samples]
    if not rows:
        raise ValueError(f"no samples to fit for {kind}")
    a = np.array([[r[0], r[1]] for r in rows], dtype=np.float64)
    t = np.array([r[2] for r in rows], dtype=np.float64)
    if np.any(t <= 0) or not np.all(np.isfinite(t)):
        raise ValueError(f"every measured time must be positive and finite ({kind})")
    # scale the columns too, so the solver sees numbers near 1 (alpha ~1e-4 s, beta ~1e-9 s/B)
    weighted = a / t[:, None]
    scale = np.abs(weighted).max(axis=0)
    scale[scale == 0] = 1.0
    design = weighted / scale
    ones = np.ones_like(t)
    x, *_ = np.linalg.lstsq(design, ones, rcond=None)
    if np.all(x >= 0):
        alpha, beta = x / scale
        return float(alpha), float(beta)
    best: tuple[float, float, float] | None = None
    for j in range(2):
        col = design[:, j]
        denom = float(col @ col)
        coef = max(0.0, float(col @ ones) / denom) if denom > 0 else 0.0
        cost = float(np.sum((ones - coef * col) ** 2))
        params = [0.0, 0.0]
        params[j] = coef / scale[j]
        if best is None or cost < best[0]:
            best = (cost, params[0], params[1])
    assert best is not None
    return best[1], best[2]


def residuals(kind: str, samples: Iterable[tuple[int, float, float]], alpha: float, beta: float) -> list[float]:
    """Measured over modelled time of each sample (1 where the model is exact)."""
    out = []
    for p, n, t in samples:
        model = modelled_seconds(kind, p, n, alpha, beta)
        out.append(t / model if model > 0 else math.inf)
    return out


# --- the measurement, on every rank ---


def _collectives() -> dict[str, Callable[[torch.Tensor, Any], torch.Tensor]]:
    """The functional collective of each kind, on dimension 0, as DTensor calls it: ``*_single`` where torch has
    it (DTensor's redistribution calls these), else the older ``*_tensor`` names they replaced."""
    import torch.distributed._functional_collectives as funcol

    gather = getattr(funcol, "all_gather_single", None) or funcol.all_gather_tensor
    scatter = getattr(funcol, "reduce_scatter_single", None) or funcol.reduce_scatter_tensor
    return {
        "all_gather": lambda x, g: gather(x, 0, g),
        "reduce_scatter": lambda x, g: scatter(x, "sum", 0, g),
        "all_reduce": lambda x, g: funcol.all_reduce(x, "sum", g),
        "all_to_all": lambda x, g: funcol.all_to_all_single(x, None, None, g),
    }


def _wait(y: torch.Tensor) -> torch.Tensor:
    from torch.distributed._functional_collectives import AsyncCollectiveTensor

    return y.wait() if isinstance(y, AsyncCollectiveTensor) else y


def _numel(kind: str, n_bytes: int, p: int) -> int:
    """float64 elements of each rank's buffer: ``n_bytes / 8``, rounded up to a multiple of ``p`` where the
    collective splits the buffer into ``p`` blocks."""
    numel = max(1, n_bytes // 8)
    if kind in ("reduce_scatter", "all_to_all"):
        numel = -(-numel // p) * p
    return numel


def _probe_all_to_all(group: Any) -> bool:
    """Whether the backend runs ``all_to_all_single``; every rank gets the same answer."""
    fn = _collectives()["all_to_all"]
    p = dist.get_world_size(group)
    try:
        _wait(fn(torch.zeros(p, dtype=torch.float64), group))
        ok = 1.0
    except (RuntimeError, NotImplementedError, ValueError):
        ok = 0.0
    flag = torch.tensor([ok], dtype=torch.float64)
    dist.all_reduce(flag, op=dist.ReduceOp.MIN, group=group)
    return bool(flag.item())


def _rank_main(rank: int, p: int, store_path: str, result_path: str, sizes: Sequence[int], reps: int) -> None:
    """One rank of a calibration run: times every kind at every size; rank 0 writes the samples (the median over
    repetitions of the slowest rank's time) to ``result_path``."""
    # several processes share few cores: one thread each keeps them from fighting over the cores
    torch.set_num_threads(1)
    store = dist.FileStore(store_path, p)
    dist.init_process_group(
        "gloo", store=store, rank=rank, world_size=p, timeout=datetime.timedelta(seconds=COLLECTIVE_TIMEOUT_S)
    )
    try:
        group = dist.group.WORLD
        kinds = [k for k in KINDS if k != "all_to_all" or _probe_all_to_all(group)]
        fns = _collectives()
        # rounding to a multiple of p can map small sizes to one buffer: each is timed once
        numels = {kind: sorted({_numel(kind, size, p) for size in sizes}) for kind in kinds}
        times = torch.zeros(len(kinds), len(sizes), reps, dtype=torch.float64)
        for i, kind in enumerate(kinds):
            for j, numel in enumerate(numels[kind]):
                x = torch.ones(numel, dtype=torch.float64)
                _wait(fns[kind](x, group))  # warm-up: the first call of a shape sets up buffers
                for r in range(reps):
                    # the barrier lines the ranks up, so each repetition times the collective, not the skew of
                    # the one before
                    dist.barrier(group)
                    start = time.perf_counter()
                    _wait(fns[kind](x, group))
                    times[i, j, r] = time.perf_counter() - start
        # the collective ends when its slowest rank does
        dist.all_reduce(times, op=dist.ReduceOp.MAX, group=group)
        if rank == 0:
            samples = {
                kind: [[p, 8 * numel, statistics.median(times[i, j].tolist())] for j, numel in enumerate(numels[kind])]
                for i, kind in enumerate(kinds)
            }
            Path(result_path).write_text(json.dumps({"samples": samples, "all_to_all": "all_to_all" in kinds}))
        leave_together(store, datetime.timedelta(seconds=COLLECTIVE_TIMEOUT_S))
    except BaseException:
        # a failing rank ends its group at once (its peers time out), and the error reaches the parent
        dist.destroy_process_group()
        raise


def _run_group(p: int, sizes: Sequence[int], reps: int) -> dict[str, Any]:
    """Spawns ``p`` gloo ranks that time every collective; returns rank 0's result."""
    import torch.multiprocessing as mp

    with tempfile.TemporaryDirectory(prefix="trn-calibrate-") as tmp:
        store_path = os.path.join(tmp, "store")
        result_path = os.path.join(tmp, "result.json")
        context = mp.start_processes(
            _rank_main,
            args=(p, store_path, result_path, tuple(sizes), reps),
            nprocs=p,
            join=False,
            start_method="spawn",
        )
        deadline = time.monotonic() + RUN_TIMEOUT_S
        while not context.join(timeout=max(0.1, deadline - time.monotonic())):
            if time.monotonic() > deadline:
                for proc in context.processes:
                    proc.kill()
                raise TimeoutError(f"the {p} gloo ranks did not finish within {RUN_TIMEOUT_S} s")
        return json.loads(Path(result_path).read_text())


def matmul_rates(reps: int = MATMUL_REPS, sizes: Sequence[int] = MATMUL_SIZES) -> dict[str, dict[int, float]]:
    """This process's torch.matmul rate in FLOP/s (2 m n k over the median time of ``reps`` products), per dtype
    name (float64, float32) and square size."""
    out: dict[str, dict[int, float]] = {}
    gen = torch.Generator().manual_seed(0)
    for dtype in (torch.float64, torch.float32):
        out[str(dtype).removeprefix("torch.")] = rates = {}
        for m in sizes:
            a = torch.rand(m, m, generator=gen, dtype=dtype)
            b = torch.rand(m, m, generator=gen, dtype=dtype)
            torch.matmul(a, b)  # warm-up: thread pool and caches
            ts = []
            for _ in range(reps):
                start = time.perf_counter()
                torch.matmul(a, b)
                ts.append(time.perf_counter() - start)
            rates[m] = 2.0 * m**3 / statistics.median(ts)
    return out


def _machine() -> str:
    name = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                name = f"{line.split(':', 1)[1].strip()} ({name})"
                break
    except OSError:
        pass
    return f"{name}/{os.cpu_count()} CPUs"


def calibrate(ranks: Sequence[int] = (2, 4), quick: bool = False) -> dict[str, Any]:
    """Measures and fits: the ``gloo-cpu`` entry of the interconnect table (fitted alpha and beta per kind,
    the samples they fit, the fit's residuals, this machine's matmul rate)."""
    if any(p < 2 for p in ranks):
        raise ValueError(f"every group needs 2 ranks or more, got {list(ranks)}")
    sizes = QUICK_SIZES if quick else SIZES
    reps = QUICK_REPS if quick else REPS
    started = time.perf_counter()
    # the machine may be shared: the load when the run began says how much to trust its numbers
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    samples: dict[str, list[list[float]]] = {kind: [] for kind in KINDS}
    all_to_all = True
    for p in ranks:
        result = _run_group(p, sizes, reps)
        all_to_all = all_to_all and result["all_to_all"]
        for kind, rows in result["samples"].items():
            samples[kind].extend(rows)
    if not all_to_all:
        samples["all_to_all"] = []
    collectives: dict[str, dict[str, float] | None] = {}
    fit_residuals: dict[str, dict[str, float] | None] = {}
    for kind in KINDS:
        rows = [(int(p), float(n), float(t)) for p, n, t in samples[kind]]
        if not rows:
            collectives[kind] = fit_residuals[kind] = None
            continue
        alpha, beta = fit_alpha_beta(kind, rows)
        collectives[kind] = {"alpha_s": alpha, "beta_s_per_byte": beta}
        res = residuals(kind, rows, alpha, beta)
        fit_residuals[kind] = {"min": min(res), "median": statistics.median(res), "max": max(res)}
    rates = matmul_rates(QUICK_MATMUL_REPS if quick else MATMUL_REPS)
    command = "python -m trn_backend.distributed.calibrate --ranks " + " ".join(map(str, ranks))
    return {
        "basis": "measured",
        "command": command + (" --quick" if quick else ""),
        "date": datetime.date.today().isoformat(),
        "machine": _machine(),
        "torch": torch.__version__.split("+")[0],
        "collectives": collectives,
        # DTensor's Shard-to-Shard redistribution on a CPU mesh gathers everything and keeps a chunk
        # (torch.distributed.tensor._collective_utils.shard_dim_alltoall), whatever gloo itself supports
        "all_to_all_native": False,
        "matmul_flops_per_s": {dtype: max(by_size.values()) for dtype, by_size in rates.items()},
        "matmul_flops_per_s_by_size": {
            dtype: {str(m): r for m, r in by_size.items()} for dtype, by_size in rates.items()
        },
        "fit_residuals": fit_residuals,
        "load_average_1min_at_start": load,
        "ranks": list(ranks),
        "reps": reps,
        "samples": {kind: rows for kind, rows in samples.items() if rows},
        "seconds": round(time.perf_counter() - started, 1),
    }


def table(entry: dict[str, Any]) -> str:
    """The fitted parameters as a text table: per kind alpha (us), bandwidth 1/beta (GB/s) and the residuals
    (measured over modelled time) of the fit; then the matmul rates."""
    lines = [f"{'kind':<15}{'alpha (us)':>12}{'1/beta (GB/s)':>15}   measured/modelled min / median / max"]
    for kind in KINDS:
        fit = entry["collectives"].get(kind)
        if fit is None:
            lines.append(f"{kind:<15}{'not supported by this backend':>42}")
            continue
        beta = fit["beta_s_per_byte"]
        bw = f"{1 / beta / 1e9:.3f}" if beta > 0 else "inf"
        res = entry["fit_residuals"][kind]
        lines.append(
            f"{kind:<15}{fit['alpha_s'] * 1e6:>12.1f}{bw:>15}   "
            f"{res['min']:.2f} / {res['median']:.2f} / {res['max']:.2f}"
        )
    for dtype, by_size in entry["matmul_flops_per_s_by_size"].items():
        sizes = ", ".join(f"{m}^3: {r / 1e9:.2f}" for m, r in by_size.items())
        lines.append(f"matmul {dtype}: {sizes} GFLOP/s")
    return "\n".join(lines)


def _dumps(data: dict[str, Any]) -> str:
    """JSON with each innermost list of numbers on one line (the samples stay readable)."""
    text = json.dumps(data, indent=1)
    return (
        re.sub(r"\[([-+0-9.eE,\s]*)\]", lambda m: "[" + ", ".join(v.strip() for v in m.group(1).split(",")) + "]", text)
        + "\n"
    )


def write_entry(entry: dict[str, Any], out: Path) -> None:
    """Writes ``entry`` as the ``gloo-cpu`` entry of the JSON file ``out``, keeping its other entries."""
    data: dict[str, Any] = {}
    if out.exists():
        data = json.loads(out.read_text())
    # the measured entry first, then the published ones in their order
    data = {ENTRY: entry, **{k: v for k, v in data.items() if k != ENTRY}}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(_dumps(data))


def main(argv: Sequence[str] | None = None) -> int:
    """The command line: calibrate, print the table, write the entry."""
    parser = argparse.ArgumentParser(
        prog="python -m trn_backend.distributed.calibrate",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--ranks", type=int, nargs="+", default=[2, 4], help="group sizes to run (default 2 4)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"JSON file to update (default {DEFAULT_OUT})")
    parser.add_argument("--quick", action="store_true", help="fewer sizes and repetitions (a smoke run)")
    args = parser.parse_args(argv)
    entry = calibrate(args.ranks, quick=args.quick)
    print(table(entry))
    write_entry(entry, args.out)
    print(f"{ENTRY} written to {args.out} ({entry['seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
