"""Namespace functions on sharded arrays: ``call``, the handler this package registers for its types in the
namespace's ``_overrides.OVERRIDES`` when it is imported.

Without a sharded argument a public function runs as is. With one (or ``device=`` a ``Sharding``), ``call``
1. resolves pending sums by an all-reduce, except in the arguments the function is linear in;
2. runs a reduction over the partitioned axis and other axes in two steps (the namespace flattens reduced axes,
   which DTensor cannot do across a partition);
3. runs the function on the DTensors: DTensor's sharding propagation keeps blocks local wherever the operation
   allows, plain arrays count as replicated, and values read into Python are the whole array's;
4. where DTensor has no rule for an operation (it raises, on every rank alike), or an operand has an empty block
   and the function is not known to be safe on one, runs it on whole arrays instead: gathered on every rank,
   the result replicated.
Either way the values are the function's own. ``device=`` may be a ``Sharding``: the result is placed that way.
"""

from __future__ import annotations

import collections
import warnings
from collections.abc import Callable, Iterator
from typing import Any, cast

from torch.distributed.tensor import DTensor, Partial, Replicate, Shard
from torch.distributed.tensor.experimental import implicit_replication
from torch.overrides import TorchFunctionMode

from .. import _dtypes, _namespace
from .._api import elementwise
from .._array import NeuronArray
from .._helpers import normalize_axes
from .._precision import PrecisionError
from ._array import ShardedNeuronArray, Sharding, as_dtensor, is_pending, place, redistribute, replicated, wrap_dtensor
from ._mesh import chunk_sizes
from ._strategy import PlacementError

__all__ = ["call", "GATHERED_CALLS"]

# Linear in their (first) array argument: a pending sum stays pending.
LINEAR = frozenset(
    {
        "negative",
        "positive",
        "real",
        "imag",
        "conj",
        "sum",
        "mean",
        "cumulative_sum",
        "reshape",
        "permute_dims",
        "matrix_transpose",
        "expand_dims",
        "squeeze",
        "linalg.matrix_transpose",
    }
)
# Sums: pending only when every array operand is (a pending sum plus a whole array is not one).
ADDITIVE = frozenset({"add", "subtract"})
# Products: linear in each factor, so one pending factor stays pending (divide: its dividend only).
PRODUCTS = frozenset({"multiply", "divide"})
# The planner's executor handles pending and partitioned operands itself (``_contract``).
CONTRACTIONS = frozenset(
    {
        "einsum",
        "tensordot",
        "matmul",
        "vecdot",
        "contract",
        "linalg.matmul",
        "linalg.tensordot",
        "linalg.vecdot",
    }
)
# Reductions the namespace computes by flattening the reduced axes, which DTensor cannot do with a partitioned
# one: over the partitioned axis and others they run in two steps (the others, then the partitioned axis).
STAGED = frozenset({"sum", "prod", "mean", "max", "min", "all", "any", "count_nonzero"})
# Functions that are safe on an empty block (a rank holding none of a partitioned axis, as when 4 columns are
# split over 3 ranks). Others (a maximum, an FFT) can fail there on that rank alone, so on arrays with an empty
# block they run on whole arrays: a choice every rank makes alike, from shapes.
EMPTY_SAFE = frozenset({*elementwise.__all__, "where", "sum", "prod", "all", "any", "count_nonzero", *CONTRACTIONS})
# Calls that ran on whole arrays since import, by function name (tests and users see what gathered).
GATHERED_CALLS: collections.Counter[str] = collections.Counter()


def _involves_sharding(args: tuple, kwargs: dict[str, Any]) -> bool:
    """Whether an argument (or an element of a list or tuple argument) is sharded, or device= a Sharding."""
    for x in args:
        kind = type(x)
        if kind is ShardedNeuronArray or (kind in _SEQUENCES and any(type(y) is ShardedNeuronArray for y in x)):
            return True
    for x in kwargs.values():
        kind = type(x)
        if (
            kind is ShardedNeuronArray
            or kind is Sharding
            or (kind in _SEQUENCES and any(type(y) is ShardedNeuronArray for y in x))
        ):
            return True
    return False


_SEQUENCES = (list, tuple)


def _leaves(args: tuple, kwargs: dict[str, Any]) -> Iterator[Any]:
    """Every argument, and the elements of list and tuple arguments."""
    for x in (*args, *kwargs.values()):
        yield from x if type(x) in _SEQUENCES else (x,)


