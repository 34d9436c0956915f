"""The contraction engine: one planner lowers every contraction to a matmul or bmm of the kernel layer.

``einsum`` (NumPy semantics; paths from opt_einsum or cotengra), ``contract`` and ``contract_expression`` (opt_einsum
with backend "trn", registered on import), ``multi_einsum`` (identical contractions batched into one kernel call),
and ``explain`` (the plan of a contraction, without running it). The namespace's ``tensordot``, ``matmul`` and
``vecdot`` go through the same planner; ``posteriori`` checks results against ``target_relative_error=``.
"""

from __future__ import annotations

from . import opt_einsum_backend
from .api import einsum
from .explain import Explanation, error_bound, explain
from .multi import multi_einsum
from .opt_einsum_backend import Expression, contract, contract_expression
from .plan import Plan

__all__ = ["einsum", "contract", "contract_expression", "multi_einsum", "explain", "error_bound", "Explanation",
           "Expression", "Plan"]

opt_einsum_backend.register()
