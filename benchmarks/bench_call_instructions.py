"""Benchmark: CPU instructions per small contraction call, counted by valgrind's callgrind (deterministic).

Wall-clock times of calls of a few microseconds swing by 2x between runs on a shared machine (the CPU's speed
changes under other tenants); instruction counts do not. Each call runs 200 times to warm up, then 1000 times
inside ``functools.reduce``, and callgrind counts only the instructions executed inside that reduce
(``--toggle-collect=functools_reduce``): the calls, with nothing of the interpreter's start or the imports. Give
``--python`` another environment's interpreter to count another version of the package the same way. Needs
valgrind (Debian's package); each count takes a few minutes (the imports run under valgrind, uncounted).

    python benchmarks/bench_call_instructions.py [--python .venv/bin/python] [--only mm,einsum2]
                                                 [--out benchmarks/results/bench_call_instructions.json]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

RESULTS = Path(__file__).parent / "results"
CALLS = 1000

# name -> (setup, the call): small float32 operands, the device default
CASES = {
    "x @ y, 4x4": ("m = xp.asarray(rng.random((4, 4), dtype=np.float32))", "m @ m"),
    "einsum('ij,jk->ik'), 4x4": (
        "m = xp.asarray(rng.random((4, 4), dtype=np.float32))",
        "xp.einsum('ij,jk->ik', m, m)",
    ),
    "einsum('ij,jk,kl->il'), 4x4": (
        "m = xp.asarray(rng.random((4, 4), dtype=np.float32))",
        "xp.einsum('ij,jk,kl->il', m, m, m)",
    ),
    "tensordot(x, y, axes=1), 4x4": (
        "m = xp.asarray(rng.random((4, 4), dtype=np.float32))",
        "xp.tensordot(m, m, axes=1)",
    ),
    "opt_einsum backend tensordot step": (
        "from trn_backend.contraction import opt_einsum_backend as backend\n"
        "a = xp.asarray(rng.random((4, 3, 4), dtype=np.float32))\n"
        "b = xp.asarray(rng.random((4, 3, 5), dtype=np.float32))",
        "backend.tensordot(a, b, axes=((0, 1), (0, 1)))",
    ),
    "x @ y in precision('native'), 4x4": (
        "m = xp.asarray(rng.random((4, 4), dtype=np.float32))\nxp.precision('native').__enter__()",
        "m @ m",
    ),
    # ndarray's methods against the namespace function they reach
    "m.sum(axis=0), 4x4": ("m = xp.asarray(rng.random((4, 4), dtype=np.float32))", "m.sum(axis=0)"),
    "xp.sum(m, axis=0), 4x4": ("m = xp.asarray(rng.random((4, 4), dtype=np.float32))", "xp.sum(m, axis=0)"),
    "m.mean(), 4x4": ("m = xp.asarray(rng.random((4, 4), dtype=np.float32))", "m.mean()"),
}

PROGRAM = """\
import functools
import numpy as np
import trn_backend as xp
rng = np.random.default_rng(0)
{setup}
def call():
    return {call}
for _ in range(200):
    call()
functools.reduce(lambda acc, _: call(), range({calls}), None)
"""


def count(python: str, setup: str, call: str) -> int:
    """Instructions executed by ``CALLS`` calls of ``call`` under ``python`` (callgrind)."""
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "calls.py"
        script.write_text(PROGRAM.format(setup=setup, call=call, calls=CALLS))
        out = Path(tmp) / "callgrind.out"
        done = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                "--toggle-collect=functools_reduce",
                f"--callgrind-out-file={out}",
                python,
                str(script),
            ],
            capture_output=True,
            text=True,
            cwd=tmp,
            timeout=1800,
        )
        found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
        if done.returncode != 0 or found is None:
            raise RuntimeError(f"callgrind failed for {call!r}:\n{done.stderr[-2000:]}")
        return int(found.group(1).replace(",", ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=sys.executable, help="the interpreter (and so the package) to count")
    parser.add_argument("--only", default="", help="comma-separated substrings of the case names")
    parser.add_argument("--out", type=Path, default=RESULTS / "bench_call_instructions.json")
    args = parser.parse_args()
    wanted = [w.strip() for w in args.only.split(",") if w.strip()]
    sys.path.insert(0, str(Path(__file__).parent))
    from _results import run_metadata, save

    rows = []
    for name, (setup, call) in CASES.items():
        if wanted and not any(w in name for w in wanted):
            continue
        per_call = count(args.python, setup, call) / CALLS
        rows.append({"name": name, "call": call, "instructions_per_call": per_call})
        print(f"{name}: {per_call:,.0f} instructions per call", flush=True)
    table = "\n".join(
        [
            "| call | instructions per call |",
            "|---|---:|",
            *(f"| `{r['name']}` | {r['instructions_per_call']:,.0f} |" for r in rows),
        ]
    )
    save(
        args.out,
        run_metadata(
            python=args.python, calls=CALLS, counter="valgrind --tool=callgrind --toggle-collect=functools_reduce"
        ),
        rows,
        table,
    )


if __name__ == "__main__":
    main()
