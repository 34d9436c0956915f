"""The contraction engine: every contraction is one ``Program``, compiled for its call and run on one runner.

``einsum`` (NumPy semantics; paths from opt_einsum or cotengra), ``tensordot``, ``matmul``, ``vecdot``,
``contract`` and ``contract_expression`` (opt_einsum's path, run here; backend "trn" registered on import),
``multi_einsum`` (identical contractions batched into one kernel call), and ``explain`` (the plan and every
rounding of a contraction, without running it). ``front.ENTRY_POINTS`` lists every public entry point;
``compiler.COMPILED`` is the fast path of compiled programs (``COMPILED.clear()`` empties it).
"""

from __future__ import annotations

from .._precision import Check
from . import opt_einsum_backend
from .api import einsum, matmul, tensordot, vecdot
from .compiler import COMPILED
from .explain import Explanation, error_bound, explain
from .front import ENTRY_POINTS
from .multi import multi_einsum
from .opt_einsum_backend import Expression, contract, contract_expression
from .plan import Plan

__all__ = [
    "einsum",
    "tensordot",
    "matmul",
    "vecdot",
    "contract",
    "contract_expression",
    "multi_einsum",
    "explain",
    "error_bound",
    "Explanation",
    "Check",
    "Expression",
    "Plan",
    "ENTRY_POINTS",
    "COMPILED",
]

opt_einsum_backend.register()
