"""Stage 3 of the demo: one amplitude of a random quantum circuit, a network of a few hundred tensors.

Qubits on a rows x cols grid start in |0>; each cycle applies a Haar-random single-qubit gate to every qubit and
then Haar-random two-qubit gates on one of four coupler patterns (horizontal and vertical bonds, alternating
parity), as in random circuit sampling; the network is <x| C |0...0> for a random bitstring x, one tensor per
gate and per boundary state, every index of size 2. Contracted in the order the tensors come, it is a state-vector
simulation; a good order is far cheaper, and the order from opt_einsum's greedy path has intermediates that
outgrow memory. cotengra's HyperOptimizer (a small budget of greedy trials, seeded) finds the tree, sliced so that
no intermediate exceeds ``memory_limit`` elements; that one tree is then contracted by trn_backend
(``trn_backend.contract(..., memory_limit=..., optimize=tree)``: every binary step a planned kernel call) and by
cotengra's own slice-by-slice contraction on torch and on NumPy.
"""

from __future__ import annotations

import dataclasses
import random
import statistics
import time
from collections.abc import Callable

import numpy as np

import trn_backend as xp
from trn_backend.contraction.parse import symbol

BACKENDS = ("trn", "torch", "numpy")


@dataclasses.dataclass(frozen=True)
class Circuit:
    rows: int
    cols: int
    cycles: int
    seed: int = 0

    @property
    def qubits(self) -> int:
        return self.rows * self.cols

    def __str__(self) -> str:
        return f"{self.rows}x{self.cols} qubits, {self.cycles} cycles"


@dataclasses.dataclass(frozen=True)
class Network:
    circuit: Circuit
    subscripts: str  # one label per index (ASCII letters, then CJK ideographs: every label alphabetic)
    arrays: list[np.ndarray]

    @property
    def shapes(self) -> list[tuple[int, ...]]:
        return [a.shape for a in self.arrays]


def circuit_network(circuit: Circuit, dtype: type = np.complex64) -> Network:
    rng = np.random.default_rng(circuit.seed)
    labels = (symbol(i) for i in range(10**6))
    wire = [next(labels) for _ in range(circuit.qubits)]  # the open index of each qubit
    terms = list(wire)
    arrays = [np.array([1, 0], dtype=dtype) for _ in wire]
    patterns = _coupler_patterns(circuit.rows, circuit.cols)
    for cycle in range(circuit.cycles):
        for q in range(circuit.qubits):
            out = next(labels)
            terms.append(out + wire[q])
            arrays.append(_haar_unitary(2, rng).astype(dtype))
            wire[q] = out
        for a, b in patterns[cycle % len(patterns)]:
            out_a, out_b = next(labels), next(labels)
            terms.append(out_a + out_b + wire[a] + wire[b])
            arrays.append(_haar_unitary(4, rng).reshape(2, 2, 2, 2).astype(dtype))
            wire[a], wire[b] = out_a, out_b
    bits = rng.integers(0, 2, circuit.qubits)
    terms += wire
    arrays += [np.eye(2, dtype=dtype)[bit] for bit in bits]
    return Network(circuit, ",".join(terms) + "->", arrays)


def _coupler_patterns(rows: int, cols: int) -> list[list[tuple[int, int]]]:
    """Four sets of disjoint bonds of the grid: horizontal and vertical, each in two parities."""

    def at(r: int, c: int) -> int:
        return r * cols + c

    patterns = []
    for parity in (0, 1):
        patterns.append(
            [(at(r, c), at(r, c + 1)) for r in range(rows) for c in range(cols - 1) if (r + c) % 2 == parity]
        )
        patterns.append(
            [(at(r, c), at(r + 1, c)) for r in range(rows - 1) for c in range(cols) if (r + c) % 2 == parity]
        )
    return [p for p in patterns if p]


def _haar_unitary(n: int, rng: np.random.Generator) -> np.ndarray:
    """A Haar-random n x n unitary: QR of a complex Gaussian matrix, phases fixed by R's diagonal."""
    z = (rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))) / np.sqrt(2)
    q, r = np.linalg.qr(z)
    return q * (np.diag(r) / np.abs(np.diag(r)))


def sliced_tree(network: Network, memory_limit: int, trials: int, seed: int = 0):
    """cotengra's HyperOptimizer tree (``trials`` greedy trials), sliced to ``memory_limit`` elements.

    cotengra draws the trials' randomness from Python's global ``random`` module: it is seeded for the search
    and its state restored after, so the tree is reproducible and the caller's random stream is untouched."""
    import cotengra as ctg

    inputs = [tuple(term) for term in network.subscripts.split("->")[0].split(",")]
    sizes = {
        label: dim
        for term, shape in zip(inputs, network.shapes, strict=True)
        for label, dim in zip(term, shape, strict=True)
    }
    optimizer = ctg.HyperOptimizer(
        methods=["greedy"],
        max_repeats=trials,
        parallel=False,
        optlib="random",
        optlib_opts={"seed": seed},
        reconf_opts=None,
        progbar=False,
    )
    state = random.getstate()
    random.seed(seed)
    try:
        tree = optimizer.search(inputs, (), sizes)
        return tree.slice(target_size=memory_limit, allow_outer=False, seed=seed)
    finally:
        random.setstate(state)


@dataclasses.dataclass(frozen=True)
class Timing:
    backend: str
    value: complex
    seconds: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)


def contract_on(backend: str, network: Network, tree, memory_limit: int) -> Callable[[], complex]:
    """A call contracting the network along ``tree`` (the same path and sliced indices) on ``backend``."""
    if backend == "trn":
        ops = [xp.asarray(a) for a in network.arrays]
        return lambda: complex(
            xp.contract(network.subscripts, *ops, memory_limit=memory_limit, optimize=tree, progress=False)
        )
    if backend == "torch":
        import torch

        tensors = [torch.from_numpy(a) for a in network.arrays]
        return lambda: complex(tree.contract(tensors, backend="torch"))
    if backend == "numpy":
        return lambda: complex(tree.contract(network.arrays, backend="numpy"))
    raise ValueError(f"contract_on(): backend must be one of {', '.join(BACKENDS)}, got {backend!r}")


def time_backends(
    network: Network, tree, memory_limit: int, repeats: int, progress: Callable[[str], None] = lambda label: None
) -> list[Timing]:
    """Each backend: one call whose result is kept (it also warms caches), then ``repeats`` timed calls,
    interleaved across the backends so that load changes on a shared machine hit them alike."""
    calls = {b: contract_on(b, network, tree, memory_limit) for b in BACKENDS}
    values = {}
    for backend, call in calls.items():
        progress(f"{backend} (first call)")
        values[backend] = call()
    seconds: dict[str, list[float]] = {b: [] for b in BACKENDS}
    for r in range(repeats):
        for backend, call in calls.items():
            progress(f"{backend} ({r + 1}/{repeats})")
            start = time.perf_counter()
            call()
            seconds[backend].append(time.perf_counter() - start)
    return [Timing(b, values[b], seconds[b]) for b in BACKENDS]


def disagreement(timings: list[Timing]) -> float:
    """max |value - trn's value| / |trn's value| over the backends."""
    reference = timings[0].value
    return max(abs(t.value - reference) for t in timings) / abs(reference)
