"""Small NKI kernels that probe what the matmul kernels assume of the device (``check-neuron``'s device
assumptions section): how the Vector Engine rounds fp32 add and subtract, and whether the runtime's
stochastic-rounding switch reaches a cast issued inside a kernel.

- ``add_subtract``: x + y and x - y of fp32 tiles, one Vector Engine ``tensor_tensor`` each. dd's and bf16x6's
  split (lo = x - hi, exact) and bf16x6's TwoSum are exact only if these are correctly rounded (IEEE, nearest
  even), which the NKI documentation does not say.
- ``round_to_bf16``: an fp32 tile cast to bf16 by ``tensor_copy`` on the Vector Engine, the on-chip cast whose
  rounding NEURON_RT_STOCHASTIC_ROUNDING_EN may change (no NKI instruction has a rounding-mode argument).

Style as in ``matmul.py``: plain functions (the host jits them), only documented NKI 0.6 names, no ``is``, no
``*`` in signatures, tuples not lists.
"""

from .toolchain import nisa, nl


def add_subtract(x, y):
    """out[0] = x + y, out[1] = x - y for fp32 x, y [P <= 128, F] in HBM, each on the Vector Engine in fp32."""
    rows, cols = x.shape
    out = nl.ndarray((2, rows, cols), dtype=nl.float32, buffer=nl.shared_hbm)
    xt = nl.ndarray((rows, cols), dtype=nl.float32, buffer=nl.sbuf)
    yt = nl.ndarray((rows, cols), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=xt, src=x)
    nisa.dma_copy(dst=yt, src=y)
    total = nl.ndarray((rows, cols), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=total, data1=xt, data2=yt, op=nl.add, engine=nisa.vector_engine)
    difference = nl.ndarray((rows, cols), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=difference, data1=xt, data2=yt, op=nl.subtract, engine=nisa.vector_engine)
    nisa.dma_copy(dst=out[0], src=total)
    nisa.dma_copy(dst=out[1], src=difference)
    return out


def round_to_bf16(x):
    """fp32 x [P <= 128, F] in HBM -> bf16 [P, F]: the cast of ``tensor_copy`` on the Vector Engine."""
    rows, cols = x.shape
    out = nl.ndarray((rows, cols), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    wide = nl.ndarray((rows, cols), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=wide, src=x)
    narrow = nl.ndarray((rows, cols), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.tensor_copy(dst=narrow, src=wide, engine=nisa.vector_engine)
    nisa.dma_copy(dst=out, src=narrow)
    return out
