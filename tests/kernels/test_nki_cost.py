"""The cost model (kernels/nki/cost.py): calibrated against published measurements of NKI matmul kernels (our
ports of them in nki_calibration_kernels.py, run on the CPU model), its pricing rules against exact arithmetic,
and the calibration file."""

from __future__ import annotations

import collections
import dataclasses
import json
import os
import subprocess
import sys
from fractions import Fraction
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.kernels import nki_calibration_kernels as fixtures
from trn_backend.kernels.nki import cost, model

ROOT = Path(__file__).resolve().parents[2]

# --- calibration: modelled against published times ---------------------------------------------------------------
# The published times and their sources are nki_calibration_kernels.POINTS; these tests compare the model with
# them, never with its own output.
TOLERANCE = 0.15


@pytest.mark.slow
@pytest.mark.parametrize("point", fixtures.POINTS, ids=lambda p: p.name)
def test_modelled_time_is_within_15_percent_of_the_published_measurement(point):
    modelled = fixtures.estimate(point, cost.Calibration()).seconds
    assert abs(modelled / point.published_s - 1) <= TOLERANCE, (point.name, modelled, point.published_s)


@pytest.mark.heavy
def test_the_bound_engine_matches_the_published_account():
    """The tutorial's first three kernels are memory-bound, its last and the hand kernel Tensor-Engine-bound."""
    assert {p.name: fixtures.estimate(p, cost.Calibration()).bound_by for p in fixtures.POINTS} == {
        "tutorial_tiled": "dma",
        "tutorial_hoisted": "dma",
        "tutorial_blocked": "dma",
        "tutorial_optimized": "tensor",
        "hand_2048": "tensor",
    }


# --- pricing rules against exact arithmetic ------------------------------------------------------------------------
def fake_core(trace, sbuf: int = 0, banks: int = 0) -> SimpleNamespace:
    """A recorded run of one physical core, as the CPU model's Core has it: ``trace`` is (engine, instruction,
    details, reads, writes) per executed instruction (allocations by number); a dict {key: n} is n independent
    copies of each key (engine, instruction, *details). No dynamic loops: its program is every instruction."""
    if isinstance(trace, dict):
        trace = [(key[0], key[1], tuple(key[2:]), (), ()) for key, n in trace.items() for _ in range(n)]
    events = collections.Counter((engine, instruction, *details) for engine, instruction, details, _, _ in trace)
    return SimpleNamespace(
        events=events, trace=list(trace), sbuf_peak=sbuf, banks_peak=banks, program_instructions=len(trace)
    )


calibrations = st.builds(
    cost.Calibration,
    tensor_efficiency=st.floats(0.05, 1.0),
    dma_bytes_per_s=st.one_of(st.none(), st.floats(1e9, 1e12)),
    dma_half_run_bytes=st.floats(0, 8192),
    dma_fixed_s=st.floats(0, 1e-5),
    compile_fixed_s=st.floats(0, 10),
    compile_s_per_instruction=st.floats(0, 1e-2),
)
dma_events = st.dictionaries(
    st.tuples(
        st.just("dma"),
        st.just("dma_copy"),
        st.integers(1, 1 << 22),
        st.sampled_from([2, 64, 256, 1024, 4096, 1 << 16]),
        st.just(False),
    ),
    st.integers(1, 60),
    min_size=1,
    max_size=6,
)
generations = st.sampled_from(sorted(cost.GENERATIONS))
LATENCY = Fraction(cost.DMA_LATENCY_S)


def exact_dma(size: int, run: int, generation: cost.Generation, c: cost.Calibration) -> Fraction:
    """The documented DMA rule in exact arithmetic: fixed + S (R + h) / (R rate) of the core's DMA bandwidth."""
    rate = Fraction(c.dma_bytes_per_s or generation.dma_bytes_per_s)
    return Fraction(c.dma_fixed_s) + Fraction(size) * (run + Fraction(c.dma_half_run_bytes)) / (run * rate)


def exact_dma_seconds(events, generation: cost.Generation, c: cost.Calibration) -> Fraction:
    return sum((n * exact_dma(size, run, generation, c) for (_, _, size, run, *_), n in events.items()), Fraction(0))


