"""Benchmark: real einsum workloads, one or two per family of the Einsum Benchmark, on every backend, same path.

Each instance is an einsum expression from the ``einsum_benchmark`` generators (or a quimb tensor network) with
data; ONE contraction path per instance (opt_einsum's ``optimize="greedy"``, deterministic) is computed once and
given to every backend, so the backends differ only in how they run the same binary steps:

- ``torch``: ``opt_einsum.contract(eq, *tensors, optimize=path, backend="torch")``, the baseline (ratio 1);
- ``trn``: the same call on NeuronArrays (``trn_backend.asarray(tensor)``, no copy) with ``backend="trn"``;
- ``trn_expr``: ``trn_backend.contract_expression(eq, *shapes, optimize=path)`` (built once) on NeuronArrays;
- ``oe_expr``: ``opt_einsum.contract_expression(eq, *shapes, optimize=path)`` (built once), ``backend="torch"``;
- ``ctg_torch``: cotengra's ``einsum_expression(eq, *shapes, optimize=path)`` (built once; cotengra's default
  implementation, which for torch and trn_backend arrays calls the backend's own ``tensordot`` and ``einsum``
  through autoray) on the torch tensors;
- ``ctg_trn``: the same cotengra expression on the NeuronArrays (autoray dispatches them to trn_backend);
- ``numpy``: ``opt_einsum.contract(..., backend="numpy")`` on the same buffers as NumPy arrays.

The instances (``--quick``: smaller ones, a subset of families, for a smoke run):

- matrix_chain: a chain of 16 matrices, sides drawn in [100, 800] (float32).
- tree: a random tree of 150 tensors, bonds of 4 to 10, two open indices (float64).
- lattice: a 10 x 10 open square lattice, bonds of 2 or 3, contracted to a scalar (float32).
- random_network: a random connected network of 50 tensors, regularity 3, axes of 2 to 5, two open indices
  (float32).
- random_hypernetwork: 40 tensors, regularity 3, hyperedges shared by up to 3 tensors, tensors of order up to 8,
  axes of 2 to 4, three open indices (float64).
- random_regular: a random 3-regular graph of 80 tensors, bonds of 2 to 4, a scalar (float32).
- mps: the inner product of two matrix product states of 40 sites, bond 32, physical dimensions 8 to 32
  (complex64).
- mera: the language model's MERA networks: p(first, last) of depth 2 (hidden 8, observables 24; float32), and
  the likelihood of a batch of 200 sliding windows at depth 1 (hidden 6, observables 32; float32).
- qaoa: the QAOA MaxCut amplitude network of a 20-node 3-regular graph at p=3, as quimb builds it, unsimplified
  (complex128, quimb's dtype).
- circuit: quimb amplitudes of random circuits (U3 layers, CZ on random pairs): 16 qubits x 10 layers after
  quimb's default simplifications (complex64), and 12 qubits x 8 layers unsimplified, 204 tensors (complex128).
- peps: the norm network <psi|psi> of a random 5 x 5 PEPS of bond 3 (quimb's ``PEPS.rand``; float64, quimb's
  dtype).

``--heldout``: a second instance set, with other seeds and larger sizes, kept apart from the one above (which
tuning looks at) to check that a speed-up carries over to workloads it was not tuned on:

- lattice3d: open 3-D lattices contracted to a scalar: 4 x 4 x 4 with bonds of 2 (float32), 4 x 4 x 3 with bonds
  of 2 or 3 (float64). Greedy paths on 3-D lattices make intermediates of 1e8 to 1e9 elements, so these two take
  their path from opt_einsum's random-greedy with 128 trials (trial r seeded with r; the script re-runs itself
  with PYTHONHASHSEED=0, so the path is the same on every run).
- mps_bond128: the inner product of two MPS of 20 sites, bond 128, physical dimensions 2 to 4 (complex128).
- qaoa: QAOA MaxCut of a 24-node 3-regular graph at p=2 (graph seed 7, angles quimb.seed_rand(7); complex128).
- circuit: quimb amplitudes of random circuits (seeds 11 and 12): 18 qubits x 10 layers simplified, and 13
  qubits x 10 layers unsimplified (both complex128).
- peps: PEPS norms, 4 x 5 of bond 3 and 4 x 4 of bond 4 (``PEPS.rand(..., seed=7)``; float64).
- random_hypernetwork: as above with 45 tensors (seed 13) and 50 tensors (seed 12) (float64).
- outer: contractions whose steps are outer products: 'abc,abd,abe->abcde' (a Hadamard product over a, b with an
  outer product over c, d, e; float64); 'ab,cd,bd,ac->' on an explicit path whose first step is the outer product
  ab,cd->abcd (sides 40, float32); and a network of two disconnected random networks with two open indices each,
  whose last step is the outer product of the two (float64).

Generated operands are standard normal (real and imaginary parts for complex dtypes), each tensor scaled by
d**(-1/(2c)) per contracted index of size d shared by c operands, so random-sign growth cancels and the results
stay in range; quimb's networks keep quimb's data. Before timing, each backend's result is compared with the
torch backend's (norm-wise relative difference) and with a double-precision torch contraction on the same path
(the reference); a backend whose error against the reference exceeds max(1000 eps, 10 x the torch backend's own
error) is reported as disagreeing. A backend that raises is recorded with its error and left out of the timing.

All backends run in one process, interleaved: each repetition runs every backend once (rotating their order,
after a warm-up call each), idle BLAS/OpenMP threads set to sleep (see below). Times are medians; ratios are
medians of per-repetition ratios (robust to load changes on a shared machine), against torch and, for trn_expr
and ctg_trn, against ctg_torch. Summary: geometric means of the ratios (all instances, real ones, complex ones)
and the largest ratio. The JSON in benchmarks/results/ keeps every sample. A measurement, not a test.

    python benchmarks/bench_families.py [--reps 11] [--only mps,peps] [--quick] [--heldout] [--no-numpy]
                                        [--out benchmarks/results/bench_families.json]

(``--heldout`` writes benchmarks/results/bench_families_heldout.json unless ``--out`` says otherwise.)
"""

