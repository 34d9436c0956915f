"""Strong scaling of a DF-MP2 energy on sharded arrays over 1, 2 and 4 gloo ranks of this machine, modelled
against measured time.

    python benchmarks/sharded_scaling.py [--ranks 1 2 4] [--repeats 5]

Each rank count runs under torchrun as gloo processes. Per phase (the two transform steps, (ia|jb), its
resolution, the energy's contraction) every rank times its calls between barriers; a phase's measured time is the
median over repetitions of the slowest rank's. The modelled time is what the planner's model says for the same
calls: per contraction step the compute of the largest block at the measured matmul rate, plus the alpha-beta
time of every collective it moved (from ``td.record()``). Results go to benchmarks/results/sharded_scaling.json
and .md, with the load average. The ranks share this machine's cores (torch threads: cores / ranks): the model
prices each rank at the whole machine's measured matmul rate, so where ranks share cores the measured column
shows what the model does not.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

NAUX, NBASIS, NOCC = 480, 96, 24
PHASES = ("transform, occupied", "transform, virtual", "(ia|jb)", "(ia|jb) resolved", "energy")
RESULTS = pathlib.Path(__file__).resolve().parent / "results"


def worker(repeats: int, out: str) -> None:
    import numpy as np
    import torch
    import torch.distributed as dist

    import trn_backend as xp
    import trn_backend.distributed as td

    mesh = td.default_mesh()
    # the ranks share the cores: one rank uses them all (as the calibration's matmul rate did), more split them
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // dist.get_world_size()))
    rng = np.random.default_rng(0)
    integrals = rng.standard_normal((NAUX, NBASIS, NBASIS))
    c = np.linalg.qr(rng.standard_normal((NBASIS, NBASIS)))[0]
    e = np.sort(rng.uniform(-2.0, 3.0, NBASIS))
    e[NOCC:] += 1.0
    block = td.local_slice(NAUX, mesh)
    qmn = td.from_local(xp.asarray(integrals[block]), 0, mesh)
    occ, vir = xp.asarray(c[:, :NOCC]), xp.asarray(c[:, NOCC:])
    eo, ev = xp.asarray(e[:NOCC]), xp.asarray(e[NOCC:])
    inverse = 1 / (
        xp.reshape(eo, (-1, 1, 1, 1))
        + xp.reshape(eo, (1, 1, -1, 1))
        - xp.reshape(ev, (1, -1, 1, 1))
        - xp.reshape(ev, (1, 1, 1, -1))
    )

    measured: dict[str, list[float]] = {p: [] for p in PHASES}
    modelled: dict[str, float] = {}
    for rep in range(repeats + 1):  # the first run plans and warms up: not timed
        state: dict[str, object] = {}

        def phase(name: str, call):  # noqa: ANN001, ANN202
            dist.barrier()
            start = time.perf_counter()
            with td.record() as rec:
                result = call()
            seconds = time.perf_counter() - start
            slowest = torch.tensor([seconds], dtype=torch.float64)
            dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
            if rep:  # noqa: B023
                measured[name].append(float(slowest))
            modelled[name] = sum(d.compute_seconds for d in rec.steps) + sum(m.seconds for m, _, _ in rec.moves)
            return result

        state["qin"] = phase(PHASES[0], lambda: xp.einsum("Qmn,mi->Qin", qmn, occ))
        state["qia"] = phase(PHASES[1], lambda: xp.einsum("Qin,na->Qia", state["qin"], vir))  # noqa: B023
        iajb = phase(PHASES[2], lambda: xp.einsum("Qia,Qjb->iajb", state["qia"], state["qia"]))  # noqa: B023
        iajb = phase(PHASES[3], lambda: iajb.resolve() if isinstance(iajb, td.ShardedNeuronArray) else iajb)  # noqa: B023
        amplitudes = (2 * iajb - xp.permute_dims(iajb, (0, 3, 2, 1))) * inverse
        energy = phase(PHASES[4], lambda: float(xp.einsum("iajb,iajb->", iajb, amplitudes)))  # noqa: B023
    if dist.get_rank() == 0:
        pathlib.Path(out).write_text(
            json.dumps(
                {
                    "ranks": dist.get_world_size(),
                    "energy": energy,
                    "measured_s": {p: statistics.median(v) for p, v in measured.items()},
                    "modelled_s": modelled,
                }
            )
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.repeats, args.worker)
        return
    rows = []
    for n in args.ranks:
        out = RESULTS / f".sharded_scaling_{n}.json"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "torch.distributed.run",
                "--standalone",
                "--nproc-per-node",
                str(n),
                __file__,
                "--repeats",
                str(args.repeats),
                "--worker",
                str(out),
            ],
            check=True,
            capture_output=True,
        )
        rows.append(json.loads(out.read_text()))
        out.unlink()
    record = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "load_average": os.getloadavg(),
        "cores": os.cpu_count(),
        "shape": {"naux": NAUX, "nbasis": NBASIS, "nocc": NOCC},
        "runs": rows,
    }
    (RESULTS / "sharded_scaling.json").write_text(json.dumps(record, indent=1) + "\n")
    lines = [
        f"DF-MP2 (naux {NAUX}, nbasis {NBASIS}, nocc {NOCC}), float64, gloo ranks on {os.cpu_count()} cores, "
        f"{record['date']}, load average {record['load_average'][0]:.2f}",
        "",
        "| phase | " + " | ".join(f"{r['ranks']} rank(s): measured / modelled ms" for r in rows) + " |",
        "|---|" + "---:|" * len(rows),
    ]
    for p in PHASES:
        lines.append(
            f"| {p} | "
            + " | ".join(f"{r['measured_s'][p] * 1e3:.2f} / {r['modelled_s'][p] * 1e3:.2f}" for r in rows)
            + " |"
        )
    total = [(sum(r["measured_s"].values()), sum(r["modelled_s"].values())) for r in rows]
    lines.append("| total | " + " | ".join(f"{m * 1e3:.2f} / {d * 1e3:.2f}" for m, d in total) + " |")
    lines.append(
        "| speed-up over 1 rank | "
        + " | ".join(f"{total[0][0] / m:.2f} / {total[0][1] / d:.2f}" for m, d in total)
        + " |"
    )
    (RESULTS / "sharded_scaling.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
