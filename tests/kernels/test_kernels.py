"""Routing between torch and the NKI kernels: the CPU default never changes, config and its environment variables
move the threshold or send CPU steps to the kernels on the CPU model, the default threshold is the cost model's
break-even with the launch overhead, and explain() shows which implementation runs each step."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
import torch

import trn_backend as xp
from tests.support import assert_same, from_numpy
from trn_backend import _config, _precision, config, kernels
from trn_backend.contraction import plan as planner
from trn_backend.contraction.parse import parse
from trn_backend.kernels import reference
from trn_backend.kernels.nki import cost, toolchain

BIG = (1, 4096, 4096, 4096)


def test_cpu_default_runs_torch_whatever_the_size():
    assert config.nki == "auto"
    for mode in ("fast", "native"):
        assert kernels.implementation("matmul", mode, torch.float32, torch.device("cpu"), BIG) == "torch.matmul"
    a, b = xp.ones((64, 64)), xp.ones((64, 64))
    with kernels.count_calls() as calls, config.set(nki_min_flops=0):
        xp.einsum("ij,jk->ik", a, b, precision="fast")
    assert not any(name.startswith("nki.") for name, _ in calls)


def test_model_routing_runs_the_kernels_within_the_bound():
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(300, 200, generator=g), torch.randn(200, 150, generator=g)
    exact = a.double() @ b.double()
    scale = a.double().abs() @ b.double().abs()
    with config.set(nki="model", nki_min_flops=0):
        for mode in ("fast", "native"):
            with kernels.count_calls() as calls:
                c = xp.einsum("ij,jk->ik", xp.asarray(a), xp.asarray(b), precision=mode)
                batched = xp.matmul(xp.asarray(a.reshape(2, 150, 200)), xp.asarray(b), precision=mode)
            assert calls["nki.matmul", mode] + calls["nki.bmm", mode] == 2, calls
            bound = xp.error_bound(mode, xp.float32, 200)
            assert float(((torch.from_numpy(np.asarray(c)).double() - exact).abs() / scale).max()) <= bound
            assert np.asarray(batched).shape == (2, 150, 150)


def test_fast_on_nki_keeps_the_reference_scaling():
    """Products beyond fp32's range that cancel: the fast route scales rows and columns by powers of two on the
    host exactly as the reference does, so the Tensor Engine never sees inf - inf."""
    a, b = xp.asarray([[2.0**100, 2.0**100]]), xp.asarray([[2.0**30], [-(2.0**30)]])
    with config.set(nki="model", nki_min_flops=0), kernels.count_calls() as calls:
        c = xp.matmul(a, b, precision="fast")
    assert calls["nki.matmul", "fast"] == 1
    assert float(c[0, 0]) == 0.0


def test_what_never_routes_to_nki():
    cpu = torch.device("cpu")
    with config.set(nki="model", nki_min_flops=0):
        assert kernels.implementation("matmul", "fp64", torch.float32, cpu, BIG) == "torch.matmul"  # host fp64
        assert kernels.implementation("matmul", "native", torch.float64, cpu, BIG) == "torch.matmul"  # no fp64
        assert kernels.implementation("matmul", "dd", torch.float64, cpu, BIG) == "nki.matmul[dd]"
        assert kernels.implementation("bmm", "ozaki", torch.float64, cpu, BIG, {"slices": 6}) == "nki.bmm[ozaki]"
        assert kernels.implementation("matmul", "sr", torch.float32, cpu, BIG, {"generator": None}) == "torch.matmul"
        assert kernels.implementation("bmm", "native", torch.complex64, cpu, BIG) == "torch.bmm"
        assert kernels.implementation("matmul", "native", torch.float32, cpu, (1, 5, 0, 5)) == "torch.matmul"
        assert kernels.implementation("matmul", "fast", torch.float32, cpu, BIG) == "nki.matmul[fast]"
        with kernels.count_calls() as calls, xp.precision("sr", generator=torch.Generator().manual_seed(1)):
            xp.matmul(xp.ones((8, 8)), xp.ones((8, 8)))  # sr with its generator runs the reference
            xp.matmul(xp.ones((8, 8), dtype=xp.float64), xp.ones((8, 8), dtype=xp.float64), precision="native")
        assert not any(name.startswith("nki.") for name, _ in calls)
    with config.set(nki="off", nki_min_flops=0):
        assert kernels.implementation("matmul", "fast", torch.float32, cpu, BIG) == "torch.matmul"


@pytest.mark.heavy
def test_neuron_devices_route_only_with_the_real_toolchain(monkeypatch):
    device = torch.device("xla", 0)
    assert kernels.implementation("matmul", "fast", torch.float32, device, BIG) == "torch.matmul"  # no nki here
    monkeypatch.setattr(toolchain, "REAL", True)
    with kernels.first_calls():  # a first call compiles: seconds, more than the kernel's milliseconds
        assert kernels.implementation("matmul", "fast", torch.float32, device, BIG) == "torch.matmul"
    assert kernels.implementation("matmul", "fast", torch.float32, device, BIG, compiled=True) == "nki.matmul[fast]"
    assert (
        kernels.implementation("bmm", "native", torch.float32, device, (4, 2048, 2048, 2048), compiled=True)
        == "nki.bmm[native]"
    )
    small = (1, 256, 256, 256)
    assert kernels.implementation("matmul", "fast", torch.float32, device, small) == "torch.matmul"
    with config.set(nki_min_flops=2 * 256**3):
        assert kernels.implementation("matmul", "fast", torch.float32, device, small) == "nki.matmul[fast]"
    with config.set(nki="off"):
        assert kernels.implementation("matmul", "fast", torch.float32, device, BIG) == "torch.matmul"


@pytest.mark.heavy
@pytest.mark.parametrize("mode", ["fast", "native"])
def test_default_threshold_is_where_the_modelled_kernel_time_reaches_the_launch_overhead(mode):
    flops = cost.default_min_flops(mode)
    n = round((flops / 2) ** (1 / 3))
    assert n % 128 == 0 and 2 * n**3 == flops
    launch = cost.calibration().launch_s
    assert cost.modelled("matmul", mode, (1, n, n, n)).seconds >= launch
    assert cost.modelled("matmul", mode, (1, n - 128, n - 128, n - 128)).seconds < launch
    assert cost.default_min_flops("native") < cost.default_min_flops("fast")  # fp32 passes take 4x longer


def test_config_validation_and_environment(monkeypatch):
    with pytest.raises(ValueError, match="config.nki must be one of auto, off, model, got 'on'"):
        config.nki = "on"
    for bad in (-1, float("nan"), "1e9", True):
        with pytest.raises(ValueError, match="config.nki_min_flops must be a number >= 0 or None"):
            config.nki_min_flops = bad
    with pytest.raises(AttributeError, match="config has no setting 'threshold'"), config.set(threshold=1):
        pass
    assert config.nki == "auto" and config.nki_min_flops is None  # restored
    monkeypatch.setenv("TRN_BACKEND_NKI", "model")
    monkeypatch.setenv("TRN_BACKEND_NKI_MIN_FLOPS", "1e9")
    assert repr(_config._from_environment()) == "Config(nki='model', nki_min_flops=1000000000.0)"
    monkeypatch.setenv("TRN_BACKEND_NKI_MIN_FLOPS", "lots")
    with pytest.raises(ValueError, match="TRN_BACKEND_NKI_MIN_FLOPS"):
        _config._from_environment()


def test_toolchain_selection(monkeypatch):
    assert toolchain.NAME == "cpu-model" and not toolchain.REAL  # no Neuron package index here
    with pytest.raises(ImportError, match="NKI toolchain is not installed"):
        toolchain.select("nki")
    with pytest.raises(ValueError, match="expected auto, model or nki"):
        toolchain.select("simulator")
    bound = toolchain.kernels_on("model")
    assert bound.nl.__name__.endswith("model.language") and bound.nisa.__name__.endswith("model.isa")


@pytest.mark.heavy
def test_explain_shows_the_implementation_and_modelled_time():
    e = xp.explain("ij,jk->ik", (4096, 4096), (4096, 4096))
    assert e.implementations == ("torch.matmul",) and e.modelled == (None,)
    assert "torch.matmul" in str(e)
    with config.set(nki="model"), kernels.first_calls():
        e = xp.explain(
            "ij,jk,kl->il", (4096, 4096), (4096, 4096), (4096, 8), precision="fast", optimize=[(0, 1), (0, 1)]
        )
    # the first call of the 4096^3 step runs torch while the kernel compiles; explain models the kernel
    assert e.implementations == ("torch.matmul", "torch.matmul") and "torch.matmul (first call)" in str(e)
    estimate = next(m for m in e.modelled if m is not None)
    efficiency = cost.calibration().tensor_efficiency  # the Tensor Engine's achieved fraction of its peak
    assert 0.7 * efficiency <= estimate.utilization <= efficiency  # A transposed on chip: see the kernel tests
    assert f"{estimate.seconds * 1e3:.3g} ms, 1 bf16 pass" in str(e)
    with config.set(nki="model", nki_min_flops=0):
        text = str(xp.explain("ij,jk->ik", (256, 300), (300, 128), precision="dd", dtype=xp.float64))
        assert "nki.matmul[dd]" in text and "3 bf16 passes" in text
        text = str(xp.explain("ij,jk->ik", (256, 300), (300, 128), precision="ozaki", dtype=xp.float32))
        assert "nki.matmul[ozaki]" in text and "11 bf16 passes" in text  # 4 slices: 10, and the range pass


# --- the routing rule pays a kernel's compile ---


@pytest.fixture
def calibrated(tmp_path, monkeypatch):
    """Point the cost model at a calibration file of the given fields (a tiny launch cost, so 128^3 is worth a
    kernel and the model runs fast)."""

    def use(**fields):
        path = tmp_path / f"calibration{len(list(tmp_path.iterdir()))}.json"
        path.write_text(json.dumps({"launch_s": 1e-9, **fields}))
        monkeypatch.setenv(cost.CALIBRATION_VARIABLE, str(path))
        return cost.calibration()

    return use


def _run(a, b):
    with kernels.count_calls() as calls:
        kernels.matmul(a, b, "fast")
    return calls["nki.matmul", "fast"]


def test_a_first_call_runs_torch_while_compiling_costs_more_than_the_kernel(calibrated):
    calibrated(compile_fixed_s=10.0)
    a, b = torch.randn(128, 128), torch.randn(128, 128)
    with config.set(nki="model"), kernels.first_calls():
        assert kernels.implementation("matmul", "fast", torch.float32, a.device, (1, 128, 128, 128)) == "torch.matmul"
        assert _run(a, b) == 0  # the first call: torch
        assert _run(a, b) == 1  # compiled from here on
        assert _run(a, b) == 1
        assert _run(torch.randn(128, 256), torch.randn(256, 128)) == 0  # another shape: another first call
    with config.set(nki="model"), kernels.first_calls():
        assert _run(a, b) == 0  # the state is per process: first_calls() showed a fresh one


def test_a_kernel_that_outweighs_its_compile_runs_on_the_first_call(calibrated):
    calibration = calibrated(compile_fixed_s=0.0, compile_s_per_instruction=0.0)
    a, b = torch.randn(128, 128), torch.randn(128, 128)
    estimate = cost.modelled("matmul", "fast", (1, 128, 128, 128), calibration=calibration)
    assert estimate.compile_seconds == 0.0 <= estimate.seconds
    with config.set(nki="model"), kernels.first_calls():
        assert _run(a, b) == 1


def test_compile_time_is_the_calibrated_line_through_the_program_size(calibrated):
    calibration = calibrated(compile_fixed_s=2.0, compile_s_per_instruction=1e-3)
    estimate = cost.modelled("matmul", "fast", (1, 256, 256, 256), calibration=calibration)
    assert estimate.program_instructions > 0
    assert estimate.compile_seconds == pytest.approx(2.0 + 1e-3 * estimate.program_instructions, rel=1e-12)


def test_an_explicit_threshold_routes_by_flops_alone(calibrated):
    calibrated(compile_fixed_s=10.0)
    a, b = torch.randn(128, 128), torch.randn(128, 128)
    with config.set(nki="model", nki_min_flops=0), kernels.first_calls():
        assert _run(a, b) == 1


def test_explain_shows_the_first_call_and_the_program(calibrated):
    calibrated(compile_fixed_s=10.0)
    with config.set(nki="model"), kernels.first_calls():
        first = xp.explain("ij,jk->ik", (128, 128), (128, 128), precision="fast", dtype=xp.float32)
        assert first.implementations == ("torch.matmul",)
        estimate = first.modelled[0]
        text = str(first)
        assert "torch.matmul (first call)" in text
        compile_s = cost.format_seconds(10.0 + 1e-4 * estimate.program_instructions)
        assert f"{estimate.program_instructions:,} instructions (compile ~{compile_s})" in text
        kernels.matmul(torch.randn(128, 128), torch.randn(128, 128), "fast")
        then = xp.explain("ij,jk->ik", (128, 128), (128, 128), precision="fast", dtype=xp.float32)
        assert then.implementations == ("nki.matmul[fast]",) and "(first call)" not in str(then)


# --- kernels.mul, and the steps with nothing to contract ---

CPU = torch.device("cpu")
INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
SHAPES = [((3, 4), (3, 4)), ((3, 1), (1, 4)), ((2, 3, 4), (4,)), ((5,), (2, 1, 5)), ((), (2, 3)), ((0, 3), (1, 3))]


def _data(dtype: str, shape, rng: np.random.Generator) -> np.ndarray:
    if dtype == "bool":
        return np.asarray(rng.integers(0, 2, shape).astype(bool))
    if dtype in INTS:
        info = np.iinfo(dtype)
        return np.asarray(rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True))
    x = rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4, shape)
    if dtype.startswith("complex"):
        x = x + 1j * rng.standard_normal(shape)
    return np.asarray(x).astype(dtype)


@pytest.mark.parametrize("dtype", ["bool", *INTS, "float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize(("sa", "sb"), SHAPES)
def test_mul_matches_numpy_for_every_dtype_and_broadcast(dtype, sa, sb):
    rng = np.random.default_rng(len(sa) * 10 + len(sb))
    a, b = _data(dtype, sa, rng), _data(dtype, sb, rng)
    with np.errstate(over="ignore"):
        expected = np.multiply(a, b)  # integers wrap, bool is a logical and
    got = kernels.mul(torch.from_numpy(a), torch.from_numpy(b))
    assert got.dtype == torch.from_numpy(a).dtype
    assert got.shape == expected.shape
    if dtype in ("float32", "float64"):
        np.testing.assert_array_equal(got.numpy(), expected)  # one correctly rounded product each
    elif dtype.startswith("complex"):
        np.testing.assert_allclose(got.numpy(), expected, rtol=4 * np.finfo(dtype).eps, atol=0)
    else:
        np.testing.assert_array_equal(got.numpy(), expected)


def test_complex_inf_and_nan_as_numpy():
    inf, nan = np.inf, np.nan
    values = [
        complex(inf, 0),
        complex(0, inf),
        complex(inf, inf),
        complex(nan, 0),
        complex(-inf, 1),
        0j,
        1 + 2j,
        complex(1, -inf),
    ]
    a = np.array([x for x, _ in itertools.product(values, values)], dtype=np.complex128)
    b = np.array([y for _, y in itertools.product(values, values)], dtype=np.complex128)
    with np.errstate(invalid="ignore"):
        expected = a * b
    for dtype in (np.complex128, np.complex64):
        got = kernels.mul(torch.from_numpy(a.astype(dtype)), torch.from_numpy(b.astype(dtype))).numpy()
        np.testing.assert_array_equal(np.isnan(got.real), np.isnan(expected.real))
        np.testing.assert_array_equal(np.isnan(got.imag), np.isnan(expected.imag))
        finite = ~np.isnan(expected.real)
        np.testing.assert_array_equal(got.real[finite], expected.real[finite])
        finite = ~np.isnan(expected.imag)
        np.testing.assert_array_equal(got.imag[finite], expected.imag[finite])


@pytest.mark.parametrize("mode", sorted(reference.MODES))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64])
def test_every_mode_is_one_rounding(mode, dtype):
    """Native arithmetic is within every mode's bound at K = 1 (docstring of kernels.mul)."""
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(4, 5, dtype=dtype, generator=g), torch.randn(1, 5, dtype=dtype, generator=g)
    params = {"generator": torch.Generator().manual_seed(1)} if mode == "sr" else {}
    with kernels.count_calls() as calls:
        got = kernels.mul(a, b, mode, **params)
    assert calls == {("mul", mode): 1}
    assert torch.equal(got, a * b)
    real = torch.float32 if dtype is not torch.float64 else torch.float64
    if not dtype.is_complex and mode not in ("native",):  # within the mode's own published bound at K = 1
        bound = _precision.error_bound(mode, real, 1, **({"slices": 2} if mode == "ozaki" else {}))
        exact = a.double() * b.double()
        assert ((got.double() - exact).abs() <= bound * exact.abs()).all()


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_sr_rounds_narrow_products_stochastically_and_unbiased(dtype):
    g = torch.Generator().manual_seed(3)
    a = torch.randn(64, dtype=torch.float32, generator=g).to(dtype)
    b = torch.randn(64, dtype=torch.float32, generator=g).to(dtype)
    exact = a.double() * b.double()
    draws = torch.stack([kernels.mul(a, b, "sr", generator=torch.Generator().manual_seed(s)) for s in range(400)])
    assert draws.dtype == dtype
    # every draw is one of the exact product's two neighbours in dtype
    nearest = exact.to(torch.float32).to(dtype)
    down = torch.nextafter(nearest, nearest.new_tensor(-torch.inf))
    up = torch.nextafter(nearest, nearest.new_tensor(torch.inf))
    lo = torch.where(nearest.double() > exact, down, nearest)
    hi = torch.where(nearest.double() < exact, up, nearest)
    assert ((draws == lo) | (draws == hi)).all()
    assert (draws != draws[0]).any()  # stochastic, not nearest
    # unbiased: the mean of the draws approaches the exact product (400 draws: within ~5 sigma of an ulp/2)
    ulp = (hi.double() - lo.double()).clamp(min=1e-30)
    mean_error = (draws.double().mean(0) - exact) / ulp
    assert mean_error.abs().max() < 5 * 0.5 / 400**0.5
    # the generator seeds it; native rounds to nearest
    same = kernels.mul(a, b, "sr", generator=torch.Generator().manual_seed(0))
    assert torch.equal(same, draws[0])
    assert torch.equal(kernels.mul(a, b), (a.float() * b.float()).to(dtype))


