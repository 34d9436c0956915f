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
from trn_backend.kernels.nki import cost

from tests.kernels import nki_calibration_kernels as fixtures

ROOT = Path(__file__).resolve().parents[2]

# --- calibration: modelled against published times ---------------------------------------------------------------
# The published times and their sources are nki_calibration_kernels.POINTS; these tests compare the model with
# them, never with its own output.
TOLERANCE = 0.15


@pytest.mark.parametrize("point", fixtures.POINTS, ids=lambda p: p.name)
def test_modelled_time_is_within_15_percent_of_the_published_measurement(point):
    modelled = fixtures.estimate(point, cost.Calibration()).seconds
    assert abs(modelled / point.published_s - 1) <= TOLERANCE, (point.name, modelled, point.published_s)


def test_the_bound_engine_matches_the_published_account():
    """The tutorial's first three kernels are memory-bound, its last and the hand kernel Tensor-Engine-bound."""
    assert {p.name: fixtures.estimate(p, cost.Calibration()).bound_by for p in fixtures.POINTS} == {
        "tutorial_tiled": "dma", "tutorial_hoisted": "dma", "tutorial_blocked": "dma",
        "tutorial_optimized": "tensor", "hand_2048": "tensor"}


# --- pricing rules against exact arithmetic ------------------------------------------------------------------------
def fake_core(events: dict[tuple, int], sbuf: int = 0, banks: int = 0) -> SimpleNamespace:
    """A recorded run of one physical core, as the CPU model's Core has it (no dynamic loops: its program is every
    instruction it ran)."""
    return SimpleNamespace(events=collections.Counter(events), sbuf_peak=sbuf, banks_peak=banks,
                           program_instructions=sum(events.values()))


calibrations = st.builds(
    cost.Calibration,
    tensor_efficiency=st.floats(0.05, 1.0),
    dma_bytes_per_s=st.one_of(st.none(), st.floats(1e9, 1e12)),
    dma_half_run_bytes=st.floats(0, 8192),
    dma_fixed_s=st.floats(0, 1e-5),
    compile_fixed_s=st.floats(0, 10),
    compile_s_per_instruction=st.floats(0, 1e-2))
dma_events = st.dictionaries(
    st.tuples(st.just("dma"), st.just("dma_copy"), st.integers(1, 1 << 22), st.sampled_from([2, 64, 256, 1024, 4096,
                                                                                            1 << 16])),
    st.integers(1, 500), min_size=1, max_size=6)
generations = st.sampled_from(sorted(cost.GENERATIONS))


def exact_dma_seconds(events, generation: cost.Generation, c: cost.Calibration) -> Fraction:
    """The documented DMA rule in exact arithmetic: fixed + S (R + h) / (R rate) per dma_copy."""
    rate = Fraction(c.dma_bytes_per_s or generation.dma_bytes_per_s)
    total = Fraction(0)
    for (_, _, size, run), n in events.items():
        total += n * (Fraction(c.dma_fixed_s) + Fraction(size) * (run + Fraction(c.dma_half_run_bytes))
                      / (run * rate))
    return total


@given(events=dma_events, name=generations, c=calibrations)
def test_dma_time_follows_the_run_length_rule(events, name, c):
    generation = cost.GENERATIONS[name]
    e = cost.estimate(fake_core(events), generation, "k", 0, False, c)
    streamed = Fraction(sum(size * n for (_, _, size, _), n in events.items()))
    expected = max(exact_dma_seconds(events, generation, c), streamed / Fraction(generation.hbm_bytes_per_s))
    assert e.engine_seconds["dma"] == pytest.approx(float(expected), rel=1e-12)
    assert e.dma_bytes == streamed


@given(moving=st.integers(1, 512), fp32=st.booleans(), n=st.integers(1, 10**5), name=generations, c=calibrations)
def test_tensor_time_is_the_documented_matmul_rate_at_the_calibrated_efficiency(moving, fp32, n, name, c):
    generation = cost.GENERATIONS[name]
    e = cost.estimate(fake_core({("tensor", "nc_matmul", moving, 128, 128, fp32): n}), generation, "k", 0, fp32, c)
    cycles = n * max(moving, 64) * (4 if fp32 else 1)
    expected = Fraction(cycles) / (Fraction(generation.tensor_hz) * Fraction(c.tensor_efficiency))
    assert e.engine_seconds["tensor"] == pytest.approx(float(expected), rel=1e-12)


