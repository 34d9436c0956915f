"""DF-MP2 on sharded arrays: the integral transform (Q|ia) = sum_mn (Q|mn) C_mi C_na with the three-index
integrals sharded over the auxiliary index Q, then the MP2 energy from (ia|jb) = sum_Q (Q|ia)(Q|jb).

    torchrun --nproc-per-node 2 examples/sharded_df_mp2.py

Each rank builds only its block of the integrals (as an integral code would), the transform runs output-
parallel (each rank contracts its block, no communication), (ia|jb) is a pending sum over Q that one reduce-
scatter resolves into blocks of i, and the energy's pending sum resolves by one all-reduce. Both results are
checked against the unsharded computation. Without a launcher it runs as a world of one process.
"""

from __future__ import annotations

import numpy as np
import torch.distributed as dist
from torch.distributed.tensor.debug import CommDebugMode

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


def mp2_energy(bia: object, e_occ: object, e_vir: object) -> object:
    """E = sum_iajb (ia|jb) [2 (ia|jb) - (ib|ja)] / (e_i + e_j - e_a - e_b), on any arrays of the namespace."""
    iajb = xp.einsum("Qia,Qjb->iajb", bia, bia)
    if isinstance(iajb, td.ShardedNeuronArray):
        iajb = iajb.resolve(axis=0)  # the pending sum over Q, reduce-scattered into blocks of i
    ibja = xp.permute_dims(iajb, (0, 3, 2, 1))
    denominator = (xp.reshape(e_occ, (-1, 1, 1, 1)) + xp.reshape(e_occ, (1, 1, -1, 1))
                   - xp.reshape(e_vir, (1, -1, 1, 1)) - xp.reshape(e_vir, (1, 1, 1, -1)))
    return xp.sum(iajb * (2 * iajb - ibja) / denominator)


def main() -> None:
    integrals, c_occ, c_vir, energies = molecule()
    mesh = td.default_mesh()  # every rank of torchrun's world (or a world of one process)
    rank, size = dist.get_rank(), dist.get_world_size()
    block = td.local_slice(NAUX, mesh)  # the auxiliary functions this rank computes integrals for
    qmn = td.from_local(xp.asarray(integrals[block]), axis=0, mesh=mesh)
    occ, vir = xp.asarray(c_occ), xp.asarray(c_vir)
    e_occ, e_vir = xp.asarray(energies[:NOCC]), xp.asarray(energies[NOCC:])

    with CommDebugMode() as transform:
        qia = xp.contract("Qmn,mi,na->Qia", qmn, occ, vir)
    with CommDebugMode() as energy:
        e_mp2 = float(mp2_energy(qia, e_occ, e_vir))

    expected_qia = np.einsum("Qmn,mi,na->Qia", integrals, c_occ, c_vir)
    expected_e = float(mp2_energy(xp.asarray(expected_qia), e_occ, e_vir))
    difference = float(np.max(np.abs(np.asarray(qia) - expected_qia)))
    ok = difference < 1e-12 and abs(e_mp2 - expected_e) < 1e-12 * abs(expected_e)
    collectives = {str(op).split(".")[-1]: n for op, n in energy.get_comm_counts().items()}
    if rank == 0:
        print(f"(Q|ia) on {size} rank(s): {qia.device}, {transform.get_total_counts()} collectives in the "
              f"transform; energy collectives {collectives}")
        print(f"{'match' if ok else 'MISMATCH'}: (Q|ia) max |sharded - unsharded| = {difference:.1e}, "
              f"E_MP2 = {e_mp2:.12f} (unsharded {expected_e:.12f})")
    if not ok:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