from __future__ import annotations

import os

# Idle BLAS/OpenMP threads spin for a while after each call; on a small shared machine they then steal the cores
# from the next backend's call. Make idle threads sleep at once (set before numpy and torch load their pools).
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import collections
import hashlib
import importlib.metadata
import math
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import cotengra as ctg
import einsum_benchmark.generators as gen
import numpy as np
import opt_einsum as oe
import quimb
import quimb.tensor as qtn
import torch
from _results import fixed_hash_seed, interleaved_ms, run_metadata, save

import trn_backend as xp

RESULTS = Path(__file__).parent / "results"
BACKENDS = ("torch", "trn", "trn_expr", "oe_expr", "ctg_torch", "ctg_trn", "numpy")
# the ratios besides "<backend> / torch": trn_backend's expression and cotengra-on-trn against cotengra on torch
PAIRS = (("trn_expr", "ctg_torch"), ("ctg_trn", "ctg_torch"))
FAMILIES = (
    "matrix_chain",
    "tree",
    "lattice",
    "random_network",
    "random_hypernetwork",
    "random_regular",
    "mps",
    "mera",
    "qaoa",
    "circuit",
    "peps",
)
HELDOUT_FAMILIES = ("lattice3d", "mps_bond128", "qaoa", "circuit", "peps", "random_hypernetwork", "outer")
PATH_SOURCE = "opt_einsum greedy"
RANDOM_GREEDY_SOURCE = "opt_einsum random-greedy, 128 trials (trial r seeded with r)"
SAMPLE_S = 0.02  # calls shorter than this are repeated within a sample, so each sample lasts about this long


# ---------------------------------------------------------------------------------------------------- instances


def _operands(eq: str, shapes: list[tuple[int, ...]], dtype: str, seed: int) -> list[np.ndarray]:
    """Standard normal data, each tensor scaled by d**(-1/(2c)) for each contracted index of size d that c
    operands share (so a bond's sum of d random-sign terms, split between its two ends, contributes O(1))."""
    inputs, output = eq.split("->")
    terms = inputs.split(",")
    count = collections.Counter(ix for term in terms for ix in term)
    rng = np.random.default_rng(seed)
    arrays = []
    for term, shape in zip(terms, shapes, strict=True):
        a = rng.standard_normal(shape)
        if "complex" in dtype:
            a = (a + 1j * rng.standard_normal(shape)) / math.sqrt(2)
        scale = math.prod(d ** (-1 / (2 * count[ix])) for ix, d in zip(term, shape, strict=True) if ix not in output)
        arrays.append((a * scale).astype(dtype))
    return arrays


def _generated(family: str, name: str, eq: str, shapes: object, dtype: str, params: str, seed: int = 0) -> dict:
    shapes = [tuple(int(d) for d in s) for s in shapes]
    return dict(
        family=family,
        name=name,
        eq=eq,
        arrays=_operands(eq, shapes, dtype, seed=seed),
        dtype=dtype,
        source=f"einsum_benchmark.generators.{params}",
        data=f"standard normal (seed {seed}), scaled per contracted index",
    )