@given(events=dma_events, name=generations, c=calibrations)
def test_dma_time_follows_the_run_length_rule(events, name, c):
    """Independent transfers keep the core's DMA bandwidth busy from the first one's latency on; the call also
    takes at least its bytes over the core's HBM share."""
    generation = cost.GENERATIONS[name]
    e = cost.estimate(fake_core(events), generation, "k", 0, False, c)
    streamed = Fraction(sum(size * n for (_, _, size, *_), n in events.items()))
    hbm = streamed / Fraction(generation.hbm_bytes_per_s)
    busy = exact_dma_seconds(events, generation, c)
    assert e.engine_seconds["dma"] == pytest.approx(float(max(busy, hbm)), rel=1e-12)
    assert e.seconds == pytest.approx(float(max(LATENCY + busy, hbm)), rel=1e-9)
    assert e.dma_bytes == streamed


@given(moving=st.integers(1, 512), fp32=st.booleans(), n=st.integers(1, 2000), name=generations, c=calibrations)
def test_tensor_time_is_the_documented_matmul_rate_at_the_calibrated_efficiency(moving, fp32, n, name, c):
    generation = cost.GENERATIONS[name]
    e = cost.estimate(fake_core({("tensor", "nc_matmul", moving, 128, 128, fp32): n}), generation, "k", 0, fp32, c)
    cycles = n * max(moving, 64) * (4 if fp32 else 1)
    expected = Fraction(cycles) / (Fraction(generation.tensor_hz) * Fraction(c.tensor_efficiency))
    assert e.engine_seconds["tensor"] == pytest.approx(float(expected), rel=1e-12)
    assert e.seconds == pytest.approx(float(expected), rel=1e-9)  # one in-order engine, nothing else


@pytest.mark.parametrize(("name", "lanes"), [("trn1", 1), ("trn2", 2)])
@pytest.mark.parametrize(("instruction", "per_element"), [("tensor_copy", 1), ("tensor_tensor", 2)])
def test_vector_instructions_use_the_documented_data_path_width(name, lanes, instruction, per_element):
    """trn1's Vector Engine moves 128 elements per cycle, trn2's 256 (fp32): one and two per partition."""
    generation = cost.GENERATIONS[name]
    e = cost.estimate(fake_core({("vector", instruction, 4096): 3}), generation, "k", 0, False, cost.Calibration())
    expected = Fraction(3 * (64 + Fraction(per_element * 4096, lanes))) / Fraction(generation.vector_hz)
    assert e.engine_seconds["vector"] == pytest.approx(float(expected), rel=1e-12)
    assert e.seconds == pytest.approx(float(expected), rel=1e-12)


@given(first=dma_events, second=dma_events, matmuls=st.integers(0, 500), name=generations, c=calibrations)
def test_a_launch_lasts_as_long_as_its_slowest_physical_core_and_its_cores_share_hbm(first, second, matmuls, name, c):
    generation = cost.GENERATIONS[name]
    cores = (
        fake_core({**first, ("tensor", "nc_matmul", 512, 128, 128, False): matmuls}, sbuf=100, banks=2),
        fake_core(second, sbuf=300, banks=1),
    )
    alone = [cost.estimate(core, generation, "k", 0, False, c) for core in cores]
    both = cost.estimate(SimpleNamespace(cores=cores), generation, "k", 10**9, False, c)
    streamed = Fraction(sum(size * n for events in (first, second) for (_, _, size, *_), n in events.items()))
    hbm = streamed / (2 * Fraction(generation.hbm_bytes_per_s))
    queues = max(exact_dma_seconds(events, generation, c) for events in (first, second))
    assert both.engine_seconds["dma"] == pytest.approx(float(max(queues, hbm)), rel=1e-12)
    assert both.engine_seconds["tensor"] == max(a.engine_seconds["tensor"] for a in alone)
    matmul_s = Fraction(matmuls * 512) / (Fraction(generation.tensor_hz) * Fraction(c.tensor_efficiency))
    ends = [
        max(LATENCY + exact_dma_seconds(first, generation, c), matmul_s),
        LATENCY + exact_dma_seconds(second, generation, c),
    ]
    assert both.seconds == pytest.approx(float(max(*ends, hbm)), rel=1e-9)
    assert both.cores == 2 and both.peak_flops == 2 * generation.bf16_flops  # per logical core: both cores' peak
    assert (both.sbuf_peak_bytes, both.psum_banks_peak) == (300, 2)
    program = max(sum(core.events.values()) for core in cores)
    assert both.program_instructions == program
    assert both.instructions["dma"] == sum(core.events[k] for core in cores for k in core.events if k[0] == "dma")
    assert both.compile_seconds == pytest.approx(c.compile_fixed_s + c.compile_s_per_instruction * program)


