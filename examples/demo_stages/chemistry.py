"""Stage 1 of the demo: the DF-MP2 correlation energy of a real molecule, trn_backend's against PySCF's.

PySCF (the ``chem`` extra) runs the RHF, builds the density-fitting factors L_Qmn of the RI basis (the
Cholesky-decomposed three-index integrals: (mn|ls) ~ sum_Q L_Qmn L_Qls) and computes its own float64 DF-MP2
energy, the reference. trn_backend computes the same energy from the same factors and orbitals:

    (Q|ia)  = sum_mn L_Qmn C_mi C_na        opt_einsum.contract(..., backend="trn"): two binary steps
    (ia|jb) = sum_Q (Q|ia) (Q|jb)           opt_einsum.contract(..., backend="trn"): one GEMM, K = N_aux
    E       = sum_ij sum_ab (ia|jb) [2 (ia|jb) - (ib|ja)] / (e_i + e_j - e_a - e_b)

The contractions run under the precision setting being measured, on float32 copies of the factors and orbitals
(the emulated modes exist to get more than float32 out of float32 data and a bf16 engine) or on the float64 data.
The energy is accumulated in float64, pair energy by pair energy, as mixed-precision MP2 codes do: it is O(o^2 v^2)
work next to the O(o^2 v^2 N_aux) of (ia|jb), and it keeps the comparison about the contractions.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import time
from collections.abc import Callable, Iterator

import numpy as np
import opt_einsum

import trn_backend as xp
from trn_backend import _precision

from . import accuracy

TRANSFORM = "Qmn,mi,na->Qia"
EXCHANGE = "Qia,Qjb->iajb"
CHEMICAL_ACCURACY = 1.6e-3  # Eh (1 kcal/mol)
MICROHARTREE = 1e-6
# Targets for target_forward_error= (componentwise, in units of each expression on |operands|, shared among its
# rounding steps): one that chemical accuracy needs, one for microhartree energies (float32 results: each call
# opt_einsum's loop makes is an expression of its own and rounds its result to float32, 6e-8 each).
TARGETS = (1e-4, 2e-7)


@dataclasses.dataclass(frozen=True)
class Molecule:
    name: str
    atoms: str  # PySCF's atom string, Angstrom
    basis: str = "cc-pVDZ"
    auxbasis: str = "cc-pVDZ-RI"  # the RI basis of the MP2 step (what both energies use)
    scf_auxbasis: str = "cc-pVDZ-JKFIT"  # the density fitting of the RHF (it only makes the orbitals)


BENZENE = Molecule(
    "benzene",
    """
    C  0.0000  1.3970 0.0;  C  1.2098  0.6985 0.0;  C  1.2098 -0.6985 0.0
    C  0.0000 -1.3970 0.0;  C -1.2098 -0.6985 0.0;  C -1.2098  0.6985 0.0
    H  0.0000  2.4810 0.0;  H  2.1486  1.2405 0.0;  H  2.1486 -1.2405 0.0
    H  0.0000 -2.4810 0.0;  H -2.1486 -1.2405 0.0;  H -2.1486  1.2405 0.0""",
)
WATER = Molecule("water", "O 0.0 0.0 0.1173; H 0.0 0.7572 -0.4692; H 0.0 -0.7572 -0.4692")
MOLECULES = {m.name: m for m in (BENZENE, WATER)}


@dataclasses.dataclass(frozen=True)
class Problem:
    """What PySCF hands over (float64 NumPy arrays) and its reference energy."""

    molecule: Molecule
    factors: np.ndarray  # L_Qmn, (N_aux, N_ao, N_ao)
    c_occ: np.ndarray  # active occupied orbitals (N_ao, o): the frozen core left out
    c_vir: np.ndarray  # virtual orbitals (N_ao, v)
    e_occ: np.ndarray
    e_vir: np.ndarray
    frozen: int
    e_hf: float
    e_reference: float  # PySCF's DF-MP2 correlation energy, same RI basis, same frozen core
    seconds: dict[str, float]

    @property
    def sizes(self) -> str:
        naux, nao, _ = self.factors.shape
        return (
            f"{nao} basis functions, {naux} auxiliary, {self.c_occ.shape[1] + self.frozen} occupied "
            f"({self.frozen} frozen core), {self.c_vir.shape[1]} virtual"
        )


def pyscf_problem(molecule: Molecule, step: Callable[[str], None] = lambda label: None) -> Problem:
    """RHF, the RI factors and PySCF's DF-MP2 energy; ``step(label)`` is called before each part."""
    from pyscf import df, gto, lib, scf
    from pyscf.data.elements import chemcore
    from pyscf.mp import dfmp2

    seconds = {}
    step("RHF")
    start = time.perf_counter()
    mol = gto.M(atom=molecule.atoms, basis=molecule.basis, verbose=0)
    mf = scf.RHF(mol).density_fit(auxbasis=molecule.scf_auxbasis)
    e_hf = mf.kernel()
    if not mf.converged:
        raise RuntimeError(f"PySCF's RHF of {molecule.name} did not converge")
    seconds["scf"] = time.perf_counter() - start

    step("PySCF DF-MP2")
    start = time.perf_counter()
    frozen = chemcore(mol)
    mp2 = dfmp2.DFMP2(mf, frozen=frozen)
    mp2.with_df = df.DF(mol, auxbasis=molecule.auxbasis)  # not the RHF's JK fit: the RI basis
    mp2.with_df.build()
    e_reference = mp2.kernel()[0]
    factors = lib.unpack_tril(mp2.with_df._cderi)  # the factors PySCF's energy used, (N_aux, N_ao, N_ao)
    seconds["mp2"] = time.perf_counter() - start

    nocc = mol.nelectron // 2
    return Problem(
        molecule,
        factors,
        mf.mo_coeff[:, frozen:nocc],
        mf.mo_coeff[:, nocc:],
        mf.mo_energy[frozen:nocc],
        mf.mo_energy[nocc:],
        frozen,
        float(e_hf),
        float(e_reference),
        seconds,
    )