def _from_quimb(family: str, name: str, tn: qtn.TensorNetwork, source: str) -> dict:
    """A quimb network as (eq, arrays): its indices renamed to single characters in order of appearance."""
    inputs, output, _ = tn.get_inputs_output_size_dict()
    symbols: dict[str, str] = {}
    for ix in (ix for term in (*inputs, output) for ix in term):
        symbols.setdefault(ix, oe.get_symbol(len(symbols)))
    eq = ",".join("".join(symbols[ix] for ix in term) for term in inputs) + "->" + "".join(map(symbols.get, output))
    arrays = [np.ascontiguousarray(a) for a in tn.arrays]
    return dict(
        family=family, name=name, eq=eq, arrays=arrays, dtype=str(arrays[0].dtype), source=source, data="quimb's own"
    )


def _circuit(qubits: int, layers: int, simplify: str, dtype: str, seed: int) -> qtn.TensorNetwork:
    """The amplitude <0...0|C|0> network of a random circuit: per layer a U3 of random angles on every qubit,
    then CZ on disjoint random pairs."""
    circ = qtn.Circuit(qubits)
    rng = np.random.default_rng(seed)
    for _ in range(layers):
        for q in range(qubits):
            circ.apply_gate("U3", *rng.uniform(0, 2 * np.pi, 3), q)
        pairs = rng.permutation(qubits)
        for i in range(0, qubits - 1, 2):
            circ.apply_gate("CZ", int(pairs[i]), int(pairs[i + 1]))
    return circ.amplitude_tn("0" * qubits, simplify_sequence=simplify, dtype=dtype)


