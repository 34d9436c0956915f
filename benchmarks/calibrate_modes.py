"""Calibration: each precision mode's time relative to native of the same dtype, on this machine's CPU or GPU.

Target-based precision selection ranks the modes whose bound meets a target by these costs (trn_backend/_mode_costs.py,
docs/precision.md). The modes run through the kernel layer (``kernels.matmul``, what the planner calls) on the
same random operands (magnitudes uniform in [0.5, 1), random signs: within ozaki's dynamic range, so it runs at
exactly the slice count asked; on wider data it adds slices and costs what that count costs), float32 and
float64, at a few sizes (M, K, N). Per size, each repetition runs every
mode once, in an order rotated between repetitions, and a mode's cost is the median over repetitions of its time
divided by native's time in the same repetition (robust to load changes on a shared machine). ozaki runs at a few
slice counts (selection interpolates others linearly in the pass count s(s+1)/2 + 1); without --quick one more
count is measured at one size and compared with that interpolation (the "ozaki fit check"). float64 fp64 is
native's float64 product itself (its rounding to float64 is the identity), so it is not timed: its cost is 1.

Every sample and the metadata go to benchmarks/results/calibrate_modes_<device>.json. The table the package ships,
trn_backend/data/mode_costs.json, changes only with --write-package-table (``make calibrate``): then the device's
entry in it is replaced and other devices' entries are kept. A measurement, not a test.

    python benchmarks/calibrate_modes.py [--device cpu|cuda] [--quick] [--reps 5] [--write-package-table]
"""

from __future__ import annotations

import os

# Idle BLAS/OpenMP threads spin for a while after each call; on a small shared machine they then steal the cores
# from the next call. Make idle threads sleep at once (set before numpy and torch load their thread pools).
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import datetime
import json
import math
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

from trn_backend import _mode_costs, kernels

RESULTS = Path(__file__).parent / "results"
# (M, K, N): K in {256, 1024, 4096} at M = N = 1024, and one small product where per-call overheads dominate
SIZES = {
    "cpu": ((256, 256, 256), (1024, 256, 1024), (1024, 1024, 1024), (1024, 4096, 1024)),
    "cuda": ((1024, 1024, 1024), (2048, 2048, 2048), (4096, 1024, 4096), (4096, 4096, 4096)),
}
QUICK_SIZES = {"cpu": SIZES["cpu"][:3], "cuda": SIZES["cuda"][:3]}
# ozaki slice counts in the table (on the CPU two, to bound the run's time), and the held-out count of the fit
# check (without --quick), at the size CHECK_AT
SLICES = {"cpu": (2, 4), "cuda": (2, 4, 8)}
CHECK_SLICES = 6
CHECK_AT = 2  # index into the sizes
DTYPES = (torch.float32, torch.float64)
SAMPLE_S = 0.02  # small products repeat within one sample until it takes about this long


def modes(device: str, dtype: torch.dtype) -> list[tuple[str, dict]]:
    """(label, kernel parameters) of every mode on the ladder, native first."""
    plain = ["native", "fast", "dd", "bf16x6"] + (["fp64"] if dtype is torch.float32 else [])
    return [(m, {}) for m in plain] + [(f"ozaki(slices={s})", {"slices": s}) for s in SLICES[device]]


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def _call(a: torch.Tensor, b: torch.Tensor, label: str, params: dict):
    mode = label.split("(")[0]
    return lambda: kernels.matmul(a, b, mode, **params)


def operands(device: str, dtype: torch.dtype, size: tuple[int, int, int]) -> tuple[torch.Tensor, torch.Tensor]:
    """[M, K] and [K, N] with magnitudes uniform in [0.5, 1) and random signs (see the module docstring)."""
    m, k, n = size
    g = torch.Generator(device=device).manual_seed(0)

    def draw(shape):
        x = torch.rand(shape, dtype=dtype, device=device, generator=g) / 2 + 0.5
        return torch.where(torch.rand(shape, device=device, generator=g) < 0.5, -x, x)

    return draw((m, k)), draw((k, n))


def measure(
    device: str, dtype: torch.dtype, size: tuple[int, int, int], reps: int, chosen: list[tuple[str, dict]]
) -> dict:
    """Interleaved timings of ``chosen`` at one size: samples (ms) per mode, and per-repetition ratios to native."""
    m, k, n = size
    a, b = operands(device, dtype, size)
    calls = {label: _call(a, b, label, params) for label, params in chosen}
    inner = {}
    for label, call in calls.items():  # warm up (caches, thread pools, kernels) and size each sample
        call()
        _sync(device)
        t0 = time.perf_counter()
        call()
        _sync(device)
        inner[label] = max(1, min(50, math.ceil(SAMPLE_S / (time.perf_counter() - t0))))
    samples: dict[str, list[float]] = {label: [] for label in calls}
    labels = list(calls)
    for r in range(reps):
        shift = r % len(labels)
        order = labels[shift:] + labels[:shift]
        for label in order if r % 2 == 0 else order[::-1]:  # each mode runs before and after each other one
            _sync(device)
            t0 = time.perf_counter()
            for _ in range(inner[label]):
                calls[label]()
            _sync(device)
            samples[label].append((time.perf_counter() - t0) / inner[label] * 1e3)
    ratios = {label: [x / y for x, y in zip(s, samples["native"], strict=True)] for label, s in samples.items()}
    return {
        "size": list(size),
        "flops": 2 * m * k * n,
        "dtype": str(dtype).removeprefix("torch."),
        "reps": reps,
        "calls_per_sample": inner,
        "median_ms": {lb: statistics.median(s) for lb, s in samples.items()},
        "relative": {lb: statistics.median(x) for lb, x in ratios.items()},
        "samples_ms": samples,
    }