def _map(f: Callable[[Any], Any], args: tuple, kwargs: dict[str, Any]) -> tuple[tuple, dict[str, Any]]:
    """``f`` applied to every argument and to the elements of list and tuple arguments."""

    def one(x: Any) -> Any:
        return type(x)(map(f, x)) if type(x) in _SEQUENCES else f(x)

    return tuple(map(one, args)), {k: one(v) for k, v in kwargs.items()}


def call(func: Callable[..., Any], name: str, args: tuple, kwargs: dict[str, Any]) -> Any:
    """``func(*args, **kwargs)`` with sharded arguments (see the module docstring)."""
    target = kwargs.get("device")
    if isinstance(target, Sharding):
        kwargs = {**kwargs, "device": target.device}
        result = call(func, name, args, kwargs) if _involves_sharding(args, kwargs) else func(*args, **kwargs)
        return _settle(result, lambda x: _placed(x, target, name))
    mesh = _mesh(args, kwargs, name)
    args, kwargs = _resolve_pending(name, args, kwargs)
    reduced = _reduced_partition(name, args, kwargs)
    if reduced and len(reduced[1]) > 1:
        return _staged(name, args[0], reduced, kwargs)
    if name in EMPTY_SAFE or not any(map(_has_empty_block, _leaves(args, kwargs))):
        try:
            with implicit_replication(), _SameOnEveryRank(), warnings.catch_warnings():
                # plain arrays count as replicated by design: DTensor warns about each 1-element one
                warnings.filterwarnings(
                    "ignore", message="Found a non-scalar tensor with numel=1 and ndim!=0", category=UserWarning
                )
                result = func(*args, **kwargs)
        except (PrecisionError, PlacementError):  # made on every rank alike (``_contract``): not a missing rule
            raise
        except Exception:  # noqa: BLE001 - DTensor has no rule for an operation here: run on whole arrays
            pass
        else:
            return _settle(result, lambda x: _normalized(x, mesh))
    GATHERED_CALLS[name] += 1
    args, kwargs = _map(_whole, args, kwargs)
    return _settle(func(*args, **kwargs), lambda x: _normalized(x, mesh))


# Tensor methods that hand values to Python. DTensor answers them from this rank's block, even for a block of a
# partitioned array or a pending sum (its item() reads the local scalar), so branches on them would differ.
_VALUE_METHODS = frozenset({"item", "tolist", "numpy", "__bool__", "__int__", "__float__", "__complex__", "__index__"})


class _SameOnEveryRank(TorchFunctionMode):
    """Keeps every rank on the same path through a function: values read into Python are the whole array's
    (one collective per read), never this rank's block."""

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        if getattr(func, "__name__", None) in _VALUE_METHODS and args and isinstance(args[0], DTensor):
            args = (redistribute(args[0], replicated(args[0].device_mesh)).to_local(), *args[1:])
        return func(*args, **(kwargs or {}))


def _has_empty_block(x: object) -> bool:
    if not isinstance(x, ShardedNeuronArray):
        return False
    mesh = x._t.device_mesh
    # (is_shard() means a Shard, which has a dim; the checker cannot narrow by it)
    return any(
        p.is_shard() and not all(chunk_sizes(x.shape[p.dim], mesh.size(d)))  # type: ignore[attr-defined]
        for d, p in enumerate(x._t.placements)
    )


def _mesh(args: tuple, kwargs: dict[str, Any], name: str) -> Any:
    """The one mesh of the sharded arguments; two are a ValueError."""
    meshes = list(dict.fromkeys(x._t.device_mesh for x in _leaves(args, kwargs) if isinstance(x, ShardedNeuronArray)))
    if len(meshes) > 1:
        raise ValueError(
            f"{name}(): sharded arguments live on different device meshes, {meshes[0]} and "
            f"{meshes[1]}; move one with x.to_device(y.device)"
        )
    return meshes[0]


def _reduced_partition(
    name: str, args: tuple, kwargs: dict[str, Any]
) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """For a reduction of a partitioned array over a partitioned axis: those axes and all reduced axes."""
    if name not in STAGED or not args or not isinstance(args[0], ShardedNeuronArray):
        return None
    split = tuple(p.dim for p in args[0]._t.placements if p.is_shard())  # type: ignore[attr-defined]
    if not split:
        return None
    axes = normalize_axes(kwargs.get("axis"), args[0].ndim, name)
    inside = tuple(a for a in split if a in axes)
    return (inside, axes) if inside else None