def _family(family: str, quick: bool) -> list[dict]:
    """The instances of one family (``quick``: one small instance)."""
    g = gen
    if family == "matrix_chain":
        n, hi = (6, 200) if quick else (16, 800)
        eq, shapes = g.structured.matrix_chain(num_matrices=n, min_dim=100, max_dim=hi, seed=0)
        return [
            _generated(
                family,
                f"chain of {n}, sides 100-{hi}",
                eq,
                shapes,
                "float32",
                f"structured.matrix_chain(num_matrices={n}, min_dim=100, max_dim={hi}, seed=0)",
            )
        ]
    if family == "tree":
        n = 30 if quick else 150
        eq, shapes = g.structured.tree(n=n, d_min=4, d_max=10, n_outer=2, seed=1)
        return [
            _generated(
                family,
                f"tree of {n}, bonds 4-10",
                eq,
                shapes,
                "float64",
                f"structured.tree(n={n}, d_min=4, d_max=10, n_outer=2, seed=1)",
            )
        ]
    if family == "lattice":
        side = 4 if quick else 10
        eq, shapes = g.structured.lattice((side, side), d_min=2, d_max=3, seed=1)
        return [
            _generated(
                family,
                f"{side}x{side} lattice, bonds 2-3",
                eq,
                shapes,
                "float32",
                f"structured.lattice(({side}, {side}), d_min=2, d_max=3, seed=1)",
            )
        ]
    if family == "random_network":
        n = 20 if quick else 50
        eq, shapes = g.random.connected_network(
            n, 3.0, number_of_output_indices=2, min_axis_size=2, max_axis_size=5, seed=1
        )
        return [
            _generated(
                family,
                f"network of {n}, regularity 3, axes 2-5",
                eq,
                shapes,
                "float32",
                f"random.connected_network({n}, 3.0, number_of_output_indices=2, min_axis_size=2, "
                f"max_axis_size=5, seed=1)",
            )
        ]
    if family == "random_hypernetwork":
        n = 15 if quick else 40
        eq, shapes = g.random.connected_hypernetwork(
            n,
            3.0,
            max_tensor_order=8,
            max_edge_order=3,
            number_of_output_indices=3,
            min_axis_size=2,
            max_axis_size=4,
            seed=1,
        )
        return [
            _generated(
                family,
                f"hypernetwork of {n}, edges of order <= 3",
                eq,
                shapes,
                "float64",
                f"random.connected_hypernetwork({n}, 3.0, max_tensor_order=8, max_edge_order=3, "
                f"number_of_output_indices=3, min_axis_size=2, max_axis_size=4, seed=1)",
            )
        ]
    if family == "random_regular":
        n = 20 if quick else 80
        eq, shapes = g.random.regular(n, 3, d_min=2, d_max=4, seed=1)
        return [
            _generated(
                family,
                f"3-regular graph of {n}, bonds 2-4",
                eq,
                shapes,
                "float32",
                f"random.regular({n}, 3, d_min=2, d_max=4, seed=1)",
            )
        ]
    if family == "mps":
        n, bond = (10, 8) if quick else (40, 32)
        eq, shapes = g.quantum_computing.matrix_product_state(
            n=n, phys_dim_min=8, phys_dim_max=32, bond_dim=bond, seed=0
        )
        return [
            _generated(
                family,
                f"MPS inner product, {n} sites, bond {bond}",
                eq,
                shapes,
                "complex64",
                f"quantum_computing.matrix_product_state(n={n}, phys_dim_min=8, phys_dim_max=32, "
                f"bond_dim={bond}, seed=0)",
            )
        ]
    if family == "mera":
        if quick:
            eq, shapes = g.language_model.p_first_and_last(mera_depth=1, axis_size_hidden=4, axis_size_observable=8)
            return [
                _generated(
                    family,
                    "MERA p(first, last), depth 1",
                    eq,
                    shapes,
                    "float32",
                    "language_model.p_first_and_last(mera_depth=1, axis_size_hidden=4, axis_size_observable=8)",
                )
            ]
        eq, shapes = g.language_model.p_first_and_last(mera_depth=2, axis_size_hidden=8, axis_size_observable=24)
        eq2, shapes2 = g.language_model.sliding_likelihood(
            mera_depth=1, axis_size_hidden=6, axis_size_observable=32, batch_size=200
        )
        return [
            _generated(
                family,
                "MERA p(first, last), depth 2",
                eq,
                shapes,
                "float32",
                "language_model.p_first_and_last(mera_depth=2, axis_size_hidden=8, axis_size_observable=24)",
            ),
            _generated(
                family,
                "MERA sliding likelihood, batch 200",
                eq2,
                shapes2,
                "float32",
                "language_model.sliding_likelihood(mera_depth=1, axis_size_hidden=6, "
                "axis_size_observable=32, batch_size=200)",
            ),
        ]
    if family == "qaoa":
        n, p = (8, 1) if quick else (20, 3)
        quimb.seed_rand(1)  # the generator draws the QAOA angles from quimb's global generator
        eq, arrays = g.quantum_computing.maxcut(n=n, reg=3, p=p, seed=1)
        arrays = [np.ascontiguousarray(a) for a in arrays]
        return [
            dict(
                family=family,
                name=f"QAOA MaxCut, {n} nodes, p={p}",
                eq=eq,
                arrays=arrays,
                dtype=str(arrays[0].dtype),
                data="quimb's own (angles: quimb.seed_rand(1))",
                source=f"einsum_benchmark.generators.quantum_computing.maxcut(n={n}, reg=3, p={p}, seed=1)",
            )
        ]
    if family == "circuit":
        if quick:
            return [
                _from_quimb(
                    family,
                    "circuit 8 qubits x 4 layers",
                    _circuit(8, 4, "ADCRS", "complex64", 1),
                    "quimb Circuit(8), 4 random layers, amplitude_tn('0' * 8, dtype='complex64')",
                )
            ]
        return [
            _from_quimb(
                family,
                "circuit 16 qubits x 10 layers, simplified",
                _circuit(16, 10, "ADCRS", "complex64", 1),
                "quimb Circuit(16), 10 random layers, amplitude_tn('0' * 16, dtype='complex64')",
            ),
            _from_quimb(
                family,
                "circuit 12 qubits x 8 layers, raw",
                _circuit(12, 8, "", "complex128", 1),
                "quimb Circuit(12), 8 random layers, amplitude_tn('0' * 12, simplify_sequence='', dtype='complex128')",
            ),
        ]
    if family == "peps":
        side, bond = (3, 2) if quick else (5, 3)
        peps = qtn.PEPS.rand(side, side, bond_dim=bond, seed=1, dtype="float64")
        return [
            _from_quimb(
                family,
                f"PEPS norm {side}x{side}, bond {bond}",
                peps.make_norm(),
                f"quimb PEPS.rand({side}, {side}, bond_dim={bond}, seed=1).make_norm()",
            )
        ]
    raise ValueError(f"unknown family {family!r}")