# --- the schedule against hand-computed oracles ----------------------------------------------------------------
# Each oracle is the schedule's rule worked by hand in exact arithmetic from the documented clocks and costs
# (trn2: Vector 0.96 GHz and 2 elements per partition per cycle, Scalar and GpSimd 1.2 GHz and 1, Tensor 2.4 GHz),
# never the code under test.
TRN2 = cost.TRN2
DEFAULT = cost.Calibration()


def cycles(n, hz) -> Fraction:
    return Fraction(n) / Fraction(hz)


def vector(elements) -> Fraction:
    return cycles(64 + Fraction(elements, 2), TRN2.vector_hz)


def scalar(elements) -> Fraction:
    return cycles(64 + elements, TRN2.scalar_hz)


def matmul(moving=512) -> Fraction:
    return cycles(max(moving, 64), TRN2.tensor_hz) / Fraction(DEFAULT.tensor_efficiency)


def scheduled(*cores, generation=TRN2) -> cost.Estimate:
    run = cores[0] if len(cores) == 1 else SimpleNamespace(cores=cores)
    return cost.estimate(run, generation, "k", 0, False, DEFAULT)


def test_a_chain_of_reads_after_writes_across_engines_takes_the_sum_of_its_durations():
    e = scheduled(
        fake_core(
            [
                ("vector", "memset", (512,), (), (1,)),
                ("scalar", "activation", (512,), (1,), (2,)),
                ("vector", "tensor_copy", (256,), (2,), (3,)),
            ]
        )
    )
    assert e.seconds == pytest.approx(float(vector(512) + scalar(512) + vector(256)), rel=1e-12)
    assert e.stall["vector"] == pytest.approx(float(vector(512) + scalar(512) - vector(512)), rel=1e-12)


def test_independent_instructions_on_different_engines_take_the_longest():
    e = scheduled(
        fake_core(
            [
                ("vector", "memset", (512,), (), (1,)),
                ("scalar", "activation", (2048,), (5,), (2,)),
                ("gpsimd", "memset", (100,), (), (3,)),
                ("tensor", "nc_matmul", (512, 128, 128, False), (5, 6), (4,)),
            ]
        )
    )
    longest = max(vector(512), scalar(2048), cycles(64 + 100, TRN2.gpsimd_hz), matmul())
    assert e.seconds == pytest.approx(float(longest), rel=1e-12)
    assert all(v == 0 for v in e.stall.values())


def test_an_engine_runs_its_instructions_in_program_order():
    """The second Vector instruction needs nothing, but waits behind the first, which waits for the Scalar one."""
    e = scheduled(
        fake_core(
            [
                ("scalar", "activation", (512,), (), (1,)),
                ("vector", "tensor_copy", (512,), (1,), (2,)),
                ("vector", "memset", (64,), (), (3,)),
            ]
        )
    )
    assert e.seconds == pytest.approx(float(scalar(512) + vector(512) + vector(64)), rel=1e-12)


LOAD = ("dma", "dma_copy", (65536, 1024, False))


def test_a_tile_reused_without_double_buffering_serializes_its_load_behind_the_last_read():
    """Load T, matmul from T, load T again (write after read: it waits for the matmul), matmul from it; with a
    fresh tile the second load overlaps the first matmul instead."""
    d, m = exact_dma(65536, 1024, TRN2, DEFAULT), matmul()
    reused = scheduled(
        fake_core(
            [
                (*LOAD, (10,), (1,)),
                ("tensor", "nc_matmul", (512, 128, 128, False), (1, 9), (2,)),
                (*LOAD, (10,), (1,)),
                ("tensor", "nc_matmul", (512, 128, 128, False), (1, 9), (3,)),
            ]
        )
    )
    assert reused.seconds == pytest.approx(float(2 * (LATENCY + d + m)), rel=1e-12)
    fresh = scheduled(
        fake_core(
            [
                (*LOAD, (10,), (1,)),
                ("tensor", "nc_matmul", (512, 128, 128, False), (1, 9), (2,)),
                (*LOAD, (10,), (4,)),
                ("tensor", "nc_matmul", (512, 128, 128, False), (4, 9), (3,)),
            ]
        )
    )
    # the second load is ready at once and takes the bandwidth after the first: LATENCY + 2d; the matmuls follow
    assert fresh.seconds == pytest.approx(float(max(LATENCY + d + m, LATENCY + 2 * d) + m), rel=1e-12)
    assert reused.stall["tensor"] > fresh.stall["tensor"]