@dataclasses.dataclass(frozen=True)
class Setting:
    """One row of the table: a precision mode or a target, on float32 or float64 data."""

    dtype: np.dtype
    mode: str | None = None
    target: float | None = None

    @property
    def label(self) -> str:
        return self.mode if self.target is None else f"target {self.target:g}"

    def context(self) -> contextlib.AbstractContextManager:
        if self.target is not None:
            return xp.precision(target_forward_error=self.target)
        return xp.precision(self.mode)


def settings(targets: tuple[float, ...] = TARGETS) -> list[Setting]:
    """native on the float64 data, then every registered mode and each target on float32 copies."""
    float32, float64 = np.dtype(np.float32), np.dtype(np.float64)
    return (
        [Setting(float64, "native")]
        + [Setting(float32, mode) for mode in _precision.MODES]
        + [Setting(float32, target=t) for t in targets]
    )


@dataclasses.dataclass(frozen=True)
class Row:
    setting: Setting
    energy: float  # Eh
    bound: float  # a priori bound on |energy - PySCF's|, Eh (accuracy.energy_bound)
    seconds: float  # wall time of the two contractions and the energy
    modes: tuple[str, ...]  # the mode each contraction step ran under, as explain() names it
    trn2_seconds: float | None  # modelled trn2 time of the contraction steps (None: see trn2_note)
    trn2_note: str
    reference: float

    @property
    def error(self) -> float:
        return self.energy - self.reference

    def meets(self, tolerance: float) -> bool:
        return abs(self.error) <= tolerance


class Calculation:
    """The DF-MP2 energy of ``problem`` on trn_backend, under one setting at a time."""

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        self.magnitudes = accuracy.magnitudes(
            problem.factors, problem.c_occ, problem.c_vir, problem.e_occ, problem.e_vir
        )
        self.e_occ, self.e_vir = xp.asarray(problem.e_occ), xp.asarray(problem.e_vir)  # float64: the energy
        self.path = tuple(opt_einsum.contract_path(TRANSFORM, problem.factors, problem.c_occ, problem.c_vir)[0])
        self._operands: dict[np.dtype, tuple] = {}
        # PySCF's own float64 arithmetic is not exact either: its share of the difference is at most the bound
        # of a native float64 evaluation of the same contractions and sum.
        self.reference_allowance = accuracy.energy_bound(
            self.magnitudes, self._step_bounds(Setting(np.dtype(np.float64), "native")), input_unit=0.0
        )

    def operands(self, dtype: np.dtype) -> tuple:
        """The factors and orbitals as NeuronArrays of ``dtype`` (the float32 copies rounded once, to nearest)."""
        if dtype not in self._operands:
            p = self.problem
            self._operands[dtype] = tuple(
                xp.asarray(np.ascontiguousarray(a, dtype=dtype)) for a in (p.factors, p.c_occ, p.c_vir)
            )
        return self._operands[dtype]

    def energy(self, setting: Setting) -> float:
        """Run the contractions under ``setting``; the energy is accumulated in float64."""
        factors, c_occ, c_vir = self.operands(setting.dtype)
        with setting.context():
            qia = opt_einsum.contract(TRANSFORM, factors, c_occ, c_vir, backend="trn", optimize=list(self.path))
            iajb = opt_einsum.contract(EXCHANGE, qia, qia, backend="trn")
        return pair_energies(xp.astype(iajb, xp.float64), self.e_occ, self.e_vir)

    def plans(self, setting: Setting) -> tuple[xp.Explanation, ...]:
        """explain() of the two contractions under ``setting`` as ``energy`` runs them, opt_einsum's loop calling
        backend "trn" (``route="opt_einsum"``): per step, the kernel, (B, M, K, N), mode and bound."""
        naux, _, _ = self.problem.factors.shape
        qia = (naux, self.problem.c_occ.shape[1], self.problem.c_vir.shape[1])
        with setting.context():
            return (
                xp.explain(TRANSFORM, *self.operands(setting.dtype), optimize=list(self.path), route="opt_einsum"),
                xp.explain(EXCHANGE, qia, qia, dtype=setting.dtype, route="opt_einsum"),
            )

    def _step_bounds(self, setting: Setting) -> accuracy.StepBounds:
        """The bound of each of the three calls opt_einsum makes (each an expression of its own: its product
        and, under a mode that works in float64, its final rounding to the working dtype)."""
        transform, exchange = self.plans(setting)
        (first, second), (gemm,) = transform.calls, exchange.calls
        return accuracy.StepBounds(first, second, gemm)

    def run(self, setting: Setting, model: bool = True) -> Row:
        start = time.perf_counter()
        energy = self.energy(setting)
        seconds = time.perf_counter() - start
        plans = self.plans(setting)
        steps = [p for plan in plans for p in plan.steps]
        unit = float(np.finfo(setting.dtype).eps) / 2 if setting.dtype == np.float32 else 0.0
        bound = accuracy.energy_bound(self.magnitudes, self._step_bounds(setting), input_unit=unit)
        trn2, note = trn2_seconds(steps, setting.dtype) if model else (None, "not modelled")
        return Row(
            setting,
            energy,
            bound + self.reference_allowance,
            seconds,
            tuple(p.resolved.label for p in steps),
            trn2,
            note,
            self.problem.e_reference,
        )