def _disconnected(seed_a: int, seed_b: int, n: int) -> tuple[str, list[tuple[int, ...]]]:
    """Two random connected networks of ``n`` tensors each, two open indices each, on disjoint indices: one
    disconnected network whose output is the outer product of the two networks' outputs."""
    eqs = [
        gen.random.connected_network(n, 3.0, number_of_output_indices=2, min_axis_size=2, max_axis_size=5, seed=seed)
        for seed in (seed_a, seed_b)
    ]
    (eq_a, shapes_a), (eq_b, shapes_b) = eqs
    used = {ix for ix in eq_a if ix not in ",->"}
    symbols: dict[str, str] = {}
    fresh = (oe.get_symbol(i) for i in range(10**6))
    for ix in (ix for ix in eq_b if ix not in ",->"):
        if ix not in symbols:
            symbols[ix] = next(c for c in fresh if c not in used)
    eq_b = "".join(symbols.get(c, c) for c in eq_b)
    (in_a, out_a), (in_b, out_b) = eq_a.split("->"), eq_b.split("->")
    return f"{in_a},{in_b}->{out_a}{out_b}", [*shapes_a, *shapes_b]


def _heldout(family: str) -> list[dict]:
    """The held-out instances of one family: other seeds and larger sizes than ``_family``'s."""
    g = gen
    if family == "lattice3d":
        out = []
        for dims, d_max, dtype in (((4, 4, 4), 2, "float32"), ((4, 4, 3), 3, "float64")):
            eq, shapes = g.structured.lattice(dims, d_min=2, d_max=d_max, seed=7)
            side = "x".join(map(str, dims))
            inst = _generated(
                family,
                f"{side} lattice, bonds 2-{d_max}",
                eq,
                shapes,
                dtype,
                f"structured.lattice({dims}, d_min=2, d_max={d_max}, seed=7)",
                seed=7,
            )
            out.append(
                dict(inst, optimize=oe.path_random.RandomGreedy(max_repeats=128), path_source=RANDOM_GREEDY_SOURCE)
            )
        return out
    if family == "mps_bond128":
        eq, shapes = g.quantum_computing.matrix_product_state(
            n=20, phys_dim_min=2, phys_dim_max=4, bond_dim=128, seed=5
        )
        return [
            _generated(
                family,
                "MPS inner product, 20 sites, bond 128",
                eq,
                shapes,
                "complex128",
                "quantum_computing.matrix_product_state(n=20, phys_dim_min=2, phys_dim_max=4, bond_dim=128, seed=5)",
                seed=5,
            )
        ]
    if family == "qaoa":
        quimb.seed_rand(7)
        eq, arrays = g.quantum_computing.maxcut(n=24, reg=3, p=2, seed=7)
        arrays = [np.ascontiguousarray(a) for a in arrays]
        return [
            dict(
                family=family,
                name="QAOA MaxCut, 24 nodes, p=2",
                eq=eq,
                arrays=arrays,
                dtype=str(arrays[0].dtype),
                data="quimb's own (angles: quimb.seed_rand(7))",
                source="einsum_benchmark.generators.quantum_computing.maxcut(n=24, reg=3, p=2, seed=7)",
            )
        ]
    if family == "circuit":
        return [
            _from_quimb(
                family,
                "circuit 18 qubits x 10 layers, simplified",
                _circuit(18, 10, "ADCRS", "complex128", 11),
                "quimb Circuit(18), 10 random layers (seed 11), amplitude_tn('0' * 18, dtype='complex128')",
            ),
            _from_quimb(
                family,
                "circuit 13 qubits x 10 layers, raw",
                _circuit(13, 10, "", "complex128", 12),
                "quimb Circuit(13), 10 random layers (seed 12), amplitude_tn('0' * 13, "
                "simplify_sequence='', dtype='complex128')",
            ),
        ]
    if family == "peps":
        return [
            _from_quimb(
                family,
                f"PEPS norm {rows}x{cols}, bond {bond}",
                qtn.PEPS.rand(rows, cols, bond_dim=bond, seed=7, dtype="float64").make_norm(),
                f"quimb PEPS.rand({rows}, {cols}, bond_dim={bond}, seed=7).make_norm()",
            )
            for rows, cols, bond in ((4, 5, 3), (4, 4, 4))
        ]
    if family == "random_hypernetwork":
        out = []
        for n, seed in ((45, 13), (50, 12)):
            eq, shapes = g.random.connected_hypernetwork(
                n,
                3.0,
                max_tensor_order=8,
                max_edge_order=3,
                number_of_output_indices=3,
                min_axis_size=2,
                max_axis_size=4,
                seed=seed,
            )
            out.append(
                _generated(
                    family,
                    f"hypernetwork of {n} (seed {seed}), edges of order <= 3",
                    eq,
                    shapes,
                    "float64",
                    f"random.connected_hypernetwork({n}, 3.0, max_tensor_order=8, "
                    f"max_edge_order=3, number_of_output_indices=3, min_axis_size=2, max_axis_size=4, "
                    f"seed={seed})",
                    seed=seed,
                )
            )
        return out
    if family == "outer":
        eq = "abc,abd,abe->abcde"
        shapes = [(16, 16, 10)] * 3
        hadamard = dict(
            family=family,
            name="Hadamard over ab, outer over c,d,e",
            eq=eq,
            arrays=_operands(eq, shapes, "float64", seed=17),
            dtype="float64",
            source=f"{eq!r}, shapes {shapes}",
            data="standard normal (seed 17)",
        )
        eq = "ab,cd,bd,ac->"
        square = dict(
            family=family,
            name="'ab,cd,bd,ac->', outer product first, sides 40",
            eq=eq,
            arrays=_operands(eq, [(40, 40)] * 4, "float32", seed=18),
            dtype="float32",
            source=f"{eq!r}, sides 40",
            data="standard normal (seed 18), scaled per contracted index",
            optimize=[(0, 1), (0, 1), (0, 1)],
            path_source="explicit: ab,cd->abcd (an outer product), then abcd,bd->ac, then ac,ac->",
        )
        eq, shapes = _disconnected(21, 22, 20)
        disjoint = _generated(
            family,
            "two disconnected networks of 20, outer product last",
            eq,
            shapes,
            "float64",
            "random.connected_network(20, 3.0, number_of_output_indices=2, min_axis_size=2, "
            "max_axis_size=5, seed=21 and seed=22) on disjoint indices, outputs concatenated",
            seed=19,
        )
        return [hadamard, square, disjoint]
    raise ValueError(f"unknown held-out family {family!r}")