@pytest.mark.parametrize(("name", "lanes"), [("trn1", 1), ("trn2", 2)])
@pytest.mark.parametrize(("instruction", "per_element"), [("tensor_copy", 1), ("tensor_tensor", 2)])
def test_vector_instructions_use_the_documented_data_path_width(name, lanes, instruction, per_element):
    """trn1's Vector Engine moves 128 elements per cycle, trn2's 256 (fp32): one and two per partition."""
    generation = cost.GENERATIONS[name]
    e = cost.estimate(fake_core({("vector", instruction, 4096): 3}), generation, "k", 0, False, cost.Calibration())
    expected = Fraction(3 * (64 + Fraction(per_element * 4096, lanes))) / Fraction(generation.vector_hz)
    assert e.engine_seconds["vector"] == pytest.approx(float(expected), rel=1e-12)


@given(first=dma_events, second=dma_events, matmuls=st.integers(0, 5000), name=generations, c=calibrations)
def test_a_launch_lasts_as_long_as_its_slowest_physical_core_and_its_cores_share_hbm(first, second, matmuls,
                                                                                   name, c):
    generation = cost.GENERATIONS[name]
    cores = (fake_core({**first, ("tensor", "nc_matmul", 512, 128, 128, False): matmuls}, sbuf=100, banks=2),
             fake_core(second, sbuf=300, banks=1))
    alone = [cost.estimate(core, generation, "k", 0, False, c) for core in cores]
    both = cost.estimate(SimpleNamespace(cores=cores), generation, "k", 10**9, False, c)
    streamed = Fraction(sum(size * n for events in (first, second) for (_, _, size, _), n in events.items()))
    queues = max(exact_dma_seconds(events, generation, c) for events in (first, second))
    assert both.engine_seconds["dma"] == pytest.approx(
        float(max(queues, streamed / (2 * Fraction(generation.hbm_bytes_per_s)))), rel=1e-12)
    assert both.engine_seconds["tensor"] == max(a.engine_seconds["tensor"] for a in alone)
    assert both.cores == 2 and both.peak_flops == 2 * generation.bf16_flops  # per logical core: both cores' peak
    assert (both.sbuf_peak_bytes, both.psum_banks_peak) == (300, 2)
    program = max(sum(core.events.values()) for core in cores)
    assert both.program_instructions == program
    assert both.instructions["dma"] == sum(core.events[k] for core in cores for k in core.events if k[0] == "dma")
    assert both.compile_seconds == pytest.approx(c.compile_fixed_s + c.compile_s_per_instruction * program)


def test_compile_time_follows_the_program_not_the_work():
    """The static loops (tiles within a block) unroll; whole rows of blocks, whole N blocks and whole K blocks are
    dynamic loops: the program does not grow with M, N or K (tests/kernels/test_nki_kernels.py checks K)."""
    small = cost.modelled("matmul", "fast", (1, 512, 512, 512))
    large = cost.modelled("matmul", "fast", (1, 2048, 2048, 2048))
    assert small.program_instructions == sum(small.instructions.values())  # one physical core, one iteration
    assert 2 * large.program_instructions < sum(large.instructions.values()) / large.cores  # loops ran
    assert large.program_instructions == cost.modelled("matmul", "fast", (1, 8192, 2048, 4096)).program_instructions
    c = cost.Calibration()
    assert large.compile_seconds == pytest.approx(c.compile_fixed_s
                                                  + c.compile_s_per_instruction * large.program_instructions)


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


def test_importing_the_cost_model_reads_no_calibration_file():
    environment = {**os.environ, cost.CALIBRATION_VARIABLE: "/nonexistent/calibration.json"}
    subprocess.run([sys.executable, "-c", "import trn_backend.kernels.nki.cost"], check=True, cwd=ROOT,
                   env=environment)


@pytest.mark.parametrize(("content", "match"), [
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
])
def test_a_bad_calibration_file_is_an_error_naming_the_file_and_field(tmp_path, monkeypatch, content, match):
    path = write(tmp_path, content)
    monkeypatch.setenv(cost.CALIBRATION_VARIABLE, path)
    with pytest.raises(ValueError, match=rf"cost calibration file {path}: {match}"):
        cost.calibration()


def test_a_missing_calibration_file_is_an_error_naming_it(tmp_path, monkeypatch):
    monkeypatch.setenv(cost.CALIBRATION_VARIABLE, str(tmp_path / "absent.json"))
    with pytest.raises(ValueError, match=r"cost calibration file .*absent.json: cannot read it"):
        cost.modelled("matmul", "fast", (1, 128, 128, 128))


@pytest.mark.parametrize(("field", "value"), [("tensor_efficiency", 2.0), ("dma_bytes_per_s", 0.0),
                                              ("dma_fixed_s", float("nan")), ("compile_fixed_s", -1.0)])
def test_a_bad_calibration_in_code_is_an_error_naming_the_field(field, value):
    with pytest.raises(ValueError, match=rf"cost.Calibration: {field} must"):
        cost.Calibration(**{field: value})


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
