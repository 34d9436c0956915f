"""Every public namespace function on sharded arrays: it matches NumPy or raises TypeError/ValueError.

Each case is called on sharded inputs (partitioned along rows, along columns with an empty block, pending
sums, and mixed with plain arrays) on 3 ranks of a threaded process group, and on a 2x2 mesh of 4 ranks (rows
and columns partitioned over its two dimensions, or summands over one), and on the NumPy arrays; results
are gathered and compared (dtype, shape, values). A coverage test checks that every public function has a case.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import trn_backend as xp
import trn_backend.distributed as td
from tests.distributed_support import spmd
from trn_backend import _namespace
from trn_backend.distributed import _dispatch

# plain arrays count as replicated by design; DTensor warns about each 1-element one (pytest shows it)
pytestmark = pytest.mark.filterwarnings("ignore:Found a non-scalar tensor with numel=1")

WORLD = 3
_rng = np.random.default_rng(0)
_m = _rng.normal(size=(5, 5))
INPUTS = {
    "x": _rng.integers(1, 15, (5, 4)) / 16,  # dyadic, so pending summands add up exactly
    "y": _rng.integers(1, 15, (5, 4)) / 16,
    "i": _rng.integers(-5, 6, (5, 4)),
    "j": _rng.integers(1, 4, (5, 4)),
    "u": np.array([[0, 1, 2**31, 2**32 - 1]] * 5, dtype=np.uint32) + np.arange(5, dtype=np.uint32)[:, None],
    "w": np.array([[0, 3, 2**63, 2**64 - 1]] * 5, dtype=np.uint64),
    "b": _rng.integers(0, 2, (5, 4)).astype(bool),
    "c": _rng.integers(0, 2, (5, 4)).astype(bool),
    "z": (_rng.integers(1, 15, (5, 4)) + 1j * _rng.integers(1, 15, (5, 4))) / 16,
    "s": _m @ _m.T + 5 * np.eye(5),
    "v": np.sort(_rng.integers(1, 15, 5) / 16),
    "k": _rng.integers(1, 15, (5, 3)) / 16,
    "idx": np.array([3, 0, 2]),
    "ind": _rng.integers(0, 5, (5, 4)),
}

Case = Callable[[Any, Any, dict], Any]  # (module, inputs, device kwargs) -> result


def _call(name: str, *inputs: str, **kwargs: Any) -> Case:
    """A case calling ``name`` (a dotted path in the module) on the named inputs."""

    def case(m: Any, a: Any, d: dict) -> Any:
        f = m
        for part in name.split("."):
            f = getattr(f, part)
        return f(*(getattr(a, i) for i in inputs), **kwargs)

    return case


def _f64(m: Any) -> dict:
    """NumPy's fftfreq has no dtype= and gives float64; the namespace's gives the default float unless asked."""
    return {"dtype": xp.float64} if m is xp else {}


CASES: list[tuple[str, Case]] = [
    # --- element-wise, unary ---
    *(
        (n, _call(n, "x"))
        for n in (
            "abs",
            "acos",
            "asin",
            "asinh",
            "atan",
            "atanh",
            "ceil",
            "cos",
            "cosh",
            "exp",
            "expm1",
            "floor",
            "isfinite",
            "isinf",
            "isnan",
            "log",
            "log1p",
            "log2",
            "log10",
            "negative",
            "positive",
            "round",
            "sign",
            "signbit",
            "sin",
            "sinh",
            "sqrt",
            "square",
            "tan",
            "tanh",
            "trunc",
            "reciprocal",
        )
    ),
    ("acosh", lambda m, a, d: m.acosh(a.x + 1)),
    ("abs", lambda m, a, d: m.abs(a.i)),
    ("negative", lambda m, a, d: m.negative(a.u)),
    ("exp", lambda m, a, d: m.exp(a.z)),
    ("sqrt", lambda m, a, d: m.sqrt(a.z)),
    ("conj", lambda m, a, d: m.conj(a.z)),
    ("real", lambda m, a, d: m.real(a.z)),
    ("imag", lambda m, a, d: m.imag(a.z)),
    ("bitwise_invert", lambda m, a, d: m.bitwise_invert(a.i)),
    ("bitwise_invert", lambda m, a, d: m.bitwise_invert(a.w)),
    ("logical_not", lambda m, a, d: m.logical_not(a.b)),
    # --- element-wise, binary ---
    *(
        (n, _call(n, "x", "y"))
        for n in (
            "add",
            "atan2",
            "copysign",
            "divide",
            "equal",
            "floor_divide",
            "greater",
            "greater_equal",
            "hypot",
            "less",
            "less_equal",
            "logaddexp",
            "maximum",
            "minimum",
            "multiply",
            "nextafter",
            "not_equal",
            "pow",
            "remainder",
            "subtract",
        )
    ),
    *(
        (n, _call(n, "i", "j"))
        for n in (
            "bitwise_and",
            "bitwise_left_shift",
            "bitwise_or",
            "bitwise_right_shift",
            "bitwise_xor",
            "floor_divide",
            "remainder",
            "add",
            "multiply",
            "subtract",
        )
    ),
    *((n, _call(n, "b", "c")) for n in ("logical_and", "logical_or", "logical_xor")),
    ("add", lambda m, a, d: m.add(a.u, a.u)),
    ("multiply", lambda m, a, d: m.multiply(a.w, 3)),
    ("add", lambda m, a, d: m.add(a.x, 1.5)),
    ("multiply", lambda m, a, d: m.multiply(2.0, a.x)),
    ("divide", lambda m, a, d: m.divide(1.0, a.x)),
    ("subtract", lambda m, a, d: m.subtract(a.z, a.x)),
    ("multiply", lambda m, a, d: m.multiply(a.x, a.v[:4])),
    ("add", lambda m, a, d: m.add(a.x, a.x)),
    ("equal", lambda m, a, d: m.equal(a.w, a.w)),
    ("bitwise_xor", lambda m, a, d: m.bitwise_xor(a.u, a.u[::-1])),
    ("clip", lambda m, a, d: m.clip(a.x, 0.25, 0.75)),
    ("clip", lambda m, a, d: m.clip(a.x, min=a.y)),
    # --- statistical and utility ---
    *(
        (n, _call(n, "x", axis=axis))
        for n in ("max", "min", "mean", "prod", "sum", "std", "var", "cumulative_sum", "cumulative_prod")
        for axis in (0, 1)
    ),
    *((n, _call(n, "x")) for n in ("max", "min", "mean", "prod", "sum", "std", "var")),
    ("sum", lambda m, a, d: m.sum(a.x, axis=0, keepdims=True)),
    ("sum", lambda m, a, d: m.sum(a.i, axis=1)),
    ("sum", lambda m, a, d: m.sum(a.u)),
    ("max", lambda m, a, d: m.max(a.w, axis=0)),
    ("max", lambda m, a, d: m.max(a.u)),
    ("min", lambda m, a, d: m.min(a.i, axis=1)),
    ("var", lambda m, a, d: m.var(a.x, axis=0, correction=1)),
    ("cumulative_sum", lambda m, a, d: m.cumulative_sum(a.x, axis=0, include_initial=True)),
    ("cumulative_sum", lambda m, a, d: m.cumulative_sum(a.i, axis=1)),
    ("all", lambda m, a, d: m.all(a.b, axis=0)),
    ("all", lambda m, a, d: m.all(a.b)),
    ("any", lambda m, a, d: m.any(a.b, axis=1)),
    ("any", lambda m, a, d: m.any(a.x > 0.9)),
    ("diff", lambda m, a, d: m.diff(a.x, axis=0)),
    ("diff", lambda m, a, d: m.diff(a.x, axis=1, n=2)),
    ("count_nonzero", lambda m, a, d: m.count_nonzero(a.i, axis=0)),
    ("count_nonzero", lambda m, a, d: m.asarray(m.count_nonzero(a.i))),
    # --- searching, sorting, sets ---
    ("argmax", lambda m, a, d: m.argmax(a.x, axis=0)),
    ("argmax", lambda m, a, d: m.argmax(a.x)),
    ("argmin", lambda m, a, d: m.argmin(a.x, axis=1)),
    ("nonzero", lambda m, a, d: m.nonzero(a.x > 0.5)),
    ("where", lambda m, a, d: m.where(a.b, a.x, a.y)),
    ("where", lambda m, a, d: m.where(a.b, a.x, 0.0)),
    ("searchsorted", lambda m, a, d: m.searchsorted(a.v, a.x)),
    ("searchsorted", lambda m, a, d: m.searchsorted(a.v, a.x, side="right")),
    ("sort", lambda m, a, d: m.sort(a.x, axis=0, stable=True)),
    (
        "sort",
        lambda m, a, d: (
            m.sort(a.x, axis=1, descending=True, stable=True)
            if m is xp
            else np.flip(np.sort(np.flip(a.x, axis=1), axis=1, stable=True), axis=1)
        ),
    ),
    ("sort", lambda m, a, d: m.sort(a.w, axis=0, stable=True)),
    ("argsort", lambda m, a, d: m.argsort(a.x, axis=0, stable=True)),
    ("argsort", lambda m, a, d: m.argsort(a.i, axis=1, stable=True)),
    ("unique_values", lambda m, a, d: m.sort(m.unique_values(a.i))),
    ("unique_counts", lambda m, a, d: m.unique_counts(a.i)),
    ("unique_inverse", lambda m, a, d: m.unique_inverse(a.i)),
    ("unique_all", lambda m, a, d: m.unique_all(a.i)),
    ("isin", lambda m, a, d: m.isin(a.i, a.j)),
    # --- manipulation and indexing ---
    ("broadcast_arrays", lambda m, a, d: m.broadcast_arrays(a.x, a.v[:4])),
    ("broadcast_to", lambda m, a, d: m.broadcast_to(a.x, (2, 5, 4))),
    ("concat", lambda m, a, d: m.concat([a.x, a.y], axis=0)),
    ("concat", lambda m, a, d: m.concat([a.x, a.y], axis=1)),
    ("concat", lambda m, a, d: m.concat([a.x, a.y], axis=None)),
    ("expand_dims", lambda m, a, d: m.expand_dims(a.x, axis=0)),
    ("expand_dims", lambda m, a, d: m.expand_dims(a.x, axis=(1, -1))),
    ("flip", lambda m, a, d: m.flip(a.x, axis=0)),
    ("flip", lambda m, a, d: m.flip(a.u)),
    ("meshgrid", lambda m, a, d: m.meshgrid(a.v, a.k[0])),
    ("moveaxis", lambda m, a, d: m.moveaxis(a.x, 0, 1)),
    ("permute_dims", lambda m, a, d: m.permute_dims(a.x, (1, 0))),
    ("repeat", lambda m, a, d: m.repeat(a.x, 2, axis=0)),
    ("repeat", lambda m, a, d: m.repeat(a.x, 3)),
    ("reshape", lambda m, a, d: m.reshape(a.x, (20,))),
    ("reshape", lambda m, a, d: m.reshape(a.x, (4, 5))),
    ("reshape", lambda m, a, d: m.reshape(a.x, (5, 2, 2))),
    ("roll", lambda m, a, d: m.roll(a.x, 2, axis=0)),
    ("roll", lambda m, a, d: m.roll(a.x, -1)),
    ("squeeze", lambda m, a, d: m.squeeze(m.expand_dims(a.x, axis=1), axis=1)),
    ("stack", lambda m, a, d: m.stack([a.x, a.y], axis=0)),
    ("stack", lambda m, a, d: m.stack([a.x, a.y], axis=-1)),
    ("tile", lambda m, a, d: m.tile(a.x, (2, 1))),
    ("unstack", lambda m, a, d: m.unstack(a.x, axis=0)),
    ("unstack", lambda m, a, d: m.unstack(a.x, axis=1)),
    ("take", lambda m, a, d: m.take(a.x, a.idx, axis=0)),
    ("take", lambda m, a, d: m.take(a.x, a.idx, axis=1)),
    ("take_along_axis", lambda m, a, d: m.take_along_axis(a.x, a.ind, axis=0)),
    ("tril", lambda m, a, d: m.tril(a.x)),
    ("triu", lambda m, a, d: m.triu(a.x, k=1)),
    # --- creation and data types ---
    ("arange", lambda m, a, d: m.arange(7, **d)),
    ("arange", lambda m, a, d: m.arange(0.5, 3, 0.25, dtype=m.float64, **d)),
    ("asarray", lambda m, a, d: m.asarray(a.x)),
    ("asarray", lambda m, a, d: m.asarray(a.x, dtype=m.float32, copy=True)),
    ("asarray", lambda m, a, d: m.asarray([[1.0, 2.0], [3.0, 4.0]], dtype=m.float64, **d)),
    ("empty", lambda m, a, d: m.empty((5, 4), **d).shape),
    ("empty_like", lambda m, a, d: m.empty_like(a.x).shape),
    ("eye", lambda m, a, d: m.eye(5, 4, k=1, dtype=m.float64, **d)),
    ("from_dlpack", lambda m, a, d: m.from_dlpack(a.x)),
    ("from_torch", lambda m, a, d: m.from_torch(a.x.to_torch()) if m is xp else a.x),
    ("full", lambda m, a, d: m.full((5, 4), 2.5, dtype=m.float64, **d)),
    ("full_like", lambda m, a, d: m.full_like(a.x, 3)),
    ("full_like", lambda m, a, d: m.full_like(a.i, 7)),
    ("linspace", lambda m, a, d: m.linspace(0, 1, 9, dtype=m.float64, **d)),
    ("ones", lambda m, a, d: m.ones((5, 4), dtype=m.int32, **d)),
    ("ones_like", lambda m, a, d: m.ones_like(a.x)),
    ("ones_like", lambda m, a, d: m.ones_like(a.i)),
    ("zeros", lambda m, a, d: m.zeros((5, 4), dtype=m.float64, **d)),
    ("zeros_like", lambda m, a, d: m.zeros_like(a.z)),
    ("astype", lambda m, a, d: m.astype(a.x, m.float32)),
    ("astype", lambda m, a, d: m.astype(a.i, m.uint16)),
    ("astype", lambda m, a, d: m.astype(a.w, m.float64)),
    ("can_cast", lambda m, a, d: m.can_cast(a.x, m.float32)),
    ("finfo", lambda m, a, d: m.finfo(a.x if m is xp else a.x.dtype).eps),
    ("iinfo", lambda m, a, d: m.iinfo(a.i if m is xp else a.i.dtype).max),
    ("isdtype", lambda m, a, d: m.isdtype(a.x.dtype, "real floating")),
    ("result_type", lambda m, a, d: str(m.result_type(a.x, a.i, 1.0)).replace("torch.", "")),
    ("broadcast_shapes", lambda m, a, d: m.broadcast_shapes(a.x.shape, (1, 4))),
    # --- contractions ---
    ("matmul", lambda m, a, d: m.matmul(a.x, m.matrix_transpose(a.y))),
    ("matmul", lambda m, a, d: m.matmul(m.matrix_transpose(a.x), a.y)),
    ("matmul", lambda m, a, d: m.matmul(a.s, a.v)),
    ("matmul", lambda m, a, d: m.matmul(a.i, m.matrix_transpose(a.j))),
    ("matrix_transpose", lambda m, a, d: m.matrix_transpose(a.x)),
    ("tensordot", lambda m, a, d: m.tensordot(a.x, a.y, axes=([0], [0]))),
    ("tensordot", lambda m, a, d: m.tensordot(a.x, a.y, axes=0)),
    ("vecdot", lambda m, a, d: m.vecdot(a.x, a.y)),
    ("vecdot", lambda m, a, d: m.vecdot(a.z, a.z, axis=-2)),
    ("einsum", lambda m, a, d: m.einsum("ij,kj->ik", a.x, a.y)),
    ("einsum", lambda m, a, d: m.einsum("ij,ij,kj->k", a.x, a.y, a.x)),
    ("einsum", lambda m, a, d: m.einsum("ii->i", a.s)),
    ("einsum", lambda m, a, d: m.einsum("ij->", a.x)),
    ("contract", lambda m, a, d: (m.contract if m is xp else np.einsum)("ij,kj,kl->il", a.x, a.y, a.x)),
    (
        "multi_einsum",
        lambda m, a, d: (
            m.multi_einsum(("ij,kj->ik", a.x, a.y), ("ij,kj->ik", a.y, a.x), ("ij->j", a.x))
            if m is xp
            else [np.einsum("ij,kj->ik", a.x, a.y), np.einsum("ij,kj->ik", a.y, a.x), np.einsum("ij->j", a.x)]
        ),
    ),
    ("explain", lambda m, a, d: m.explain("ij,kj->ik", a.x, a.y).flops if m is xp else 2 * 5 * 4 * 5),
    # --- linalg ---
    ("linalg.cholesky", lambda m, a, d: m.linalg.cholesky(a.s)),
    ("linalg.cholesky", lambda m, a, d: m.linalg.cholesky(a.s, upper=True)),
    ("linalg.cross", lambda m, a, d: m.linalg.cross(a.k, a.k[::-1])),
    ("linalg.det", lambda m, a, d: m.linalg.det(a.s)),
    ("linalg.diagonal", lambda m, a, d: m.linalg.diagonal(a.s, offset=1)),
    ("linalg.eigvalsh", lambda m, a, d: m.linalg.eigvalsh(a.s)),
    ("linalg.eigvals", lambda m, a, d: m.sort(m.real(m.linalg.eigvals(a.s)))),
    ("linalg.eigh", "decomposition"),
    ("linalg.eig", "decomposition"),
    ("linalg.qr", "decomposition"),
    ("linalg.svd", "decomposition"),
    ("linalg.inv", lambda m, a, d: m.linalg.inv(a.s)),
    ("linalg.matmul", lambda m, a, d: m.linalg.matmul(a.s, a.x)),
    ("linalg.matrix_norm", lambda m, a, d: m.linalg.matrix_norm(a.x)),
    ("linalg.matrix_norm", lambda m, a, d: m.linalg.matrix_norm(a.s, ord=1)),
    ("linalg.matrix_power", lambda m, a, d: m.linalg.matrix_power(a.s, 3)),
    ("linalg.matrix_rank", lambda m, a, d: m.linalg.matrix_rank(a.x)),
    ("linalg.matrix_transpose", lambda m, a, d: m.linalg.matrix_transpose(a.x)),
    ("linalg.outer", lambda m, a, d: m.linalg.outer(a.v, a.idx)),
    ("linalg.pinv", lambda m, a, d: m.linalg.pinv(a.x)),
    ("linalg.slogdet", lambda m, a, d: m.linalg.slogdet(a.s)),
    ("linalg.solve", lambda m, a, d: m.linalg.solve(a.s, a.x)),
    ("linalg.svdvals", lambda m, a, d: m.linalg.svdvals(a.x)),
    ("linalg.tensordot", lambda m, a, d: m.linalg.tensordot(a.x, a.y, axes=([1], [1]))),
    ("linalg.trace", lambda m, a, d: m.linalg.trace(a.s)),
    ("linalg.vecdot", lambda m, a, d: m.linalg.vecdot(a.x, a.y, axis=-2)),
    ("linalg.vector_norm", lambda m, a, d: m.linalg.vector_norm(a.x, axis=1)),
    ("linalg.vector_norm", lambda m, a, d: m.linalg.vector_norm(a.x, ord=m.inf)),
    ("linalg.vector_norm", lambda m, a, d: m.linalg.vector_norm(a.x, axis=0, ord=1)),
    # --- fft ---
    *((f"fft.{n}", _call(f"fft.{n}", "z", axis=axis)) for n in ("fft", "ifft") for axis in (0, 1)),
    ("fft.fftn", lambda m, a, d: m.fft.fftn(a.z)),
    ("fft.ifftn", lambda m, a, d: m.fft.ifftn(a.z, axes=(0,))),
    ("fft.rfft", lambda m, a, d: m.fft.rfft(a.x, axis=0)),
    ("fft.irfft", lambda m, a, d: m.fft.irfft(a.z, axis=1)),
    ("fft.rfftn", lambda m, a, d: m.fft.rfftn(a.x)),
    ("fft.irfftn", lambda m, a, d: m.fft.irfftn(a.z)),
    ("fft.hfft", lambda m, a, d: m.fft.hfft(a.z, axis=0)),
    ("fft.ihfft", lambda m, a, d: m.fft.ihfft(a.x)),
    ("fft.fftfreq", lambda m, a, d: m.fft.fftfreq(8, d=0.5, **d, **_f64(m))),
    ("fft.rfftfreq", lambda m, a, d: m.fft.rfftfreq(8, **d, **_f64(m))),
    ("fft.fftshift", lambda m, a, d: m.fft.fftshift(a.x)),
    ("fft.ifftshift", lambda m, a, d: m.fft.ifftshift(a.x, axes=0)),
]

# Cases that may raise TypeError/ValueError on sharded input instead of computing (none today).
MAY_RAISE: set[str] = set()
DECOMPOSITIONS = {"linalg.eigh", "linalg.eig", "linalg.qr", "linalg.svd"}


def public_functions() -> set[str]:
    names = {
        n
        for n in dir(xp)
        if not n.startswith("_") and callable(getattr(xp, n)) and not isinstance(getattr(xp, n), type)
    }
    return names | {f"linalg.{n}" for n in xp.linalg.__all__} | {f"fft.{n}" for n in xp.fft.__all__}


def test_every_public_function_has_a_case():
    missing = public_functions() - {name for name, _ in CASES} - _namespace._NO_ARRAYS
    assert not missing, f"add sharded cases for {sorted(missing)}"


# --- the sweep ---

VARIANTS = ("rows", "cols", "pending", "mixed", "grid", "grid-pending")
# the grid variants run on a 2x2 mesh of 4 ranks: rows over its first dimension and columns over its second, or
# every rank holding a summand over the second dimension
GRID = (2, 2)


def _world(variant: str) -> int:
    return 4 if variant.startswith("grid") else WORLD


def _mesh(variant: str) -> Any:
    return td.mesh(GRID) if variant.startswith("grid") else td.default_mesh()


def _sharded_inputs(variant: str, rank: int) -> types.SimpleNamespace:
    mesh = _mesh(variant)
    out = {}
    for name, a in INPUTS.items():
        x = xp.asarray(a)
        if variant == "grid":
            out[name] = td.shard(x, (0, 1) if x.ndim > 1 else (0, None), mesh)
        elif variant == "grid-pending":
            if a.dtype == bool:
                out[name] = td.shard(x, (0, None), mesh)
                continue
            # the first column of ranks holds a - c, the second c: the summands add up to a exactly
            c = xp.asarray(np.ones_like(a) * (3 if a.dtype.kind in "iu" else 0.25))
            out[name] = td.from_local(x - c if mesh.get_coordinate()[1] == 0 else c, (None, "sum"), mesh)
        elif variant == "pending" and a.dtype != bool:
            # rank 0 holds a - (WORLD - 1) c, the others c: the summands add up to a exactly
            c = xp.asarray(np.ones_like(a) * (3 if a.dtype.kind in "iu" else 0.25))
            out[name] = td.from_local(x - (WORLD - 1) * c if rank == 0 else c, None, mesh, pending=True)
        elif variant == "mixed" and name not in ("x", "s", "i", "b", "z", "u"):
            out[name] = x
        else:
            out[name] = td.shard(x, 1 if variant == "cols" and x.ndim > 1 else 0, mesh)
    return types.SimpleNamespace(**out)


def _sharding(variant: str) -> dict:
    mesh = _mesh(variant)
    if variant.startswith("grid"):
        return {"device": td.Sharding(mesh, (0, None) if variant == "grid" else (None, "sum"))}
    return {"device": td.Sharding(mesh, None if variant == "pending" else 0, variant == "pending")}


def _numpy(result: Any) -> Any:
    """A result with every array gathered to NumPy (collective: every rank calls it in the same order)."""
    if isinstance(result, xp.NeuronArray):
        return np.asarray(result)
    if isinstance(result, (tuple, list)):
        return [_numpy(r) for r in result]
    return result


def _decomposition(name: str, a: Any) -> Any:
    """The factors of a decomposition multiplied back (their signs and order are not unique)."""
    m = xp if isinstance(a.s, xp.NeuronArray) else np
    if name == "linalg.eigh":
        w, q = m.linalg.eigh(a.s)
        return m.matmul(q * w, m.matrix_transpose(q))
    if name == "linalg.eig":
        w, q = m.linalg.eig(a.s)
        return m.real(m.matmul(q * w, m.linalg.inv(q)))
    if name == "linalg.qr":
        q, r = m.linalg.qr(a.x)
        return m.matmul(q, r)
    u, s, vt = m.linalg.svd(a.x, full_matrices=False)
    return m.matmul(u * s, vt)


def _outcomes(variant: str, rank: int) -> list[tuple[str, str, Any]]:
    a = _sharded_inputs(variant, rank)
    dev = _sharding(variant)
    out = []
    for name, case in CASES:
        try:
            r = _decomposition(name, a) if name in DECOMPOSITIONS else case(xp, a, dev)
            kind = (
                type(r).__name__
                if not isinstance(r, (tuple, list))
                else ",".join(sorted({type(e).__name__ for e in r}))
            )
            out.append((name, kind, _numpy(r)))
        except (TypeError, ValueError) as e:
            out.append((name, "raised", f"{type(e).__name__}: {e}"))
    return out


def _reference() -> list[Any]:
    a = types.SimpleNamespace(**INPUTS)
    ref = []
    for name, case in CASES:
        r = _decomposition(name, a) if name in DECOMPOSITIONS else case(np, a, {})
        ref.append(
            [np.asarray(e) for e in r]
            if isinstance(r, (tuple, list))
            and not isinstance(r, tuple)
            or (isinstance(r, tuple) and r and isinstance(r[0], np.ndarray))
            else r
        )
    return ref


def _same(got: Any, want: Any) -> bool:
    if isinstance(want, (list, tuple)) and not isinstance(want, np.ndarray):
        return isinstance(got, list) and len(got) == len(want) and all(map(_same, got, want))
    if not isinstance(want, (np.ndarray, np.generic)) or not isinstance(got, (np.ndarray, np.generic)):
        return got == want
    want = np.asarray(want)
    if not isinstance(got, np.ndarray) or got.dtype != want.dtype or got.shape != want.shape:
        return False
    if want.dtype.kind in "fc":
        return np.allclose(got, want, rtol=1e-9, atol=1e-12, equal_nan=True)
    return np.array_equal(got, want)


@pytest.mark.heavy
@pytest.mark.parametrize("variant", VARIANTS)
def test_namespace_on_sharded_arrays(variant):
    before = _dispatch.GATHERED_CALLS.copy()
    ranks = spmd(_world(variant), lambda rank: _outcomes(variant, rank), timeout=180)
    reference = _reference()
    wrong, raised, plain = [], [], []
    for (name, kind, got), want in zip(ranks[0], reference, strict=True):
        if kind == "raised":
            raised.append(f"{name}: {got}")
        elif not _same(got, want):
            wrong.append(f"{name}: got {got!r}, want {want!r}")
        elif variant != "mixed" and "NeuronArray" in kind.split(","):
            plain.append(name)  # a sharded input gave a plain result (mixed cases may have plain inputs only)
    for other in ranks[1:]:  # every rank sees the same values
        assert [(n, k) for n, k, _ in other] == [(n, k) for n, k, _ in ranks[0]]
    assert not wrong, "\n".join(wrong)
    assert {r.split(":")[0] for r in raised} <= MAY_RAISE, "\n".join(raised)
    assert not plain, f"plain results from sharded inputs: {plain}"
    gathered = _dispatch.GATHERED_CALLS - before
    print(f"{variant}: {sum(gathered.values())} calls ran on whole arrays: {sorted(gathered)}")


ELEMENTWISE_UNARY = ("sin", "exp", "abs", "sqrt", "log1p", "tanh", "isnan", "floor", "negative", "sign")


@pytest.mark.parametrize("axis", [0, 1])
def test_elementwise_functions_stay_partitioned_without_communication(axis):
    from torch.distributed.tensor.debug import CommDebugMode

    def body(rank: int) -> list[tuple[str, object, int]]:
        x = td.shard(xp.asarray(INPUTS["x"]), axis)
        y = td.shard(xp.asarray(INPUTS["y"]), axis)
        out = []
        for name in ELEMENTWISE_UNARY:
            with CommDebugMode() as comm:
                r = getattr(xp, name)(x)
            out.append((name, r.device.axis, comm.get_total_counts()))
        for name in ("add", "multiply", "atan2", "maximum", "less"):
            with CommDebugMode() as comm:
                r = getattr(xp, name)(x, y)
            out.append((name, r.device.axis, comm.get_total_counts()))
        with CommDebugMode() as comm:
            r = xp.multiply(x, 2.0) + xp.asarray(INPUTS["y"])  # plain arrays count as replicated
        out.append(("mixed", r.device.axis, comm.get_total_counts()))
        return out

    before = _dispatch.GATHERED_CALLS.copy()
    for name, got_axis, comms in spmd(WORLD, body)[0]:
        assert (name, got_axis, comms) == (name, axis, 0)
    assert _dispatch.GATHERED_CALLS == before


def test_reductions_along_and_across_the_partition():
    from torch.distributed.tensor.debug import CommDebugMode

    def body(rank: int) -> list[Any]:
        x = td.shard(xp.asarray(INPUTS["x"]), 0)
        with CommDebugMode() as comm:
            across = xp.sum(x, axis=1)  # each rank sums its own rows
        with CommDebugMode() as comm2:
            along = xp.sum(x, axis=0)  # partial sums: a pending sum, no communication yet
        return [
            across.device.axis,
            comm.get_total_counts(),
            along.device.pending,
            comm2.get_total_counts(),
            np.asarray(across),
            np.asarray(along),
        ]

    across_axis, c1, pending, c2, across, along = spmd(WORLD, body)[0]
    assert (across_axis, c1, pending, c2) == (0, 0, True, 0)
    np.testing.assert_allclose(across, INPUTS["x"].sum(axis=1))
    np.testing.assert_allclose(along, INPUTS["x"].sum(axis=0))