def _staged(
    name: str, x: ShardedNeuronArray, reduced: tuple[tuple[int, ...], tuple[int, ...]], kwargs: dict[str, Any]
) -> Any:
    """The reduction over the other axes on each rank's block, then over each partitioned axis alone (a pending
    sum for sums); a count of nonzeros then adds the counts."""
    ns = _namespace  # the public functions: each step is a call on sharded arrays again
    split, axes = reduced
    out = getattr(ns, name)(x, **{**kwargs, "axis": tuple(a for a in axes if a not in split), "keepdims": True})
    for axis in split:
        out = getattr(ns, "sum" if name == "count_nonzero" else name)(out, **{**kwargs, "axis": axis, "keepdims": True})
    return out if kwargs.get("keepdims") else ns.squeeze(out, axis=axes)


def _resolve_pending(name: str, args: tuple, kwargs: dict[str, Any]) -> tuple[tuple, dict[str, Any]]:
    """Every pending sum all-reduced, except those the function is linear in."""
    if name in CONTRACTIONS:
        return args, kwargs
    keep = _linear_in(name, args)
    resolved: dict[int, ShardedNeuronArray] = {}  # an array passed twice is resolved once

    def resolve(x: Any) -> Any:
        if id(x) in keep or not _pending(x):
            return x
        if id(x) not in resolved:
            resolved[id(x)] = x.resolve()
        return resolved[id(x)]

    return _map(resolve, args, kwargs)


def _linear_in(name: str, args: tuple) -> set[int]:
    """The ids of the pending arguments that may stay pending (the function is linear in them)."""
    if not all(map(_linear_dtype, args)):
        return set()  # integers narrower than 64 bits may widen (sum, mean, divide): wrapped summands disagree
    if name in LINEAR and args:
        return {id(args[0])}
    if name in ADDITIVE and len(args) == 2 and all(map(_pending, args)):
        return set(map(id, args))
    if name in PRODUCTS and len(args) == 2:
        first = next((a for a in (args if name == "multiply" else args[:1]) if _pending(a)), None)
        other = args[1] if first is args[0] else args[0]
        if first is not None and not _pending(other):
            return {id(first)}
    return set()


def _linear_dtype(x: object) -> bool:
    return not isinstance(x, NeuronArray) or x._t.dtype in _LINEAR_DTYPES


_LINEAR_DTYPES = frozenset({*_dtypes.FLOATING, _dtypes.int64, _dtypes.uint64})


def _pending(x: object) -> bool:
    return isinstance(x, ShardedNeuronArray) and is_pending(x._t)


def _whole(x: Any) -> Any:
    return x.gather() if isinstance(x, ShardedNeuronArray) else x


def _settle(result: Any, f: Callable[[NeuronArray], NeuronArray]) -> Any:
    """``f`` applied to each array of a result (an array, or a tuple, named tuple or list of them)."""
    if isinstance(result, NeuronArray):
        return f(result)
    if isinstance(result, tuple) and hasattr(result, "_fields"):
        return type(result)(*(_settle(r, f) for r in result))
    if type(result) in (list, tuple):
        return type(result)(_settle(r, f) for r in result)
    return result


def _normalized(x: NeuronArray, mesh: Any) -> ShardedNeuronArray:
    """A result as sharded arrays are placed: a plain one (the same on every rank) replicated, and placements
    other than a block, a replica or a pending sum (a pending maximum, say) resolved."""
    t = x._t
    if not isinstance(t, DTensor):
        return wrap_dtensor(as_dtensor(t, mesh))
    if all(type(p) in (Shard, Replicate) or (type(p) is Partial and p.reduce_op == "sum") for p in t.placements):
        return cast(ShardedNeuronArray, x)  # an array over a DTensor is a ShardedNeuronArray (``wrap_dtensor``)
    return wrap_dtensor(
        redistribute(
            t,
            tuple(
                p if type(p) in (Shard, Replicate) or (type(p) is Partial and p.reduce_op == "sum") else Replicate()
                for p in t.placements
            ),
        )
    )


def _placed(x: NeuronArray, target: Sharding, name: str) -> ShardedNeuronArray:
    if isinstance(x, ShardedNeuronArray):
        return x.to_device(target)
    return wrap_dtensor(place(x._t, target, name))
