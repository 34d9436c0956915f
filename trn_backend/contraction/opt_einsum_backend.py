"""The opt_einsum backend "trn", and ``contract`` / ``contract_expression`` conveniences that use it.

opt_einsum has no public backend registry: ``register()`` adds this module to its private dispatch tables (the
pyproject pins the opt_einsum minor series this was written against; ``tests/test_opt_einsum_backend.py`` checks
it). ``backend="trn"`` then calls ``einsum``, ``tensordot`` and ``transpose`` below, which accept NeuronArray,
NumPy and torch operands (converted without a copy where possible) and return NeuronArrays; expressions called
on NumPy arrays convert back, as opt_einsum's torch backend does. NeuronArray inputs with ``backend="auto"`` come
here too: opt_einsum names the backend after the array's top-level module, ``trn_backend``, aliased to this one.
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np
import opt_einsum
import torch
from opt_einsum.backends import dispatch
from opt_einsum.sharing import to_backend_cache_wrap

from .. import _precision
from .._api.creation import asarray
from .._helpers import NeuronArray, wrap
from .api import einsum as _einsum
from .api import tensordot_tensors

__all__ = ["einsum", "tensordot", "transpose", "contract", "contract_expression", "Expression", "register",
           "OPT_EINSUM_SERIES"]

# The opt_einsum release series whose private dispatch module ``register`` writes into.
OPT_EINSUM_SERIES = "3.4"


def to_trn(x: object) -> NeuronArray:
    """A NeuronArray for a NeuronArray, torch tensor (same memory) or NumPy array (default device)."""
    if isinstance(x, NeuronArray):
        return x
    if isinstance(x, torch.Tensor):
        return NeuronArray(x)
    if isinstance(x, (np.ndarray, np.generic)):
        return asarray(x)
    raise TypeError(f"opt_einsum backend 'trn' got an operand of type {type(x).__name__}; "
                    "pass NeuronArray, NumPy or torch arrays")


def einsum(subscripts: str, *operands: object, out: NeuronArray | None = None,
           optimize: object = "auto") -> NeuronArray:
    """The einsum opt_einsum calls for steps that are not plain tensordots (batched ones, for instance)."""
    result = _einsum(subscripts, *map(to_trn, operands), optimize=optimize)
    if out is None:
        return result
    out[...] = result
    return out


def tensordot(x: object, y: object, axes: int | tuple[Any, Any] = 2) -> NeuronArray:
    """The tensordot opt_einsum calls, lowered by the planner (see ``trn_backend.tensordot``)."""
    return wrap(tensordot_tensors(to_trn(x)._t, to_trn(y)._t, axes))


def transpose(x: object, axes: tuple[int, ...]) -> NeuronArray:
    """A permuted view (no copy)."""
    return wrap(to_trn(x)._t.permute(tuple(axes)))


# --- conversions for opt_einsum's ContractExpression on NumPy arrays and for constants ---

@to_backend_cache_wrap
def _to_trn_shared(x: object) -> NeuronArray | None:
    """``to_trn``, memoized inside ``opt_einsum.shared_intermediates``; None marks a non-constant operand."""
    return None if x is None else to_trn(x)


def build_expression(_arrays: object, expr: Any):
    """Evaluate ``expr`` on NumPy arrays: convert in, contract with "trn", convert the result back to NumPy."""
    def trn_contract(*arrays: object) -> np.ndarray:
        return np.asarray(expr._contract([_to_trn_shared(x) for x in arrays], backend="trn"))

    return trn_contract


def evaluate_constants(const_arrays: list[object], expr: Any) -> Any:
    """Convert the constant operands and contract what depends on them only, once."""
    return expr(*(_to_trn_shared(x) for x in const_arrays), backend="trn", evaluate_constants=True)


def register() -> None:
    """Make ``backend="trn"`` (and ``"auto"`` on NeuronArrays) reach this module."""
    for name in ("trn", "trn_backend"):
        dispatch._aliases[name] = __name__
    dispatch.CONVERT_BACKENDS["trn"] = build_expression
    dispatch.EVAL_CONSTS_BACKENDS["trn"] = evaluate_constants


# --- conveniences ---

def _precision_scope(precision: str | None, target_forward_error: float | None,
                     target_relative_error: float | None):
    """The precision context for the backend calls opt_einsum makes on our behalf (conflicts raise here)."""
    if precision is None and target_forward_error is None and target_relative_error is None:
        return contextlib.nullcontext()
    return _precision.precision(precision, target_forward_error=target_forward_error,
                                target_relative_error=target_relative_error)


def contract(subscripts: Any, *operands: Any, precision: str | None = None,
             target_forward_error: float | None = None, target_relative_error: float | None = None,
             **kwargs: Any) -> NeuronArray:
    """``opt_einsum.contract(subscripts, *operands, backend="trn", **kwargs)`` under a precision mode or a
    target (with target_relative_error=, ``trn_backend.last_precision_report()`` then tells the modes run)."""
    if "backend" in kwargs:
        raise TypeError("trn_backend.contract() always uses backend='trn'; call opt_einsum.contract for others")
    with _precision_scope(precision, target_forward_error, target_relative_error):
        if kwargs.get("memory_limit") is not None:
            # sliced with cotengra, the slices spread over the ranks (imported on use: torch.distributed)
            from ..distributed import _slicing

            return _slicing.contract(subscripts, *map(to_trn, operands), **kwargs)
        if kwargs.get("optimize", True) is False:
            # opt_einsum sends optimize=False to numpy.einsum whatever the backend: keep it on the engine
            return einsum(subscripts, *operands, out=kwargs.get("out"), optimize=False)
        return opt_einsum.contract(subscripts, *operands, backend="trn", **kwargs)


class Expression:
    """An opt_einsum ContractExpression that evaluates with backend "trn" under a fixed precision choice."""

    def __init__(self, expression: Any, precision: str | None, target_forward_error: float | None,
                 target_relative_error: float | None = None) -> None:
        _precision_scope(precision, target_forward_error, target_relative_error)  # conflicts raise now
        self.expression = expression
        self.precision = precision
        self.target_forward_error = target_forward_error
        self.target_relative_error = target_relative_error

    def __call__(self, *arrays: Any, out: Any = None) -> Any:
        with _precision_scope(self.precision, self.target_forward_error, self.target_relative_error):
            return self.expression(*arrays, backend="trn", out=out)

    def __repr__(self) -> str:
        return f"trn_backend.{self.expression!r}"

    def __str__(self) -> str:
        return str(self.expression)


def contract_expression(subscripts: Any, *shapes: Any, precision: str | None = None,
                        target_forward_error: float | None = None, target_relative_error: float | None = None,
                        **kwargs: Any) -> Expression:
    """``opt_einsum.contract_expression`` (shapes, ``constants=``, ``optimize=``...) evaluated with "trn"."""
    return Expression(opt_einsum.contract_expression(subscripts, *shapes, **kwargs), precision,
                      target_forward_error, target_relative_error)