def test_mul_errors_name_the_problem():
    a, b = torch.ones(2, 3), torch.ones(3, 2)
    with pytest.raises(ValueError, match="broadcastable"):
        kernels.mul(a, b)
    with pytest.raises(TypeError, match="one dtype"):
        kernels.mul(a, b.T.double())
    with pytest.raises(ValueError, match="unknown kernel mode"):
        kernels.mul(a, a, "nope")
    ints = torch.ones(2, dtype=torch.int32)
    with pytest.raises(TypeError, match="floating-point"):
        kernels.mul(ints, ints, "dd")
    assert torch.equal(kernels.mul(ints, ints), ints)


def test_mul_never_routes_to_nki():
    with _config.config.set(nki="model", nki_min_flops=0):
        assert kernels.implementation("mul", "fast", torch.float32, CPU, (1, 64, 1, 64)) == "torch.mul"
        with kernels.count_calls() as calls:
            kernels.mul(torch.ones(64, 1), torch.ones(1, 64), "fast")
    assert calls == {("mul", "fast"): 1}


# --- plans: every step without a contracted index is a mul, in output order ---

NO_CONTRACTION = [
    ("ij,ij->ij", [(3, 4), (3, 4)]),  # Hadamard
    ("ij,ij->ji", [(3, 4), (3, 4)]),
    ("i,j->ij", [(3,), (4,)]),  # outer
    ("ij,kl->ljki", [(2, 3), (4, 5)]),
    ("ij,j->ij", [(3, 4), (4,)]),  # broadcast
    ("bi,bj->bij", [(2, 3), (2, 4)]),  # batched outer
    ("bi,bj->jbi", [(2, 3), (2, 4)]),
    ("ij,kl->ik", [(2, 3), (4, 5)]),  # indices of one operand summed first
    ("iij,k->kj", [(3, 3, 2), (4,)]),  # a diagonal first
    ("ij,jk->ik", [(3, 1), (1, 4)]),  # a contracted index of size 1: nothing to contract
    ("ij,jk->ijk", [(3, 1), (5, 4)]),  # size-1 j broadcast
    ("ij,jk->ik", [(3, 1), (5, 4)]),  # j of size 1 in A: summed in B alone
    ("i,i->", [(1,), (1,)]),
    ("ij,kl->ijkl", [(0, 2), (3, 4)]),
]


