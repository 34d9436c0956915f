"""Torch reference implementations of the precision modes: the executable specification of each mode.

Each takes [..., M, K] and [..., K, N] tensors (2-D or batched 3-D) and returns the product. They run on any
torch device (CPU, CUDA, Neuron through torch-neuronx).

One module per mode: ``_native``, ``_fast``, ``_sr``, ``_dd``, ``_bf16x6``, ``_ozaki``, ``_fp64`` (``MODES`` maps
each mode name to its function; ``RENAMED`` maps the former name "kahan" to fp64); what they share (the kernel
contract, the errors, the bf16 word split, scaling, blocking) is in ``_common``, the engine result of a word split
(fast, sr, dd, bf16x6) in ``_split``, ozaki's level sums on hosts with float64 GEMMs in ``_ozaki_f64``, and the
numbers and error bounds each mode is defined by in ``kernels/bounds.py``. Import the modes and their pieces from
this package.
"""

from __future__ import annotations

import warnings

from ..bounds import (
    BF16X6_CHUNK,
    BF16X6_GROUP,
    DIGIT_GROWTH,
    MAX_SLICES,
    OZAKI_RANGE,
    SLICE_BITS,
    U_FP32,
    U_FP64,
    UNDERFLOW_ALLOWANCE,
    UNDERFLOW_TERM,
    gamma,
    ozaki_default_slices,
    ozaki_error,
)
from ._bf16x6 import bf16x6
from ._common import BLOCK_FRACTION, MIN_BLOCK_ELEMENTS, PrecisionError, PrecisionWarning
from ._dd import dd
from ._fast import fast
from ._fp64 import fp64
from ._native import native, textbook_specials
from ._ozaki import EXACT_CHUNK, exact_levels, ozaki, ozaki_slices
from ._sr import sr

# The names this package publishes: the modes, their constants, and the errors (defined in trn_backend.errors).
# The kernel layer and the tests reach the modes' private pieces in the modules that define them.
__all__ = [
    "BF16X6_CHUNK",
    "BF16X6_GROUP",
    "BLOCK_FRACTION",
    "DIGIT_GROWTH",
    "EXACT_CHUNK",
    "MAX_SLICES",
    "MIN_BLOCK_ELEMENTS",
    "MODES",
    "OZAKI_RANGE",
    "PASSES",
    "SLICE_BITS",
    "U_FP32",
    "U_FP64",
    "UNDERFLOW_ALLOWANCE",
    "UNDERFLOW_TERM",
    "PrecisionError",
    "PrecisionWarning",
    "bf16x6",
    "dd",
    "exact_levels",
    "fast",
    "gamma",
    "RENAMED",
    "fp64",
    "native",
    "ozaki",
    "renamed",
    "ozaki_default_slices",
    "ozaki_error",
    "ozaki_slices",
    "sr",
    "textbook_specials",
]

MODES = {
    "native": native,
    "fast": fast,
    "sr": sr,
    "dd": dd,
    "bf16x6": bf16x6,
    "ozaki": ozaki,
    "fp64": fp64,
}
# Names a mode had, kept for one release: they run the mode under its new name and say so (FutureWarning).
# "kahan" promised compensated summation, which the mode never ran: it is a float64 product on the host.
RENAMED = {"kahan": "fp64"}


def renamed(mode: str, func: str = "kernels") -> str:
    """The mode a former name stands for, with a FutureWarning naming the new one; an unknown name is a
    ValueError listing the known ones."""
    new = RENAMED.get(mode)
    if new is None:
        raise ValueError(f"{func}: unknown kernel mode {mode!r}; known: {', '.join(MODES)}")
    warnings.warn(
        f"{func}: precision mode {mode!r} is deprecated and will be removed in the next release: it is a "
        f"float64 product on the host, without compensated summation; use {new!r}, the same mode",
        FutureWarning,
        stacklevel=3,
    )
    return new


# Each mode's bf16 Tensor Engine passes, given ozaki's slice count: its cost in the precision registry
# (trn_backend._precision) and the pass-count basis of target-based selection (trn_backend._mode_costs). native is
# not emulated (None); fp64 makes none (a float64 product on the host); ozaki's s(s+1)/2 digit levels add one fast
# pass that measures the data's dynamic range.
PASSES = {
    "native": lambda s: None,
    "fast": lambda s: 1,
    "sr": lambda s: 1,
    "dd": lambda s: 3,
    "bf16x6": lambda s: 6,
    "ozaki": lambda s: s * (s + 1) // 2 + 1,
    "fp64": lambda s: 0,
}