def entry(rows: list[dict], dtype: str) -> dict:
    """The table entry of one dtype: sizes ascending by FLOPs, each mode's relative cost per size."""
    rows = sorted((r for r in rows if r["dtype"] == dtype), key=lambda r: r["flops"])
    labels = [lb for lb in rows[0]["relative"] if lb != "native"]
    out = {
        "flops": [r["flops"] for r in rows],
        "sizes": [r["size"] for r in rows],
        "modes": {lb: [round(r["relative"][lb], 4) for r in rows] for lb in labels},
    }
    if "fp64" not in out["modes"]:  # float64: fp64 is native's product (see the module docstring)
        out["modes"]["fp64"] = [1.0] * len(rows)
    return out


def fit_check(device: str, dtype: torch.dtype, size: tuple[int, int, int], reps: int, table: dict) -> dict:
    """ozaki at CHECK_SLICES measured against the table's interpolation in the pass count."""
    label = f"ozaki(slices={CHECK_SLICES})"
    row = measure(device, dtype, size, reps, [("native", {}), (label, {"slices": CHECK_SLICES})])
    basis = _mode_costs._calibration(device, {dtype_name(dtype): table}, dtype_name(dtype))
    predicted = basis.cost("ozaki", CHECK_SLICES, row["flops"])
    measured = row["relative"][label]
    return {
        "dtype": dtype_name(dtype),
        "size": list(size),
        "slices": CHECK_SLICES,
        "measured": measured,
        "predicted": predicted,
        "error": predicted / measured - 1,
        "samples_ms": row["samples_ms"],
    }


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def device_name(device: str) -> str:
    if device == "cuda":
        return torch.cuda.get_device_name()
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


def table_text(rows: list[dict], checks: list[dict]) -> str:
    labels = list(dict.fromkeys(lb for r in rows for lb in r["relative"]))  # ladder order, native first
    lines = [
        "| dtype | (M, K, N) | native (ms) | " + " | ".join(labels[1:]) + " |",
        "|---|---|---:|" + "---:|" * (len(labels) - 1),
    ]
    for r in rows:
        cells = [f"{r['relative'][lb]:.2f}x" if lb in r["relative"] else "-" for lb in labels[1:]]
        lines.append(
            f"| {r['dtype']} | {tuple(r['size'])} | {r['median_ms']['native']:.3g} | " + " | ".join(cells) + " |"
        )
    lines += [""] if checks else []
    for c in checks:
        lines.append(
            f"ozaki fit check, {c['dtype']} {tuple(c['size'])}: ozaki(slices={c['slices']}) measured "
            f"{c['measured']:.2f}x, interpolated {c['predicted']:.2f}x ({c['error']:+.0%})"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--quick", action="store_true", help="3 repetitions, the three smaller sizes, no fit check")
    parser.add_argument("--reps", type=int, default=None, help="repetitions per size (default 5, --quick 3)")
    parser.add_argument(
        "--write-package-table",
        action="store_true",
        help="replace this device's entry in the cost table the package ships (--table)",
    )
    parser.add_argument(
        "--table",
        type=Path,
        default=_mode_costs.TABLE,
        help="the cost table --write-package-table updates (default trn_backend/data/mode_costs.json)",
    )
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("calibrate_modes: --device cuda, but torch sees no CUDA device")
    reps = args.reps or (3 if args.quick else 5)
    sizes = (QUICK_SIZES if args.quick else SIZES)[args.device]
    started = time.perf_counter()
    rows = []
    for dtype in DTYPES:
        for size in sizes:
            rows.append(measure(args.device, dtype, size, reps, modes(args.device, dtype)))
            print(
                f"{dtype_name(dtype)} {size}: "
                + ", ".join(f"{lb} {x:.2f}x" for lb, x in rows[-1]["relative"].items() if lb != "native"),
                flush=True,
            )
    entries = {dtype_name(d): entry(rows, dtype_name(d)) for d in DTYPES}
    checks = (
        [] if args.quick else [fit_check(args.device, d, sizes[CHECK_AT], reps, entries[dtype_name(d)]) for d in DTYPES]
    )
    now = datetime.datetime.now(datetime.timezone.utc)
    meta = {
        "date": now.date().isoformat(),
        "device_name": device_name(args.device),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "threads": torch.get_num_threads(),
        "cpus": os.cpu_count(),
        "quick": args.quick,
        "reps": reps,
        "command": " ".join(["python", *sys.argv]),
        "env": {k: os.environ[k] for k in ("OMP_WAIT_POLICY", "OPENBLAS_THREAD_TIMEOUT")},
        "seconds": round(time.perf_counter() - started, 1),
    }
    if args.write_package_table:
        table = json.loads(args.table.read_text()) if args.table.exists() else {}
        table.setdefault(
            "about",
            "Time of each precision mode relative to native of the same dtype (medians of "
            "interleaved per-repetition ratios), per device type, dtype and size (flops = "
            "2 M K N). Written by benchmarks/calibrate_modes.py; read by "
            "trn_backend/_mode_costs.py.",
        )
        table.setdefault("devices", {})[args.device] = {**meta, **entries}
        table["devices"] = dict(sorted(table["devices"].items()))
        args.table.write_text(json.dumps(table, indent=1) + "\n")
    out = args.out or RESULTS / f"calibrate_modes_{args.device}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"meta": meta, "table": entries, "fit_checks": checks, "results": rows}, indent=1))
    print()
    print(table_text(rows, checks))
    print(
        f"\nwritten to {out}"
        + (
            f" and {args.table}"
            if args.write_package_table
            else f"; {args.table} unchanged (--write-package-table updates it)"
        )
    )


if __name__ == "__main__":
    main()