def instances(families: tuple[str, ...], quick: bool, heldout: bool = False) -> list[dict]:
    if heldout:
        return [inst for family in families for inst in _heldout(family)]
    return [inst for family in families for inst in _family(family, quick)]


# ---------------------------------------------------------------------------------------------------- measuring


def _callables(eq: str, path: list, arrays: list[np.ndarray], backends: tuple[str, ...]) -> dict[str, Callable]:
    """Per backend, a call contracting the instance's data on the path (expressions built here, outside timing)."""
    shapes = [a.shape for a in arrays]
    tensors = [torch.from_numpy(a) for a in arrays]
    neuron = [xp.asarray(t) for t in tensors]
    oe_expr = oe.contract_expression(eq, *shapes, optimize=path)
    trn_expr = xp.contract_expression(eq, *shapes, optimize=path)
    ctg_expr = ctg.einsum_expression(eq, *shapes, optimize=tuple(map(tuple, path)))
    calls = {
        "torch": lambda: oe.contract(eq, *tensors, optimize=path, backend="torch"),
        "trn": lambda: oe.contract(eq, *neuron, optimize=path, backend="trn"),
        "trn_expr": lambda: trn_expr(*neuron),
        "oe_expr": lambda: oe_expr(*tensors, backend="torch"),
        "ctg_torch": lambda: ctg_expr(*tensors),
        "ctg_trn": lambda: ctg_expr(*neuron),
        "numpy": lambda: oe.contract(eq, *arrays, optimize=path, backend="numpy"),
    }
    return {b: calls[b] for b in backends}


def _wide(arrays: list[np.ndarray]) -> list[torch.Tensor]:
    return [torch.from_numpy(a.astype(np.complex128 if np.iscomplexobj(a) else np.float64)) for a in arrays]


def _rel(x: np.ndarray, ref: np.ndarray) -> float:
    """Norm-wise relative difference ||x - ref|| / ||ref|| (in float64/complex128)."""
    return float(np.linalg.norm((x - ref).ravel()) / max(np.linalg.norm(ref.ravel()), 1e-300))


