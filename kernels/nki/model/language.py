"""``nki.language`` as the CPU model provides it: dtypes, buffers, tile sizes, allocation, and the elementwise
operators that ISA instructions take as ``op=``. Only what our kernels use is here; anything else is an
AttributeError, so a kernel cannot lean on a name the model does not check."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from . import core

__all__ = [
    "ndarray",
    "tile_size",
    "Op",
    "add",
    "subtract",
    "multiply",
    "copy",
    "bitwise_and",
    "float32",
    "float16",
    "bfloat16",
    "float8_e4m3",
    "float8_e5m2",
    "int8",
    "int16",
    "int32",
    "uint8",
    "uint16",
    "uint32",
    "bool_",
    "sbuf",
    "psum",
    "hbm",
    "private_hbm",
    "shared_hbm",
    "program_id",
    "num_programs",
    "program_ndim",
    "NKIObject",
]

float32 = np.dtype(np.float32)
float16 = np.dtype(np.float16)
bfloat16 = np.dtype(ml_dtypes.bfloat16)
float8_e4m3 = np.dtype(ml_dtypes.float8_e4m3)
float8_e5m2 = np.dtype(ml_dtypes.float8_e5m2)
int8, int16, int32 = np.dtype(np.int8), np.dtype(np.int16), np.dtype(np.int32)
uint8, uint16, uint32 = np.dtype(np.uint8), np.dtype(np.uint16), np.dtype(np.uint32)
bool_ = np.dtype(np.bool_)

sbuf, psum = core.SBUF, core.PSUM
private_hbm = hbm = core.PRIVATE_HBM  # nl.hbm is an alias of nl.private_hbm
shared_hbm = core.SHARED_HBM


class NKIObject:
    """``nl.NKIObject``: the base of the classes a kernel may use. NKI traces only instances of classes that inherit
    it (and builtins, plain tuples), reading only the object's ``__dict__`` (nki/get-started/nki-language-guide.rst,
    class support; NKI_FACTS.md section 14); the model refuses other classes (model/__init__.py)."""


class _TileSize:
    """``nl.tile_size``: the limits of the target the kernel runs on."""

    @property
    def pmax(self) -> int:
        return core.current().target.partitions

    @property
    def gemm_stationary_fmax(self) -> int:
        return core.current().target.stationary_fmax

    @property
    def gemm_moving_fmax(self) -> int:
        return core.current().target.moving_fmax

    @property
    def psum_bank_fmax(self) -> int:
        return core.current().target.psum_bank_bytes // 4

    @property
    def psum_bank_fmax_bytes(self) -> int:
        return core.current().target.psum_bank_bytes

    @property
    def psum_num_banks(self) -> int:
        return core.current().target.psum_banks

    @property
    def sbuf_fmax_bytes(self) -> int:
        return core.current().target.sbuf_partition_bytes


tile_size = _TileSize()


@core.model_code
def ndarray(shape, dtype, buffer: core.Buffer = sbuf, name: str = "", address=None) -> core.Tensor:
    """A new tensor in ``buffer``; its memory is not initialized (NaN in the model). ``address`` (manual
    placement) is not modelled."""
    if address is not None:
        raise core.ModelError("nl.ndarray(address=...): manual placement is not modelled by the CPU model")
    if isinstance(buffer, str):
        raise core.ModelError(
            f"nl.ndarray(buffer={buffer!r}): buffers are nl.sbuf, nl.psum, nl.shared_hbm, ... not strings"
        )
    tensor = core.Tensor.allocate(tuple(shape), dtype, buffer, name)
    if buffer.on_chip:
        allocated_in_body(tensor.alloc)  # a tile of a dynamic loop's body lives for the whole loop (loops.py)
    return tensor


def program_id(axis: int = 0) -> int:
    """Which program of the launch runs (0..LNC-1): the model's launch grid is the LNC, one axis."""
    _grid_axis(axis, "nl.program_id(axis=...)")
    return core.current().program


def num_programs(axes: int = 0) -> int:
    """How many programs the launch runs: its LNC."""
    _grid_axis(axes, "nl.num_programs(axes=...)")
    launch = core.current().launch
    return 1 if launch is None else launch.lnc


def program_ndim() -> int:
    """The launch grid's dimensions: one in the model (kernel[lnc]; a plain call counts as kernel[1], assumed)."""
    return 1


def _grid_axis(axis: int, what: str) -> None:
    if axis != 0:
        raise core.ModelError(f"{what}: the model launches a one-axis grid (the LNC); use axis 0, not {axis!r}")


class Op:
    """An elementwise operator token (``op=nl.add``), computed in fp32 as the engines do; bitwise ones act on
    the raw integer bits."""

    def __init__(self, name: str, fn, bitwise: bool = False) -> None:
        self.name, self.fn, self.bitwise = name, fn, bitwise

    def __repr__(self) -> str:
        return f"nl.{self.name}"


add = Op("add", np.add)
subtract = Op("subtract", np.subtract)
multiply = Op("multiply", np.multiply)
copy = Op("copy", lambda x: x)
bitwise_and = Op("bitwise_and", np.bitwise_and, bitwise=True)


# --- dynamic loops and dynamic slices (loops.py) -------------------------------------------------------------
from .loops import VirtualRegister, allocated_in_body, fori_loop  # noqa: E402  (loops needs only core)


def ds(start, size) -> slice:
    """``nl.ds(start, size)``: the slice start:start + size (compile-time ints). The NKI 0.6 stubs document no
    register start; a dynamic start is written as an access pattern."""
    if isinstance(start, VirtualRegister) or isinstance(size, VirtualRegister):
        raise core.ModelError(
            "nl.ds: a VirtualRegister start or size is not documented for NKI 0.6; write the "
            "access as tensor.ap(pattern, scalar_offset=reg, indirect_dim=d)"
        )
    return slice(start, start + size)


__all__ += ["fori_loop", "ds"]
