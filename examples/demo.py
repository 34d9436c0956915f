"""The main job on the CPU default: a real contraction through the planner, under each precision mode.

Run with ``make demo``. It contracts a DF-MP2-style transform "Qmn,mi,na->Qia" with opt_einsum's path optimizer
feeding the "trn" backend, shows the plan, and then measures each precision mode's error against float64.
"""

from __future__ import annotations

import numpy as np
import opt_einsum

import trn_backend as xp

rng = np.random.default_rng(0)
naux, nbasis, nocc, nvir = 120, 64, 8, 48
eri = xp.asarray(rng.standard_normal((naux, nbasis, nbasis)), dtype=xp.float32)
c_occ = xp.asarray(rng.standard_normal((nbasis, nocc)), dtype=xp.float32)
c_vir = xp.asarray(rng.standard_normal((nbasis, nvir)), dtype=xp.float32)

print(f"device: {eri.device}")
print(xp.explain("Qmn,mi,na->Qia", eri, c_occ, c_vir))

reference = np.einsum("Qmn,mi,na->Qia", *(np.asarray(a, dtype=np.float64) for a in (eri, c_occ, c_vir)),
                      optimize=True)
scale = np.einsum("Qmn,mi,na->Qia", *(np.abs(np.asarray(a, dtype=np.float64)) for a in (eri, c_occ, c_vir)),
                  optimize=True)

print(f"\n{'mode':>8}  {'max |error| / (|A||B|)':>24}  {'bound per step (K=64)':>22}")
for mode in ("native", "fast", "dd", "bf16x6", "ozaki", "kahan"):
    with xp.precision(mode):
        result = opt_einsum.contract("Qmn,mi,na->Qia", eri, c_occ, c_vir, backend="trn")
    error = np.max(np.abs(np.asarray(result, dtype=np.float64) - reference) / scale)
    print(f"{mode:>8}  {error:24.3e}  {xp.error_bound(mode, xp.float32, nbasis):22.3e}")

print("\nresult[0, :2, :4] =")
print(result[0, :2, :4])