def _check(inst: dict, path: list, calls: dict[str, Callable]) -> tuple[dict, dict]:
    """Run every backend once: (per backend its error record or None, the check record). A backend that raises
    is recorded and dropped from ``calls``."""
    ref = np.asarray(oe.contract(inst["eq"], *_wide(inst["arrays"]), optimize=path, backend="torch"))
    results, errors = {}, {}
    for b in list(calls):
        try:
            results[b] = calls[b]()
        except Exception as e:  # any failure of a backend is a finding to record, not to raise
            errors[b] = f"{type(e).__name__}: {e}"
            del calls[b]
    wide = {b: np.asarray(r).astype(ref.dtype) for b, r in results.items()}
    eps = float(np.finfo(inst["arrays"][0].dtype).eps)
    torch_err = _rel(wide["torch"], ref) if "torch" in wide else float("nan")
    limit = max(1000 * eps, 10 * torch_err)
    check = {
        "reference": "torch backend in float64/complex128 on the same path",
        "eps": eps,
        "limit_vs_reference": limit,
        "reference_abs_max": float(np.abs(ref).max(initial=0.0)),
        "rel_err_vs_torch": {},
        "rel_err_vs_reference": {},
        "result_type": {},
        "disagree": [],
    }
    for b, r in wide.items():
        check["result_type"][b] = type(results[b]).__name__
        check["rel_err_vs_torch"][b] = _rel(r, wide["torch"]) if "torch" in wide else None
        check["rel_err_vs_reference"][b] = err = _rel(r, ref)
        if not np.all(np.isfinite(r)) or not err <= limit or r.shape != ref.shape:
            check["disagree"].append(b)
    for b in ("trn", "trn_expr", "ctg_trn"):
        if b in results and type(results[b]) is not xp.NeuronArray:
            check["disagree"].append(f"{b} (result is {type(results[b]).__name__}, not NeuronArray)")
    return errors, check


def _ratio(a: list[float], b: list[float]) -> float:
    return statistics.median(x / y for x, y in zip(a, b, strict=True))


def measure(inst: dict, reps: int, backends: tuple[str, ...]) -> dict:
    eq, arrays = inst["eq"], inst["arrays"]
    path, info = oe.contract_path(eq, *arrays, optimize=inst.get("optimize", "greedy"))
    calls = _callables(eq, path, arrays, backends)
    errors, check = _check(inst, path, calls)  # also the warm-up call of each backend
    row = {
        "family": inst["family"],
        "name": inst["name"],
        "dtype": inst["dtype"],
        "complex": bool(np.iscomplexobj(arrays[0])),
        "tensors": len(arrays),
        "steps": len(path),
        "path_source": inst.get("path_source", PATH_SOURCE),
        "flops": float(info.opt_cost),
        "largest_intermediate": float(info.largest_intermediate),
        "source": inst["source"],
        "data": inst["data"],
        "subscripts": eq if len(eq) < 80 else eq[:77] + "...",
        "errors": errors,
        "check": check,
        "path_digest": hashlib.sha1(repr((eq, [tuple(p) for p in path])).encode()).hexdigest()[:12],
    }
    if "torch" not in calls:
        return row
    t0 = time.perf_counter()
    calls["torch"]()
    once = time.perf_counter() - t0
    inner = max(1, min(20, round(SAMPLE_S / max(once, 1e-6))))
    samples = interleaved_ms(calls, reps, inner)
    row.update(
        reps=reps,
        calls_per_sample=inner,
        median_ms={b: statistics.median(s) for b, s in samples.items()},
        min_ms={b: min(s) for b, s in samples.items()},
        # per-repetition ratios: the backends of one repetition ran within a second of each other, so a change of
        # machine load between repetitions (this box is shared) cancels out
        over_torch={b: _ratio(samples[b], samples["torch"]) for b in samples if b != "torch"},
        pairs={f"{a}/{b}": _ratio(samples[a], samples[b]) for a, b in PAIRS if a in samples and b in samples},
        samples_ms=samples,
    )
    return row


# ---------------------------------------------------------------------------------------------------- reporting


def _geomean(xs: list[float]) -> float | None:
    return math.exp(statistics.fmean(map(math.log, xs))) if xs else None


def summary(rows: list[dict]) -> dict:
    """Geometric means of each ratio over all instances, the real ones and the complex ones; the largest ratio
    and its instance."""
    timed = [r for r in rows if "over_torch" in r]
    keys = sorted({k for r in timed for k in r["over_torch"]}) + sorted({k for r in timed for k in r["pairs"]})

    def ratios(r: dict) -> dict:
        return {**r["over_torch"], **r["pairs"]}

    out = {}
    for k in keys:
        have = [r for r in timed if k in ratios(r)]
        worst = max(have, key=lambda r: ratios(r)[k])
        out[k] = {
            "geomean_all": _geomean([ratios(r)[k] for r in have]),
            "geomean_real": _geomean([ratios(r)[k] for r in have if not r["complex"]]),
            "geomean_complex": _geomean([ratios(r)[k] for r in have if r["complex"]]),
            "max": ratios(worst)[k],
            "max_instance": worst["name"],
            "instances": len(have),
        }
    return out


def _fmt(x: float | None, spec: str = ".2f") -> str:
    return "-" if x is None else format(x, spec)


