"""NKI kernel sources use only the documented NKI 0.6.0 API (static check, no toolchain needed), and the checker
itself catches every kind of violation it claims to, so a clean report means something."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from tests.kernels.nki_api_check import check_source, load_table

TABLE = load_table()

CLEAN_KERNEL = '''
"""Tiled C = A.T @ B: HBM -> SBUF by DMA, K-accumulation in PSUM, eviction alternating Vector/Scalar engines."""


@nki.jit
def matmul_kernel(a_t, b):
    k_dim, m_dim = a_t.shape
    _, n_dim = b.shape
    pmax = nl.tile_size.pmax
    fmax = nl.tile_size.gemm_moving_fmax
    out = nl.ndarray((m_dim, n_dim), dtype=nl.float32, buffer=nl.shared_hbm)
    for m in range(m_dim // pmax):
        for n in range(n_dim // fmax):
            acc = nl.ndarray((pmax, fmax), dtype=nl.float32, buffer=nl.psum)
            for k in range(k_dim // pmax):
                a_tile = nl.ndarray((pmax, pmax), dtype=a_t.dtype, buffer=nl.sbuf)
                b_tile = nl.ndarray((pmax, fmax), dtype=b.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=a_tile, src=a_t[k * pmax:(k + 1) * pmax, m * pmax:(m + 1) * pmax])
                nisa.dma_copy(dst=b_tile, src=b[k * pmax:(k + 1) * pmax, n * fmax:(n + 1) * fmax])
                nisa.nc_matmul(acc, a_tile, b_tile, accumulate=(k > 0))
            res = nl.ndarray((pmax, fmax), dtype=nl.float32, buffer=nl.sbuf)
            engine = nisa.vector_engine if (m + n) % 2 == 0 else nisa.engine.scalar
            nisa.tensor_copy(dst=res, src=acc, engine=engine)
            nisa.dma_copy(dst=out[m * pmax:(m + 1) * pmax, n * fmax:(n + 1) * fmax], src=res)
    return out
'''

IMPORT_STYLES = {
    "plain": "import nki\nimport nki.isa as nisa\nimport nki.language as nl\n",
    "toolchain": "from .toolchain import nki, nl, nisa\n",
    "bare": "",
}


def problems(source: str) -> list[str]:
    return check_source(source, TABLE, filename="k.py")


def test_kernel_sources_use_only_documented_api():
    package = importlib.import_module("trn_backend.kernels.nki")
    assert package.__file__ is not None, "kernels/nki/__init__.py (defining KERNEL_SOURCES) is missing"
    root = Path(package.__file__).parent
    sources = tuple(package.KERNEL_SOURCES)
    assert sources, "trn_backend.kernels.nki.KERNEL_SOURCES is empty"
    assert not any(Path(s).parts[0] == "model" for s in sources), "the CPU model is not a kernel source"
    found = [p for s in sources for p in check_source((root / s).read_text(), TABLE, filename=s)]
    assert not found, "\n".join(found)


def test_table_has_key_facts():
    f = TABLE.functions
    assert "NKI 0.6.0" in TABLE.source and "section 11" in TABLE.source
    assert f["nki.isa.nc_matmul"][:3] == ("dst", "stationary", "moving")
    assert "accumulate" in f["nki.isa.nc_matmul"]
    assert f["nki.isa.dma_copy"][:2] == ("dst", "src")
    assert f["nki.isa.tensor_copy"] == ("dst", "src", "engine", "name")
    assert f["nki.language.ndarray"] == ("shape", "dtype", "buffer", "name", "address")
    assert f["nki.jit"] == ("fn", "**kwargs")
    assert sum(name.startswith("nki.isa.") for name in f) == 52
    assert sum(name.startswith("nki.language.") for name in f) == 103
    for name in (
        "nki.language.shared_hbm",
        "nki.language.tile_size.pmax",
        "nki.isa.engine.vector",
        "nki.isa.vector_engine",
        "nki.language.NkiTensor.reshape",
        "nki.language.NkiTensor.shape",
    ):
        assert name in TABLE.known, name
    assert "nki.language.arange" not in TABLE.known
    assert "nki.language.divide" in TABLE.stub_only


@pytest.mark.parametrize("style", IMPORT_STYLES)
def test_clean_kernel_passes(style):
    assert problems(IMPORT_STYLES[style] + CLEAN_KERNEL) == []


PLANTED = [
    ("nisa.nc_matmul_fast(d, s, m)", "`nisa.nc_matmul_fast` is not in the NKI 0.6 API table"),
    ("i = nl.arange(128)[:, None]", "`nl.arange` is not in the NKI 0.6 API table"),
    ("e = nisa.engine.vectorr", "`nisa.engine.vectorr` is not in the NKI 0.6 API table"),
    ("p = nl.tile_size.pmax_bytes", "`nl.tile_size.pmax_bytes` is not in the NKI 0.6 API table"),
    ("import nki.language as lang\nx = lang.mgrid", "`lang.mgrid` is not in the NKI 0.6 API table"),
    ("from nki.isa import nc_matmul_fast", "`nki.isa.nc_matmul_fast` is not in the NKI 0.6 API table"),
    ("y = nl.divide(a, b)", "`nl.divide` is only in the NKI 0.6 stubs"),
    ('nisa.nc_matmul(dst, s, m, rounding="sr")', "`nisa.nc_matmul` has no parameter `rounding`"),
    (
        "from .toolchain import nisa as isa\nisa.tensor_copy(d, s, engine=e, mode=1)",
        "`isa.tensor_copy` has no parameter `mode`",
    ),
    ("nisa.tensor_copy(d, s, e, None, 1)", "`nisa.tensor_copy` takes at most 4 positional arguments, got 5"),
    ("nisa.dma_copy(d, s, dst=d)", "`nisa.dma_copy` got parameter `dst` both positionally and by keyword"),
    ("import neuronxcc.nki", "use the `nki` package, not `neuronxcc`"),
    ("from neuronxcc import nki", "use the `nki` package, not `neuronxcc`"),
    ("import neuronxcc.nki.language as nl", "use the `nki` package, not `neuronxcc`"),
    ("def k(a, *, b):\n    return a", "`k` has a bare `*`"),
    ("def k(a, *args):\n    return a", "`k` has `*args`"),
    ("def k(a, **kw):\n    return a", "`k` has `**kw`"),
    ("if x is None:\n    pass", "`x is None` uses `is`/`is not`"),
    ("ok = x is not y", "`x is not y` uses `is`/`is not`"),
    ("nisa.dma_copy(dst=[1], src=s)", "`nisa.dma_copy` gets a list as `dst=`; NKI wants a tuple"),
    ("f([a, b])", "`f` gets a list as a positional argument; NKI wants a tuple"),
    (
        "v = t.ap(((4, 1), (1, 4)), offset=0)",
        "`t.ap` gets its access pattern as a tuple; it is a list of [stride, count] lists",
    ),
    ("v = t.ap(pattern=((4, 1), (1, 4)))", "`t.ap` gets its access pattern as a tuple"),
    ("t = nl.ndarray([i for i in s], dtype=nl.float32)", "`nl.ndarray` gets a list as a positional argument"),
    ('t = nl.ndarray((2, 2), nl.float32, buffer="sbuf")', "`nl.ndarray` gets buffer='sbuf'"),
]


@pytest.mark.parametrize(("snippet", "message"), PLANTED, ids=[m for _, m in PLANTED])
def test_checker_catches_planted_violation(snippet, message):
    source = "x = 1\n" + snippet + "\n"  # the violation starts on line 2
    found = problems(source)
    assert any(p.startswith("k.py:") and message in p for p in found), found
    assert all(p.startswith(("k.py:2:", "k.py:3:")) for p in found), found


def test_planted_violation_in_clean_kernel_is_reported_with_its_line():
    source = CLEAN_KERNEL.replace("accumulate=(k > 0)", "accumulate=(k > 0), rounding=nl.rne")
    line = next(i for i, text in enumerate(source.splitlines(), 1) if "rounding=" in text)
    assert problems(source) == [
        f"k.py:{line}: `nisa.nc_matmul` has no parameter `rounding` (NKI 0.6: "
        + ", ".join(TABLE.functions["nki.isa.nc_matmul"])
        + ")",
        f"k.py:{line}: `nl.rne` is not in the NKI 0.6 API table",
    ]


LNC_KERNEL = """
def spmd(x, states):
    p, programs = nl.program_id(0), nl.num_programs(axes=0)
    assert nl.program_ndim() == 1
    out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    scratch = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.private_hbm)
    seeds = nl.ndarray((128, 6), dtype=nl.uint32, buffer=nl.sbuf)
    nisa.dma_copy(dst=seeds, src=states[p])
    nisa.rand_set_state(seeds, engine=nisa.gpsimd_engine)
    nisa.dma_copy(dst=scratch, src=x)
    nisa.dma_copy(dst=out, src=scratch)
    return out
"""


def test_lnc_and_rng_names_the_kernels_use_are_documented():
    """program_id, num_programs, program_ndim, private_hbm scratch and rand_set_state are documented NKI 0.6."""
    assert problems(IMPORT_STYLES["toolchain"] + LNC_KERNEL) == []


@pytest.mark.parametrize(
    ("snippet", "message"),
    [
        ("p = nl.program_idx(0)", "`nl.program_idx` is not in the NKI 0.6 API table"),
        ("p = nl.num_programs(axis=0)", "`nl.num_programs` has no parameter `axis`"),
        ("nisa.rand_set_state(s, engine=e, seed=1)", "`nisa.rand_set_state` has no parameter `seed`"),
        ("nisa.rand_set_seed(s)", "`nisa.rand_set_seed` is not in the NKI 0.6 API table"),
        ("t = nl.ndarray((2, 2), nl.float32, buffer=nl.private_dram)", "`nl.private_dram` is not in the NKI 0.6 API"),
    ],
)
def test_near_misses_of_the_lnc_and_rng_names_are_rejected(snippet, message):
    found = problems("x = 1\n" + snippet + "\n")
    assert any(message in p for p in found), found