def test_a_store_waiting_for_its_tile_does_not_hold_back_a_later_load():
    """The DMA bandwidth fills gaps: a load issued after a store that waits for compute runs first (one in-order
    DMA queue would put it after the store)."""
    v = vector(8192)
    store, load = ("dma", "dma_copy", (4096, 4096, False)), ("dma", "dma_copy", (1 << 19, 4096, False))
    e = scheduled(
        fake_core(
            [
                ("vector", "memset", (8192,), (), (1,)),
                (*store, (1,), (10,)),
                (*load, (11,), (2,)),
                ("scalar", "activation", (512,), (2,), (3,)),
            ]
        )
    )
    d_store, d_load = exact_dma(4096, 4096, TRN2, DEFAULT), exact_dma(1 << 19, 4096, TRN2, DEFAULT)
    assert LATENCY + d_load < v  # the load is done before the store can start
    assert e.seconds == pytest.approx(float(max(v + LATENCY + d_store, LATENCY + d_load + scalar(512))), rel=1e-12)


def test_dma_writes_of_one_tile_share_the_bandwidth_without_ordering_each_other():
    d = exact_dma(65536, 1024, TRN2, DEFAULT)
    e = scheduled(
        fake_core(
            [(*LOAD, (10,), (1,)), (*LOAD, (10,), (1,)), ("tensor", "nc_matmul", (512, 128, 128, False), (1, 9), (2,))]
        )
    )
    assert e.seconds == pytest.approx(float(LATENCY + 2 * d + matmul()), rel=1e-12)


def test_a_barrier_releases_every_core_when_the_slower_one_arrives():
    """Each core's barrier waits for its Vector result; what follows the barrier on either core starts when the
    slower core arrived and the barrier (one GpSimd instruction) completed."""
    barrier = ("gpsimd", "core_barrier", (), (1,), ())

    def core(elements):
        return fake_core(
            [("vector", "tensor_copy", (elements,), (), (1,)), barrier, ("scalar", "activation", (512,), (), (2,))]
        )

    e = scheduled(core(4096), core(64))
    release = vector(4096) + cycles(64, TRN2.gpsimd_hz)
    assert e.seconds == pytest.approx(float(release + scalar(512)), rel=1e-12)
    alone = scheduled(core(64))  # alone, the short core releases itself early
    assert alone.seconds == pytest.approx(float(vector(64) + cycles(64, TRN2.gpsimd_hz) + scalar(512)), rel=1e-12)
    with pytest.raises(ValueError, match="different numbers of barriers"):
        scheduled(core(64), fake_core([("scalar", "activation", (512,), (), (2,))]))


def small_dma(mode):
    return ("dma", "dma_copy", (4096, 4096, mode))


@pytest.mark.parametrize("mode", ["hwdge", True])
def test_hardware_descriptor_generation_takes_600_ns_on_one_of_two_instances(mode):
    """Five independent dynamic loads: descriptors done at 600, 600, 1200, 1200, 1800 ns on the two instances,
    each transfer ready the DMA latency later, then served in order by the bandwidth."""
    e = scheduled(fake_core([(*small_dma(mode), (10,), (i,)) for i in range(1, 6)]))
    d, dge = exact_dma(4096, 4096, TRN2, DEFAULT), Fraction(cost.DGE_SECONDS)
    assert 2 * d < dge  # each pair finishes before the next descriptors
    assert e.seconds == pytest.approx(float(3 * dge + LATENCY + d), rel=1e-12)
    assert e.stall["dge"] == pytest.approx(float(3 * dge), rel=1e-12)  # the busier instance: three descriptors


@pytest.mark.parametrize(("mode", "generation"), [("swdge", TRN2), (True, cost.TRN1), ("hwdge", cost.TRN1)])
def test_software_descriptor_generation_runs_on_gpsimd_in_program_order(mode, generation):
    """swdge, and any dynamic DMA on trn1 (no hardware DGE): the descriptors take GpSimd 600 ns each, one after
    the other."""
    e = scheduled(fake_core([(*small_dma(mode), (10,), (i,)) for i in range(1, 6)]), generation=generation)
    d, dge = exact_dma(4096, 4096, generation, DEFAULT), Fraction(cost.DGE_SECONDS)
    assert e.seconds == pytest.approx(float(5 * dge + LATENCY + d), rel=1e-12)
    assert e.engine_seconds["gpsimd"] == pytest.approx(float(5 * dge), rel=1e-12)


