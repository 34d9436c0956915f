"""The a priori bound on the DF-MP2 energy error of a precision setting, from the bounds the planner publishes.

Every binary contraction step under a mode returns C^ with |C^ - C| <= b |A||B| entrywise, b the step's bound
(``explain(...).steps[i].resolved.bound``, what ``trn_backend.error_bound(mode, dtype, K)`` gives; it includes the
rounding of the result to its dtype). Carried through the computation of ``chemistry``:

1. Inputs rounded to the working dtype (unit roundoff u; u = 0 for the float64 data): |x~ - x| <= u |x|.
2. (Q|ia) in two steps with bounds b1, b2: |B^ - B| <= beta S, S = |L| |C_occ| |C_vir| (a contraction of absolute
   values), beta = (1 + b1)(1 + b2)(1 + u)^3 - 1. (Each step's error is b times the product of the absolute
   values of the operands it was given, which are within the previous errors of the exact ones.)
3. (ia|jb) = B^T B, one step with bound b3: |V^ - V| <= eps = beta (1 + b3) (S^T |B| + |B|^T S)
   + beta^2 (1 + b3) S^T S + b3 |B|^T |B|.
4. E(V) = sum V (2V - V_s) / D, V_s the exchanged integrals (ib|ja), D symmetric under the exchange. E is
   quadratic, so exactly: E(V + d) - E(V) = sum (4V - 2V_s) d / D + sum d (2d - d_s) / D, hence
   |dE| <= sum |4V - 2V_s| eps / |D| + sum (2 eps^2 + eps eps_s) / |D|.
5. The float64 evaluation of the energy from V^: every term is a few roundings (and the denominator's three,
   relative to |e_i| + |e_j| + |e_a| + |e_b| = kappa |D| at most), and the sum of N = o^2 v^2 terms, in any order,
   adds gamma_{N-1}(u_64) of the sum of their absolute values.

The magnitudes (S, |B|, V, D) are computed once, in float64 from the float64 data; their own rounding (relative
1e-13 or less) is far below every bound here. PySCF's reference is a float64 computation of the same quantities,
so its own error is within the bound of the native float64 setting: ``chemistry`` adds that to every bound, which
then bounds the difference between our energy and PySCF's.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

U_FP64 = 2.0**-53


def gamma(n: float, u: float) -> float:
    """n roundings of unit roundoff u: n u / (1 - n u)."""
    return n * u / (1 - n * u)


@dataclasses.dataclass(frozen=True)
class StepBounds:
    """The published bounds (units of |A||B|) of the three contraction steps."""

    first: float  # the integral transform's first step
    second: float  # and its second
    exchange: float  # (ia|jb) = sum_Q (Q|ia)(Q|jb)


@dataclasses.dataclass(frozen=True)
class Magnitudes:
    """Absolute-value contractions of the exact data that the bound needs, each (o, v, o, v), float64."""

    cross: np.ndarray  # S^T |B| + |B|^T S
    square: np.ndarray  # S^T S
    plain: np.ndarray  # |B|^T |B|
    integrals: np.ndarray  # |V|
    weight: np.ndarray  # |4V - 2V_s| / |D|
    inverse: np.ndarray  # 1 / |D|
    kappa: float  # max (|e_i| + |e_j| + |e_a| + |e_b|) / |D|


def magnitudes(
    factors: np.ndarray, c_occ: np.ndarray, c_vir: np.ndarray, e_occ: np.ndarray, e_vir: np.ndarray
) -> Magnitudes:
    naux = factors.shape[0]
    o, v = c_occ.shape[1], c_vir.shape[1]
    exact = np.einsum("Qmn,mi,na->Qia", factors, c_occ, c_vir, optimize=True).reshape(naux, o * v)
    spread = np.einsum("Qmn,mi,na->Qia", np.abs(factors), np.abs(c_occ), np.abs(c_vir), optimize=True).reshape(
        naux, o * v
    )
    size = np.abs(exact)
    cross = spread.T @ size

    def shaped(matrix: np.ndarray) -> np.ndarray:
        return matrix.reshape(o, v, o, v)

    integrals = shaped(exact.T @ exact)
    denominator = _denominator(e_occ, e_vir)
    spread_e = _denominator(np.abs(e_occ), -np.abs(e_vir))  # |e_i| + |e_j| + |e_a| + |e_b|
    if np.any(denominator >= 0):
        raise ValueError(
            "accuracy.magnitudes(): some e_i + e_j - e_a - e_b >= 0; MP2 needs occupied orbital "
            "energies below the virtual ones"
        )
    return Magnitudes(
        cross=shaped(cross + cross.T),
        square=shaped(spread.T @ spread),
        plain=shaped(size.T @ size),
        integrals=np.abs(integrals),
        weight=np.abs(4 * integrals - 2 * _exchanged(integrals)) / np.abs(denominator),
        inverse=1 / np.abs(denominator),
        kappa=float(np.max(spread_e / np.abs(denominator))),
    )


def energy_bound(m: Magnitudes, b: StepBounds, input_unit: float) -> float:
    """A bound on |E computed - E exact| in Eh (steps 1 to 5 of the module docstring)."""
    u = input_unit
    beta = (1 + b.first) * (1 + b.second) * (1 + u) ** 3 - 1
    eps = beta * (1 + b.exchange) * m.cross + beta**2 * (1 + b.exchange) * m.square + b.exchange * m.plain
    eps_exchanged = _exchanged(eps)
    change = float(np.sum(m.weight * eps) + np.sum(m.inverse * (2 * eps**2 + eps * eps_exchanged)))
    computed = m.integrals + eps  # bounds |V^|
    size = float(np.sum(computed * (2 * computed + _exchanged(computed)) * m.inverse))
    roundings = eps.size - 1 + 4 + math.ceil(3 * m.kappa)  # the sum, a term's own roundings, the denominator's
    return change + gamma(roundings, U_FP64) * size


def _denominator(e_occ: np.ndarray, e_vir: np.ndarray) -> np.ndarray:
    return (
        e_occ[:, None, None, None]
        - e_vir[None, :, None, None]
        + e_occ[None, None, :, None]
        - e_vir[None, None, None, :]
    )


def _exchanged(iajb: np.ndarray) -> np.ndarray:
    """(ia|jb) -> (ib|ja)."""
    return np.transpose(iajb, (0, 3, 2, 1))