def pair_energies(iajb: xp.NeuronArray, e_occ: xp.NeuronArray, e_vir: xp.NeuronArray) -> float:
    """E = sum_ij e_ij, e_ij = sum_ab (ia|jb) [2 (ia|jb) - (ib|ja)] / (e_i + e_j - e_a - e_b), in float64."""
    denominator = (
        xp.reshape(e_occ, (-1, 1, 1, 1))
        - xp.reshape(e_vir, (1, -1, 1, 1))
        + xp.reshape(e_occ, (1, 1, -1, 1))
        - xp.reshape(e_vir, (1, 1, 1, -1))
    )
    exchanged = xp.permute_dims(iajb, (0, 3, 2, 1))  # (ib|ja)
    pairs = xp.sum(iajb * (2 * iajb - exchanged) / denominator, axis=(1, 3))
    return float(xp.sum(pairs))


def mp2_energy_numpy(factors, c_occ, c_vir, e_occ, e_vir):
    """The same energy in plain NumPy. Given NeuronArrays, every call below dispatches to trn_backend."""
    qia = np.einsum("Qmn,mi,na->Qia", factors, c_occ, c_vir, optimize=True)
    iajb = np.einsum("Qia,Qjb->iajb", qia, qia)
    denominator = (
        e_occ[:, None, None, None]
        - e_vir[None, :, None, None]
        + e_occ[None, None, :, None]
        - e_vir[None, None, None, :]
    )
    return np.sum(iajb * (2 * iajb - np.transpose(iajb, (0, 3, 2, 1))) / denominator)


# --- the trn2 cost model ---


def trn2_seconds(steps: list, dtype: np.dtype) -> tuple[float | None, str]:
    """The modelled trn2 time of these contraction steps as NKI kernel calls (kernels/nki/cost.py), summed; None
    with the reason where a step has no NKI kernel to model."""
    total = 0.0
    for p in steps:
        mode = p.resolved.mode
        if mode == "fp64":
            return None, "fp64: a host float64 GEMM"
        if mode == "native" and dtype == np.float64:
            return None, "trn2 has no float64 arithmetic"
        seconds = _modelled(p.kernel, mode, p.bmkn, dtype == np.float64, p.resolved.kwargs.get("slices"))
        if seconds is None:
            return None, f"no NKI {p.kernel} kernel for {mode}"
        total += seconds
    return total, ""


@functools.cache
def _modelled(
    kernel: str, mode: str, bmkn: tuple[int, int, int, int], float64: bool, slices: int | None
) -> float | None:
    from trn_backend.kernels.nki import cost

    try:
        return cost.modelled(kernel, cost.runs_as(mode), bmkn, float64=float64, slices=slices).seconds
    except ValueError:  # the kernel layer has no NKI kernel of this kind for the mode
        return None


def sweep(
    calculation: Calculation,
    chosen: list[Setting],
    model: bool = True,
    progress: Callable[[str], None] = lambda label: None,
) -> Iterator[Row]:
    for setting in chosen:
        progress(f"{setting.label} {setting.dtype}")
        yield calculation.run(setting, model)