@st.composite
def traces(draw):
    """Random traces over a few allocations on every engine: (engine, instruction, details, reads, writes)."""
    kinds = [
        ("tensor", "nc_matmul", (512, 128, 128, False)),
        ("vector", "tensor_copy", (1024,)),
        ("scalar", "activation", (512,)),
        ("gpsimd", "memset", (256,)),
        ("dma", "dma_copy", (65536, 1024, False)),
        ("dma", "dma_copy", (4096, 256, "hwdge")),
        ("dma", "dma_copy", (4096, 256, "swdge")),
    ]
    trace = []
    for _ in range(draw(st.integers(1, 40))):
        engine, instruction, details = draw(st.sampled_from(kinds))
        allocations = st.lists(st.integers(0, 6), max_size=2, unique=True).map(tuple)
        trace.append((engine, instruction, details, draw(allocations), draw(allocations)))
    return trace


@given(trace=traces())
def test_the_schedule_lies_between_the_busiest_engine_and_everything_in_series(trace):
    e = scheduled(fake_core(trace))
    dmas = sum(1 for engine, *_ in trace if engine == "dma")
    dynamic = sum(1 for engine, _, details, *_ in trace if engine == "dma" and details[2])
    serial = sum(e.engine_seconds.values()) + dmas * cost.DMA_LATENCY_S + dynamic * cost.DGE_SECONDS
    assert e.busiest_seconds * (1 - 1e-12) <= e.seconds <= serial * (1 + 1e-12)
    assert all(0 <= e.share(engine) <= 1 + 1e-12 for engine in cost.ENGINES)


def test_a_compact_record_prices_as_the_run_it_records(monkeypatch):
    """cost.record keeps what the schedule needs of a CPU-model run; both price the same."""
    monkeypatch.setenv(model.core.LNC_VARIABLE, "1")
    kernel = model.jit(fixtures.tutorial_hoisted)
    bf16 = model.language.bfloat16
    with model.targeting("trn2"), model.counting_only():
        kernel(model.shape_only((512, 256), bf16), model.shape_only((512, 1024), bf16))
    launch = kernel.last_run
    direct, compact = (
        cost.estimate(run, TRN2, "k", 2 * 512 * 256 * 1024, False, DEFAULT) for run in (launch, cost.record(launch))
    )
    assert direct == compact and compact.seconds > compact.busiest_seconds > 0


@pytest.mark.heavy
def test_compile_time_follows_the_program_not_the_work():
    """The static loops (tiles within a block) unroll; whole rows of blocks, whole N blocks and whole K blocks are
    dynamic loops: the program does not grow with M, N or K (tests/kernels/test_nki_matmul.py checks K)."""
    small = cost.modelled("matmul", "fast", (1, 512, 512, 512))
    large = cost.modelled("matmul", "fast", (1, 2048, 2048, 2048))
    counted = cost._counted("matmul", "fast", (1, 512, 512, 512), "trn2", False, False, None, small.cores)
    # one iteration of every loop: each physical core's program is what it ran
    assert small.program_instructions == max(sum(core.events.values()) for core in counted.cores)
    assert 2 * large.program_instructions < sum(large.instructions.values()) / large.cores  # loops ran
    assert large.program_instructions == cost.modelled("matmul", "fast", (1, 8192, 2048, 4096)).program_instructions
    c = cost.Calibration()
    assert large.compile_seconds == pytest.approx(
        c.compile_fixed_s + c.compile_s_per_instruction * large.program_instructions
    )


# --- the calibration in use ------------------------------------------------------------------------------------------
def write(tmp_path, content) -> str:
    path = tmp_path / "calibration.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return str(path)


