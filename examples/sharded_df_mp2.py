"""DF-MP2 on sharded arrays: the integral transform (Q|ia) = sum_mn (Q|mn) C_mi C_na with the three-index
integrals partitioned over the auxiliary index Q, then the MP2 energy from (ia|jb) = sum_Q (Q|ia)(Q|jb).

    torchrun --nproc-per-node 2 examples/sharded_df_mp2.py
    torchrun --nproc-per-node 4 examples/sharded_df_mp2.py --mesh 2x2

Each rank builds only its block of the integrals (as an integral code would), partitioned over Q along the mesh's
first dimension. The planner places every contraction step on the mesh by modelled time (compute per rank plus
the collectives it needs). For each step that communicates, the first rank prints the placements chosen and, per
rank, the bytes the model predicted ("modelled") and the bytes torch.distributed moved ("counted"). The last line
starts with "match" when the energy and (Q|ia) agree with the unsharded computation and every prediction held.
Without a launcher it runs as a world of one process.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch.distributed as dist

import trn_backend as xp
import trn_backend.distributed as td

NAUX, NBASIS, NOCC = 60, 24, 5


def molecule() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Stand-ins for (Q|mn), the orbital coefficients and energies (the same on every rank: one seed)."""
    rng = np.random.default_rng(0)
    integrals = rng.standard_normal((NAUX, NBASIS, NBASIS))
    integrals = (integrals + integrals.transpose(0, 2, 1)) / 20
    coefficients = np.linalg.qr(rng.standard_normal((NBASIS, NBASIS)))[0]
    energies = np.sort(rng.uniform(-2.0, 3.0, NBASIS))
    energies[NOCC:] += 1.0  # a gap between occupied and virtual orbitals
    return integrals, coefficients[:, :NOCC], coefficients[:, NOCC:], energies


def denominators(e_occ: object, e_vir: object) -> object:
    """1 / (e_i + e_j - e_a - e_b), indexed [i, a, j, b]."""
    return 1 / (
        xp.reshape(e_occ, (-1, 1, 1, 1))
        + xp.reshape(e_occ, (1, 1, -1, 1))
        - xp.reshape(e_vir, (1, -1, 1, 1))
        - xp.reshape(e_vir, (1, 1, 1, -1))
    )


def unsharded(
    integrals: np.ndarray, c_occ: np.ndarray, c_vir: np.ndarray, energies: np.ndarray
) -> tuple[np.ndarray, float]:
    """(Q|ia) and E_MP2 with NumPy alone: the reference."""
    qia = np.einsum("Qmn,mi,na->Qia", integrals, c_occ, c_vir)
    iajb = np.einsum("Qia,Qjb->iajb", qia, qia)
    e_occ, e_vir = energies[:NOCC], energies[NOCC:]
    d = (
        e_occ[:, None, None, None]
        + e_occ[None, None, :, None]
        - e_vir[None, :, None, None]
        - e_vir[None, None, None, :]
    )
    return qia, float(np.sum(iajb * (2 * iajb - iajb.transpose(0, 3, 2, 1)) / d))


class Steps:
    """Runs each step with the planner's decisions recorded and torch's collectives counted."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, str, int, int]] = []

    def run(self, name: str, call: object) -> object:
        with td.record() as rec, td.count() as counted:
            result = call()  # type: ignore[operator]
        placements = "; ".join(d.placements_text() for d in rec.steps) or "redistribution"
        self.rows.append((name, placements, rec.modelled_bytes, sum(c.nbytes for c in counted)))
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mesh", default=None, help="the mesh shape, e.g. 4 or 2x2 (default: 1-D over all ranks)")
    shape = parser.parse_args().mesh
    mesh = td.mesh(tuple(int(n) for n in shape.split("x"))) if shape else td.default_mesh()
    rank = dist.get_rank()

    integrals, c_occ, c_vir, energies = molecule()
    block = td.local_slice(NAUX, mesh, mesh_dim=0)  # the auxiliary functions this rank computes integrals for
    axis = 0 if mesh.ndim == 1 else (0,) + (None,) * (mesh.ndim - 1)
    qmn = td.from_local(xp.asarray(integrals[block]), axis=axis, mesh=mesh)
    occ, vir = xp.asarray(c_occ), xp.asarray(c_vir)
    inverse = denominators(xp.asarray(energies[:NOCC]), xp.asarray(energies[NOCC:]))

    steps = Steps()
    qin = steps.run("transform, occupied", lambda: xp.einsum("Qmn,mi->Qin", qmn, occ))
    qia = steps.run("transform, virtual", lambda: xp.einsum("Qin,na->Qia", qin, vir))
    iajb = steps.run("(ia|jb)", lambda: xp.einsum("Qia,Qjb->iajb", qia, qia))
    if iajb.device.pending:
        iajb = steps.run("(ia|jb) resolved", lambda: iajb.resolve())
    amplitudes = (2 * iajb - xp.permute_dims(iajb, (0, 3, 2, 1))) * inverse
    e_mp2 = steps.run("energy", lambda: float(xp.einsum("iajb,iajb->", iajb, amplitudes)))

    expected_qia, expected_e = unsharded(integrals, c_occ, c_vir, energies)
    difference = float(np.max(np.abs(np.asarray(qia) - expected_qia)))
    everyone: list[list[tuple[str, str, int, int]]] = [[] for _ in range(dist.get_world_size())]
    dist.all_gather_object(everyone, steps.rows)
    predicted = all(m == c for rows in everyone for _, _, m, c in rows)
    ok = difference < 1e-12 and abs(e_mp2 - expected_e) < 1e-12 * abs(expected_e) and predicted
    if rank == 0:
        print(f"mesh {'x'.join(map(str, mesh.shape))} over {dist.get_world_size()} rank(s); (Q|ia) {qia.device}")
        for k, (name, placements, _, _) in enumerate(steps.rows):
            if any(rows[k][2] or rows[k][3] for rows in everyone):
                print(f"{name}: {placements}")
                for r, rows in enumerate(everyone):
                    print(f"  rank {r}: modelled {rows[k][2]} counted {rows[k][3]}")
        print(
            f"{'match' if ok else 'MISMATCH'}: (Q|ia) max |sharded - unsharded| = {difference:.1e}, "
            f"E_MP2 = {e_mp2:.12f} (unsharded {expected_e:.12f}), modelled bytes "
            f"{'equal' if predicted else 'differ from'} counted"
        )
    if not ok:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