@pytest.mark.parametrize(("subscripts", "shapes"), NO_CONTRACTION)
@pytest.mark.parametrize("dtype", ["float64", "int64", "bool", "complex128"])
def test_no_contraction_steps_run_mul_never_bmm(subscripts, shapes, dtype):
    rng = np.random.default_rng(7)
    ops = [_data(dtype, s, rng) for s in shapes]
    spec = parse(subscripts, tuple(shapes))
    p = planner.entry(spec.inputs, spec.output, tuple(shapes), (torch.float64,) * 2).base
    assert p.kernel == "mul" and p.out_perm is None and p.out_shape is None and p.bmkn[2] == 1
    assert p.flops == p.size  # one multiply per output element
    with kernels.count_calls() as calls:
        got = xp.einsum(subscripts, *map(from_numpy, ops))
    assert set(calls) == {("mul", "native")} and calls["mul", "native"] == 1
    with np.errstate(over="ignore"):
        expected = (
            np.einsum(subscripts, *ops)
            if dtype != "bool"
            else np.einsum(subscripts, *(o.astype(np.int64) for o in ops)) > 0
        )
    assert_same(got, expected.astype(dtype), rtol=1e-12 if dtype != "bool" else None)


def test_hadamard_network_and_integers_wrap():
    a = np.array([[200, 3], [7, 255]], dtype=np.uint8)
    with kernels.count_calls() as calls:
        got = xp.einsum("ij,ij,ij->ij", *(from_numpy(a),) * 3)
    assert set(calls) == {("mul", "native")} and calls["mul", "native"] == 2
    np.testing.assert_array_equal(np.asarray(got), a * a * a)
    with kernels.count_calls() as calls:
        xp.tensordot(from_numpy(a.astype(np.float32)), from_numpy(a.astype(np.float32)), axes=0)
    assert set(calls) == {("mul", "native")}