def test_the_active_calibration_is_the_defaults_or_the_named_file_read_at_each_call(tmp_path, monkeypatch):
    monkeypatch.delenv(cost.CALIBRATION_VARIABLE, raising=False)
    assert cost.calibration() == cost.Calibration()
    path = write(tmp_path, {"tensor_efficiency": 0.5, "dma_bytes_per_s": 1e11})
    monkeypatch.setenv(cost.CALIBRATION_VARIABLE, path)
    assert cost.calibration() == cost.Calibration(tensor_efficiency=0.5, dma_bytes_per_s=1e11, source=path)
    write(tmp_path, {"launch_s": 1e-3, "source": "trn2 bench 2026-11-01"})
    assert cost.calibration() == cost.Calibration(launch_s=1e-3, source="trn2 bench 2026-11-01")


@pytest.mark.heavy
def test_importing_the_cost_model_reads_no_calibration_file():
    environment = {**os.environ, cost.CALIBRATION_VARIABLE: "/nonexistent/calibration.json"}
    subprocess.run([sys.executable, "-c", "import trn_backend.kernels.nki.cost"], check=True, cwd=ROOT, env=environment)


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ({"tensor_eficiency": 0.9}, r"unknown field 'tensor_eficiency'"),
        ({"tensor_efficiency": 1.5}, r"field tensor_efficiency must be in \(0, 1\]"),
        ({"tensor_efficiency": 0}, r"field tensor_efficiency must be in \(0, 1\]"),
        ({"dma_bytes_per_s": -1}, r"field dma_bytes_per_s must be positive"),
        ({"dma_half_run_bytes": "256"}, r"field dma_half_run_bytes must be a finite number, got '256'"),
        ({"dma_fixed_s": True}, r"field dma_fixed_s must be a finite number, got True"),
        ({"launch_s": -0.001}, r"field launch_s must not be negative"),
        ({"compile_s_per_instruction": None}, r"field compile_s_per_instruction must be a finite number, got None"),
        ({"source": 3}, r"field source must be a string"),
        ([0.9], r"expected a JSON object of Calibration fields, got list"),
        ("{not json", r"cannot read it as JSON"),
    ],
)
def test_a_bad_calibration_file_is_an_error_naming_the_file_and_field(tmp_path, monkeypatch, content, match):
    path = write(tmp_path, content)
    monkeypatch.setenv(cost.CALIBRATION_VARIABLE, path)
    with pytest.raises(ValueError, match=rf"cost calibration file {path}: {match}"):
        cost.calibration()


def test_a_missing_calibration_file_is_an_error_naming_it(tmp_path, monkeypatch):
    monkeypatch.setenv(cost.CALIBRATION_VARIABLE, str(tmp_path / "absent.json"))
    with pytest.raises(ValueError, match=r"cost calibration file .*absent.json: cannot read it"):
        cost.modelled("matmul", "fast", (1, 128, 128, 128))


@pytest.mark.parametrize(
    ("field", "value"),
    [("tensor_efficiency", 2.0), ("dma_bytes_per_s", 0.0), ("dma_fixed_s", float("nan")), ("compile_fixed_s", -1.0)],
)
def test_a_bad_calibration_in_code_is_an_error_naming_the_field(field, value):
    with pytest.raises(ValueError, match=rf"cost.Calibration: {field} must"):
        cost.Calibration(**{field: value})


@pytest.mark.slow
def test_estimates_and_thresholds_follow_the_calibration_they_are_given_or_the_active_one(tmp_path, monkeypatch):
    monkeypatch.delenv(cost.CALIBRATION_VARIABLE, raising=False)
    shape = (1, 2048, 2048, 2048)
    default = cost.modelled("matmul", "fast", shape)
    slow = cost.Calibration(tensor_efficiency=0.44, dma_bytes_per_s=1e10)
    assert cost.modelled("matmul", "fast", shape, calibration=slow).seconds > 4 * default.seconds
    patient = dataclasses.replace(cost.Calibration(), launch_s=4 * cost.LAUNCH_OVERHEAD_S)
    threshold = cost.default_min_flops("fast")
    assert cost.default_min_flops("fast", calibration=patient) > threshold  # a costlier launch needs larger steps
    monkeypatch.setenv(cost.CALIBRATION_VARIABLE, write(tmp_path, {"launch_s": 4 * cost.LAUNCH_OVERHEAD_S}))
    assert cost.default_min_flops("fast") == cost.default_min_flops("fast", calibration=cost.calibration())
    assert cost.default_min_flops("fast") > threshold  # the cache keys on the active calibration
    assert cost.modelled("matmul", "fast", shape).seconds == default.seconds  # launch is not kernel time