def table(rows: list[dict], summ: dict) -> str:
    cols = [b for b in BACKENDS if any(b in r.get("median_ms", {}) for r in rows)]
    ratio_cols = [b for b in cols if b != "torch"]
    head = (
        ["family", "instance", "dtype", "tensors", "flops"]
        + [f"{b} (ms)" for b in cols]
        + [f"{b}/torch" for b in ratio_cols]
        + [f"{a}/{b}" for a, b in PAIRS]
        + ["check"]
    )
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * 3 + "---:|" * (len(head) - 4) + "---|"]
    for r in rows:
        med, over, pairs = r.get("median_ms", {}), r.get("over_torch", {}), r.get("pairs", {})
        note = "; ".join([f"{b} error" for b in r["errors"]] + [f"{b} disagrees" for b in r["check"]["disagree"]])
        lines.append(
            "| "
            + " | ".join(
                [r["family"], r["name"], r["dtype"], str(r["tensors"]), f"{r['flops']:.1e}"]
                + [_fmt(med.get(b)) for b in cols]
                + [_fmt(over.get(b), ".3f") for b in ratio_cols]
                + [_fmt(pairs.get(f"{a}/{b}"), ".3f") for a, b in PAIRS]
                + [note or "ok"]
            )
            + " |"
        )
    lines += [
        "",
        "| ratio | geomean (all) | geomean (real) | geomean (complex) | max | at |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for k, s in summ.items():
        name = k if "/" in k else f"{k}/torch"
        lines.append(
            f"| {name} | {_fmt(s['geomean_all'], '.3f')} | {_fmt(s['geomean_real'], '.3f')} | "
            f"{_fmt(s['geomean_complex'], '.3f')} | {_fmt(s['max'], '.3f')} | {s['max_instance']} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=11)
    parser.add_argument("--only", default="", help="comma-separated families: " + ",".join(FAMILIES))
    parser.add_argument("--quick", action="store_true", help="one small instance per family, for a smoke run")
    parser.add_argument(
        "--heldout",
        action="store_true",
        help="the held-out instance set (other seeds, larger sizes): " + ",".join(HELDOUT_FAMILIES),
    )
    parser.add_argument("--no-numpy", action="store_true", help="leave out the numpy backend")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="default: benchmarks/results/bench_families.json (bench_families_heldout.json with --heldout)",
    )
    args = parser.parse_args()
    if args.heldout and args.quick:
        parser.error("--heldout has no --quick form")
    if args.heldout:
        fixed_hash_seed()  # the 3-D lattices' random-greedy paths otherwise change between runs
    known = HELDOUT_FAMILIES if args.heldout else FAMILIES
    out = args.out or RESULTS / ("bench_families_heldout.json" if args.heldout else "bench_families.json")
    families = tuple(f.strip() for f in args.only.split(",") if f.strip()) or known
    unknown = set(families) - set(known)
    if unknown:
        parser.error(f"unknown families {sorted(unknown)}; choose from {', '.join(known)}")
    load_start = os.getloadavg()
    backends = tuple(b for b in BACKENDS if not (args.no_numpy and b == "numpy"))
    rows = []
    for inst in instances(families, args.quick, args.heldout):
        rows.append(r := measure(inst, args.reps, backends))
        trouble = [*r["errors"], *r["check"]["disagree"]]
        ratios = ", ".join(f"{b} {x:.2f}" for b, x in r.get("over_torch", {}).items())
        print(
            f"{r['family']} / {r['name']} ({r['dtype']}): torch {r.get('median_ms', {}).get('torch', 0):.1f} ms; "
            f"over torch: {ratios}" + (f"; PROBLEMS: {trouble}" if trouble else ""),
            flush=True,
        )
    summ = summary(rows)
    meta = run_metadata(
        opt_einsum=oe.__version__,
        cotengra=ctg.__version__,
        quimb=quimb.__version__,
        einsum_benchmark=importlib.metadata.version("einsum_benchmark"),
        trn_backend=str(Path(xp.__file__).parent),
        precision_mode="default (native on the CPU)",
        path_source=PATH_SOURCE,
        quick=args.quick,
        heldout=args.heldout,
        pythonhashseed=os.environ.get("PYTHONHASHSEED"),
        load_average_start=load_start,
        load_average_end=os.getloadavg(),
        cotengra_call="cotengra.einsum_expression(eq, *shapes, optimize=path) built once, called on the arrays "
        "(implementation 'auto': autoray's tensordot/einsum of the arrays' backend)",
        note="times: medians over interleaved repetitions (each repetition runs every backend once, rotating the "
        "order); ratios: medians of per-repetition ratios; every backend gets the same data and path",
    )
    save(out, meta, rows, table(rows, summ), summary=summ)


if __name__ == "__main__":
    main()