def test_mul_steps_under_modes_and_targets():
    a, b = (from_numpy(np.random.default_rng(s).standard_normal(5)) for s in (1, 2))
    exact = np.multiply.outer(np.asarray(a), np.asarray(b))
    for mode in ("fast", "dd", "ozaki", "fp64"):
        with kernels.count_calls() as calls:
            got = xp.einsum("i,j->ij", a, b, precision=mode)
        assert calls == {("mul", mode): 1}
        np.testing.assert_array_equal(np.asarray(got), exact)
    got = xp.einsum("i,j->ij", a, b, target_forward_error=1e-3)
    np.testing.assert_array_equal(np.asarray(got), exact)
    got = xp.einsum("i,j->ij", a, b, target_relative_error=1e-15)
    np.testing.assert_array_equal(np.asarray(got), exact)
    (check,) = xp.last_precision_report()
    assert check.met and check.K == 1 and check.estimate <= 2.0**-53
    with pytest.raises(_precision.PrecisionError, match="einsum"):  # refused a priori
        xp.einsum("i,j->ij", a, b, target_relative_error=1e-20)
    # a product that underflows to zero from nonzero operands is not vouched for
    tiny = from_numpy(np.array([1e-200]))
    with pytest.raises(_precision.PrecisionError, match="out of reach"):
        xp.einsum("i,j->ij", tiny, tiny, target_relative_error=1e-3)


def test_explain_shows_mul():
    e = xp.explain("ij,kl->ijkl", (3, 4), (4, 5))
    (p,) = e.steps
    assert p.kernel == "mul" and e.implementations == ("torch.mul",) and e.flops == 3 * 4 * 4 * 5
    assert "torch.mul" in str(e)


def test_full_contraction_is_a_dot():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 4, 5, 6)), rng.standard_normal((6, 5, 4, 3))
    with kernels.count_calls() as calls:
        got = xp.einsum("abcd,dcba->", from_numpy(a), from_numpy(b))
    assert calls == {("matmul", "native"): 1}
    assert_same(got, np.einsum("abcd,dcba->", a, b), rtol=1e-12)


@pytest.mark.parametrize("kernel", ["matmul", "bmm"])
def test_native_refuses_parameters_it_does_not_take(kernel):
    # the kernel layer's direct mm/bmm call for native must not drop a mode parameter native does not accept
    a, b = (torch.ones(2, 3), torch.ones(3, 4)) if kernel == "matmul" else (torch.ones(1, 2, 3), torch.ones(1, 3, 4))
    with pytest.raises(TypeError, match="slices"):
        getattr(kernels, kernel)(a, b, "native", slices=3)
