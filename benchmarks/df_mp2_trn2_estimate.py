"""A paper estimate: DF-MP2 of (H2O)20 in cc-pVTZ on 1, 16 and 64 trn2 chips, through the planner's choices, the
Trainium cost model and the published interconnect figures.

    python benchmarks/df_mp2_trn2_estimate.py

Sizes: 1160 basis functions, 100 occupied orbitals (1060 virtual), 3000 auxiliary functions, float64 data. One
rank is one Trainium2 chip (4 logical NeuronCores at LNC=2). The chip's rate is 4x the cost model's time for a
4096^3 float64 product in dd (the mode the planner's targets pick for float64 on Trainium), from
kernels.nki.cost.modelled. Meshes: 1 chip alone; 16 chips of one trn2.48xlarge as 4x4 (NeuronLink-v3 both ways);
64 chips of four instances as 4x4x4 (EFAv3 between instances, NeuronLink-v3 within). The integrals (Q|mn) start
partitioned over Q along the first mesh dimension and over m along the second (each chip computes its block).
Every step is placed by ``_strategy.decide`` on the global shapes, as the sharded executor would place it, and its
result's placement feeds the next step. Not modelled: the integrals' own cost, the element-wise energy
denominators, memory capacity ((ia|jb) alone is 90 GB in float64: a real code batches over i), overlap of
communication with compute, and the host. Writes benchmarks/results/df_mp2_trn2_estimate.md.
"""

from __future__ import annotations

import pathlib

import torch
from torch.distributed.tensor import Replicate, Shard

from trn_backend.distributed import _comm, _strategy
from trn_backend.kernels.nki import cost

NBASIS, NOCC, NAUX = 1160, 100, 3000
NVIR = NBASIS - NOCC
CORES_PER_CHIP = 4  # logical NeuronCores at LNC=2 (8 physical per Trainium2 chip)
STEPS = (
    ("Qmn,mi->Qin", ((NAUX, NBASIS, NBASIS), (NBASIS, NOCC))),
    ("Qin,na->Qia", ((NAUX, NOCC, NBASIS), (NBASIS, NVIR))),
    ("Qia,Qjb->iajb", ((NAUX, NOCC, NVIR), (NAUX, NOCC, NVIR))),
    ("iajb,iajb->", ((NOCC, NVIR, NOCC, NVIR), (NOCC, NVIR, NOCC, NVIR))),
)
MACHINES = (
    ("1 chip", (1,), ("trn2-neuronlink",)),
    ("16 chips (one trn2.48xlarge)", (4, 4), ("trn2-neuronlink", "trn2-neuronlink")),
    ("64 chips (four trn2.48xlarge)", (4, 4, 4), ("trn2-efa", "trn2-neuronlink", "trn2-neuronlink")),
)


def chip_rate() -> float:
    """FLOP/s of one chip in dd on float64 data: the cost model's 4096^3 product, times the chip's cores."""
    n = 4096
    return CORES_PER_CHIP * 2 * n**3 / cost.modelled("matmul", "dd", (1, n, n, n), float64=True).seconds


def estimate(mesh: tuple[int, ...], names: tuple[str, ...], rate: float) -> list[_strategy.Decision]:
    links = tuple(_comm.link(n) for n in names)
    network = _comm.Network(links, {"float64": rate, "float32": rate})
    first = [Shard(0), Shard(1)] + [Replicate()] * (len(mesh) - 2) if len(mesh) > 1 else [Replicate()]
    held: tuple = tuple(first)  # (Q|mn): Q over the first mesh dimension, m over the second
    decisions = []
    for subscripts, shapes in STEPS:
        inputs, output = subscripts.split("->")
        labels = inputs.split(",")
        if subscripts == STEPS[0][0]:
            placements = (held, (Replicate(),) * len(mesh))
        elif subscripts == STEPS[2][0] or subscripts == STEPS[3][0]:
            placements = (held, held)  # both operands are the previous result
        else:
            placements = (held, (Replicate(),) * len(mesh))
        d = _strategy.decide(tuple(labels), output, shapes, placements, torch.float64, mesh, (0,) * len(mesh), network)
        decisions.append(d)
        held = d.output
    return decisions


def main() -> None:
    rate = chip_rate()
    lines = [
        f"DF-MP2 of (H2O)20 / cc-pVTZ (nbasis {NBASIS}, nocc {NOCC}, naux {NAUX}), float64 in dd; chip rate "
        f"{rate / 1e12:.0f} TFLOP/s (cost model, 4096^3 dd product x {CORES_PER_CHIP} cores)",
        "",
    ]
    totals = []
    for name, mesh, names in MACHINES:
        decisions = estimate(mesh, names, rate)
        total = sum(d.compute_seconds + d.communication_seconds for d in decisions)
        totals.append(total)
        lines += [
            f"### {name}: mesh {'x'.join(map(str, mesh))} ({', '.join(names)})",
            "",
            "| step | placements | compute s | communication s | bytes per rank |",
            "|---|---|---:|---:|---:|",
        ]
        for d in decisions:
            lines.append(
                f"| {d.subscripts} | {d.placements_text()} | {d.compute_seconds:.3g} | "
                f"{d.communication_seconds:.3g} | {d.nbytes:,} |"
            )
        lines += [f"| total | | | {total:.3g} s | |", ""]
    lines.append("| chips | modelled s | speed-up over 1 chip | parallel efficiency |")
    lines.append("|---:|---:|---:|---:|")
    for (_, mesh, _), t in zip(MACHINES, totals, strict=True):
        chips = 1
        for n in mesh:
            chips *= n
        lines.append(f"| {chips} | {t:.3g} | {totals[0] / t:.1f} | {totals[0] / t / chips:.0%} |")
    text = "\n".join(lines) + "\n"
    (pathlib.Path(__file__).resolve().parent / "results" / "df_mp2_trn2_estimate.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
