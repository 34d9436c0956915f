"""``nki.isa`` as the CPU model provides it: the instructions our kernels use, each checking the documented rules
of its operands (buffers, partitions, tile sizes, dtypes, PSUM banks and accumulation) before it computes, and
counting itself for the cost model. Arithmetic follows the documented datapaths: engines compute in fp32 and
round to the destination dtype to nearest even; the Tensor Engine multiplies exactly where the operands are 16-bit
or narrower (bf16 x bf16 fits fp32's significand) and accumulates in fp32, in K order, in PSUM."""

from __future__ import annotations

import numpy as np

from . import core
from . import language as nl
from .core import MATMUL, OTHER, UNWRITTEN, ModelError, Tensor

__all__ = [
    "engine",
    "tensor_engine",
    "vector_engine",
    "scalar_engine",
    "gpsimd_engine",
    "unknown_engine",
    "dma_copy",
    "tensor_copy",
    "memset",
    "nc_matmul",
    "nc_transpose",
    "tensor_tensor",
    "activation",
    "get_nc_version",
    "nc_version",
    "rng",
    "set_rng_seed",
    "rand_set_state",
    "dge_mode",
    "core_barrier",
]


class engine:
    """``nisa.engine``: where an instruction runs."""

    tensor, vector, scalar, gpsimd, dma, sync, unknown = (
        "tensor",
        "vector",
        "scalar",
        "gpsimd",
        "dma",
        "sync",
        "unknown",
    )


tensor_engine, vector_engine, scalar_engine, gpsimd_engine, unknown_engine = (
    engine.tensor,
    engine.vector,
    engine.scalar,
    engine.gpsimd,
    engine.unknown,
)


class dge_mode:
    """``nisa.dge_mode``: how a DMA's descriptors are generated (nki/deep-dives/nki-dge.rst): ``hwdge`` by the
    hardware DGE (triggered from the Scalar/Sync queues), ``swdge`` by software on GpSimd, ``none`` ahead of time
    (static addresses only), ``unknown`` left to the compiler."""

    unknown, swdge, hwdge, none = "unknown", "swdge", "hwdge", "none"


class nc_version:
    gen2, gen3 = "gen2", "gen3"


def get_nc_version() -> str:
    return {"trn1": nc_version.gen2, "trn2": nc_version.gen3}[core.current().target.name]


MATMUL_DTYPES = {nl.bfloat16, nl.float16, nl.float8_e4m3, nl.float8_e5m2, nl.float32}


# --- operand checks and data access --------------------------------------------------------------------------
def _tensor(x: object, role: str, instruction: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise ModelError(f"{instruction}: {role} must be a tensor, got {type(x).__name__}")
    return x


def _on_chip(t: Tensor, role: str, instruction: str, allowed: tuple[core.Buffer, ...]) -> tuple[int, int]:
    if t.buffer not in allowed:
        raise ModelError(
            f"{instruction}: {role} {t.name!r} is in {t.buffer.name}; it must be in "
            f"{' or '.join(b.name for b in allowed)}"
        )
    t.alloc.use()
    return t.partitions()


def _read(t: Tensor, role: str, instruction: str, shape: tuple[int, ...] | None = None) -> np.ndarray | None:
    """The values of ``t`` (reshaped to ``shape``), None when the core skips arithmetic; in strict mode an
    element no instruction wrote is an error."""
    core_ = core.current()
    if core_.strict and not t.written.all():
        raise ModelError(
            f"{instruction}: {role} {t.name!r} {t.shape} reads memory that was allocated but never "
            "written (uninitialized; the simulator fills it with NaN)"
        )
    if not core_.arithmetic:
        return None
    return t.data if shape is None else t.data.reshape(shape)


def _write(t: Tensor, values, psum_state: int | None = None) -> None:
    """Store ``values`` into ``t`` in its dtype (rounded to nearest even; integers saturate), marking it written."""
    if values is not None and core.current().arithmetic:
        t.data[...] = _cast(np.asarray(values), t.dtype)
    if t.written.flags.writeable:
        t.written[...] = True
    if t.state is not None and psum_state is not None:
        t.state[...] = psum_state


def _cast(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    if x.dtype == dtype:
        return x
    if dtype.kind in "iu" and x.dtype.kind not in "iu":  # fp -> int: nearest even, saturating (as the hardware)
        info = np.iinfo(dtype)
        return np.clip(np.rint(x.astype(np.float64)), info.min, info.max).astype(dtype)
    return x.astype(np.float32).astype(dtype) if x.dtype.kind not in "iu" or dtype.kind not in "iu" else x.astype(dtype)


def _constant(value, role: str, instruction: str):
    """A constant operand: integer values in the kernel language are 32-bit signed (NKI_FACTS.md section 13, the
    language guide), so a Python int outside int32 is refused."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and not -(2**31) <= value < 2**31:
        same_bits = f" ({int(value) - 2**32} has the same bits)" if 2**31 <= value < 2**32 else ""
        raise ModelError(
            f"{instruction}: {role} {value} ({int(value):#x}) is outside int32: integer values in the "
            f"kernel language are 32-bit signed; write an int32 value{same_bits} into an int32 tile "
            "and reinterpret it with .view(nl.uint32)"
        )
    return value


def _engine(requested: str, default: str, instruction: str, allowed: tuple[str, ...]) -> str:
    chosen = default if requested in (None, engine.unknown) else requested
    if chosen not in allowed:
        raise ModelError(f"{instruction}: engine {chosen!r} cannot run it (allowed: {', '.join(allowed)})")
    return chosen


def _free(t: Tensor) -> int:
    """Elements per partition."""
    return t.size // t.shape[0]


def _same_layout(dst: Tensor, src: Tensor, instruction: str) -> None:
    if dst.shape[0] != src.shape[0] or _free(dst) != _free(src):
        raise ModelError(
            f"{instruction}: dst {dst.shape} and source {src.shape} differ in partitions or elements "
            "per partition (no broadcasting)"
        )


def _no_gpsimd_psum(chosen: str, instruction: str, *tensors: Tensor) -> None:
    if chosen == engine.gpsimd and any(t.buffer is core.PSUM for t in tensors):
        raise ModelError(f"{instruction}: GpSimd cannot access PSUM")


# --- data movement ---------------------------------------------------------------------------------------------
def dma_copy(dst, src, priority=None, oob_mode=None, dge_mode=None, engine=None, name=None) -> None:
    """HBM <-> SBUF (either way, or HBM -> HBM); never PSUM. Dtypes convert through fp32.

    A dynamic-offset operand (an ``.ap(..., scalar_offset=...)`` view) needs descriptors generated when the DMA
    runs: ``dge_mode`` must be ``dge_mode.hwdge`` or ``dge_mode.swdge`` (nki-dge.rst: ``none`` cannot handle dynamic
    addresses, ``unknown`` leaves it to the compiler). Its event is ("dma", "dma_copy", bytes, contiguous run,
    dynamic), where dynamic is False for a static DMA and the dge mode ("hwdge" or "swdge") for a dynamic one.

    A static dma_copy whose dst and src are one view of an HBM tensor is an HBM fence (nki-library ends
    dynamic-shape kernels with ``nisa.dma_copy(dst=result, src=result)`` "to ensure all DMA writes complete before
    kernel returns"): it moves nothing in the model, reads no element as data (so the strict unwritten-read check
    does not apply) and marks nothing written; a program must fence each output it wrote with a dynamic offset,
    after its last such write (checked when the program ends, ``check_fences``)."""
    instruction = "nisa.dma_copy"
    dst, src = _tensor(dst, "dst", instruction), _tensor(src, "src", instruction)
    if src.buffer is core.PSUM:
        raise ModelError("nisa.dma_copy cannot read PSUM; copy the tile to SBUF with nisa.tensor_copy first")
    if dst.buffer is core.PSUM:
        raise ModelError("nisa.dma_copy cannot write PSUM; DMA moves data between HBM and SBUF")
    if dst.size != src.size:
        raise ModelError(f"nisa.dma_copy: dst {dst.shape} and src {src.shape} hold different element counts")
    mode = "unknown" if dge_mode is None else dge_mode
    if mode not in _DGE_MODES:
        raise ModelError(
            f"{instruction}: dge_mode {dge_mode!r} is not a nisa.dge_mode member ({', '.join(_DGE_MODES)})"
        )
    dynamic = isinstance(src, core.IndirectView) or isinstance(dst, core.IndirectView)
    if dynamic and mode not in ("hwdge", "swdge"):
        operand = "dst" if isinstance(dst, core.IndirectView) else "src"
        raise ModelError(
            f"{instruction}: {operand} {(dst if operand == 'dst' else src).name!r} has a dynamic offset "
            f"(scalar_offset), and dge_mode={mode}: a dynamic address needs descriptors generated when the DMA runs "
            "(nki/deep-dives/nki-dge.rst: dge_mode.none cannot handle dynamic addresses, dge_mode.unknown leaves it "
            "to the compiler); pass dge_mode=nisa.dge_mode.hwdge (the hardware DGE, what nki-library passes) or "
            "nisa.dge_mode.swdge (GpSimd) explicitly"
        )
    for t in (dst, src):
        if t.buffer.on_chip:
            t.alloc.use()
            t.partitions()
    run = core.current()
    if not dynamic and not dst.buffer.on_chip and _same_view(dst, src):  # an HBM fence
        if dst.buffer is core.SHARED_HBM:
            run.fences[dst.alloc] = run.step
    else:
        _write(dst, _read(src, "src", instruction, dst.shape))
        if isinstance(dst, core.IndirectView) and dst.buffer is core.SHARED_HBM:
            run.dynamic_writes[dst.alloc] = run.step
    hbm = src if not src.buffer.on_chip else dst
    run.count(
        "dma",
        "dma_copy",
        src.size * src.dtype.itemsize,
        _contiguous_run(hbm),
        mode if dynamic else False,
        reads=(src,),
        writes=(dst,),
    )


_DGE_MODES = ("unknown", "swdge", "hwdge", "none")


def _same_view(a: Tensor, b: Tensor) -> bool:
    """Whether two static views address the same elements in the same order (an HBM fence's dst and src)."""
    return (
        a.alloc is b.alloc
        and a.dtype == b.dtype
        and a.shape == b.shape
        and a.data.strides == b.data.strides
        and a.data.__array_interface__["data"][0] == b.data.__array_interface__["data"][0]
    )


def check_fences(outputs) -> None:
    """At the end of a program: every output (a shared_hbm tensor the kernel returns) this program wrote with a
    dynamic-offset dma_copy must be fenced after its last such write (``dma_copy``: an HBM fence)."""
    run = core.current()
    for out in outputs if isinstance(outputs, tuple) else (outputs,):
        if not isinstance(out, Tensor) or out.alloc not in run.dynamic_writes:
            continue
        last = run.dynamic_writes[out.alloc]
        if run.fences.get(out.alloc, -1) < last:
            raise ModelError(
                f"kernel output {out.name!r}: program {run.program} writes it with a dynamic-offset nisa.dma_copy "
                f"(the last at instruction {last}, {run.issued[last]}) and does not fence it afterwards: end the "
                f"kernel with an HBM fence, nisa.dma_copy(dst=view, src=view) on the output or on the region this "
                "program wrote (nki-library experimental/dynamic_shapes/dynamic_elementwise_add.py: dma_copy(dst="
                "result, src=result) 'to ensure all DMA writes complete before kernel returns'; with LNC=2 fence "
                "what this program wrote, the other program's region may not be written yet)"
            )


def _contiguous_run(t: Tensor) -> int:
    """Bytes of the longest contiguous run of ``t``'s elements (DMA efficiency depends on it)."""
    run, expected = t.dtype.itemsize, t.dtype.itemsize
    for size, stride in zip(reversed(t.shape), reversed(t.data.strides), strict=True):
        if size == 1:
            continue
        if stride != expected:
            break
        run = expected = size * stride
    return run


def tensor_copy(dst, src, engine=None, name=None) -> None:
    """SBUF/PSUM -> SBUF/PSUM on the Vector, Scalar or GpSimd engine; same dtype copies bits, others convert
    through fp32."""
    dst, src = _tensor(dst, "dst", "nisa.tensor_copy"), _tensor(src, "src", "nisa.tensor_copy")
    chosen = _engine(engine, vector_engine, "nisa.tensor_copy", (vector_engine, scalar_engine, gpsimd_engine))
    for t, role in ((dst, "dst"), (src, "src")):
        _on_chip(t, role, "nisa.tensor_copy", (core.SBUF, core.PSUM))
    _no_gpsimd_psum(chosen, "nisa.tensor_copy", dst, src)
    _same_layout(dst, src, "nisa.tensor_copy")
    _write(dst, _read(src, "src", "nisa.tensor_copy", dst.shape), OTHER)
    core.current().count(chosen, "tensor_copy", _free(dst), reads=(src,), writes=(dst,))


def memset(dst, value, engine=None, name=None) -> None:
    dst = _tensor(dst, "dst", "nisa.memset")
    chosen = _engine(engine, vector_engine, "nisa.memset", (vector_engine, scalar_engine, gpsimd_engine))
    _on_chip(dst, "dst", "nisa.memset", (core.SBUF, core.PSUM))
    _no_gpsimd_psum(chosen, "nisa.memset", dst)
    _write(dst, _memset_values(dst, _constant(value, "value", "nisa.memset")), OTHER)
    core.current().count(chosen, "memset", _free(dst), writes=(dst,))


MEMSET_INT_LIMIT = 2**24  # integers memset writes exactly (fp32's integers): beyond, exactness is undocumented


def _memset_values(dst: Tensor, value) -> np.ndarray:
    """memset's value must match dst's dtype (release notes 0.3.0): a float for float dtypes, an int in the
    dtype's range for integer ones, within [-2**24, 2**24] (written exactly, not through fp32)."""
    integer = isinstance(value, (int, np.integer)) and not isinstance(value, bool)
    if dst.dtype.kind in "iu":
        info = np.iinfo(dst.dtype)
        if not integer or not info.min <= value <= info.max:
            raise ModelError(
                f"nisa.memset: value {value!r} does not match dst {dst.name!r} dtype {dst.dtype}: an "
                f"integer dst takes an int in {info.min}..{info.max}"
            )
        if not -MEMSET_INT_LIMIT <= value <= MEMSET_INT_LIMIT:
            raise ModelError(
                f"nisa.memset: integer value {value} is outside [-2**24, 2**24]: memset's exactness for larger int32 "
                "values is not documented (SDK nki/api/nki/isa/__init__.py memset; nl.copy is known to cast through "
                "fp32, release notes 0.4.0 known issues; NKI_FACTS.md section 14); memset a value within 2**24 and "
                "build the constant with exact int32 nisa.tensor_tensor adds or multiplies on GpSimd (all-int32 "
                "operands, engine=nisa.gpsimd_engine)"
            )
        return np.full(dst.shape, value, dst.dtype)
    if not isinstance(value, (float, np.floating)):
        raise ModelError(
            f"nisa.memset: value {value!r} does not match dst {dst.name!r} dtype {dst.dtype}: a float "
            f"dst takes a float value (write {float(value)!r})"
        )
    return np.full(dst.shape, value, np.float32)


# --- synchronisation -------------------------------------------------------------------------------------------
def core_barrier(data, cores, engine=None, name=None) -> None:
    """``nisa.core_barrier(data, cores)``: every program in ``cores`` waits here until all of them reach it
    (nki-library: ``nisa.core_barrier(t, (0, 1))`` where the cores of an LNC=2 launch exchange data through t).
    ``data`` is the on-chip or HBM tensor the barrier is about: writes to it (a shared_hbm tensor) by any program
    before the barrier are visible to every program after it (assumed: the barrier orders the accesses to its
    data; the model publishes no other tensor's writes). ``cores`` is a tuple of program ids, in the model all of
    them: (0,) .. (0, ..., LNC-1). One GpSimd instruction, and part of the program's control flow: every program
    must reach the same barriers in the same order."""
    instruction = "nisa.core_barrier"
    data = _tensor(data, "data", instruction)
    run = core.current()
    programs = 1 if run.launch is None else run.launch.lnc
    if not isinstance(cores, tuple) or cores != tuple(range(programs)):
        raise ModelError(
            f"{instruction}: cores must be the tuple of the launch's program ids, "
            f"{tuple(range(programs))} at LNC={programs} (the model synchronises every program of a "
            f"launch; a tuple, as nki-library passes (0, 1)), got {cores!r}"
        )
    chosen = _engine(engine, gpsimd_engine, instruction, (gpsimd_engine,))
    if data.buffer.on_chip:
        _on_chip(data, "data", instruction, (core.SBUF, core.PSUM))
    run.count(chosen, "core_barrier", 1, reads=(data,), writes=(data,))
    run.control_flow.append(("core_barrier", cores))
    if run.launch is not None:
        run.launch.schedule.barrier(run.program, (data.alloc,))


# --- engines ---------------------------------------------------------------------------------------------------
def tensor_tensor(dst, data1, data2, op, engine=None, name=None) -> None:
    """dst = data1 op data2, elementwise (no broadcasting): fp32 arithmetic rounded to dst's dtype; bitwise
    operators act on integer bits; all-32-bit-integer operands on GpSimd compute exactly (mod 2**32)."""
    instruction = "nisa.tensor_tensor"
    dst, data1, data2 = (_tensor(t, r, instruction) for t, r in ((dst, "dst"), (data1, "data1"), (data2, "data2")))
    if not isinstance(op, nl.Op):
        raise ModelError(f"{instruction}: op must be an operator token such as nl.add, got {op!r}")
    integer = all(t.dtype in (nl.int32, nl.uint32) for t in (dst, data1, data2))
    default = (
        gpsimd_engine if integer and not any(t.buffer is core.PSUM for t in (dst, data1, data2)) else vector_engine
    )
    chosen = _engine(engine, default, instruction, (vector_engine, gpsimd_engine))
    if op.bitwise and chosen != vector_engine:  # NKI_FACTS.md section 13: bitvec operators are Vector Engine only
        raise ModelError(
            f"{instruction}: {op!r} is a bitvec operator, documented on the Vector Engine only, not "
            f"{chosen} (the default for all-32-bit-integer operands): pass engine=nisa.vector_engine"
        )
    for t, role in ((dst, "dst"), (data1, "data1"), (data2, "data2")):
        _on_chip(t, role, instruction, (core.SBUF, core.PSUM))
    if data1.buffer is core.PSUM and data2.buffer is core.PSUM:
        raise ModelError(f"{instruction}: data1 and data2 cannot both be in PSUM")
    _no_gpsimd_psum(chosen, instruction, dst, data1, data2)
    _same_layout(dst, data1, instruction)
    _same_layout(dst, data2, instruction)
    x, y = _read(data1, "data1", instruction, dst.shape), _read(data2, "data2", instruction, dst.shape)
    if x is not None:
        assert y is not None  # _read gives both or neither (the core's arithmetic switch)
        if op.bitwise:
            if not all(t.dtype.kind in "iu" for t in (data1, data2)):
                raise ModelError(f"{instruction}: {op!r} needs integer operands (view floats with .view)")
            result = op.fn(x, y.astype(x.dtype))
        elif integer and chosen == gpsimd_engine:
            result = (op.fn(x.astype(np.int64), y.astype(np.int64)) & 0xFFFFFFFF).astype(np.uint32).view(dst.dtype)
        else:
            result = op.fn(x.astype(np.float32), y.astype(np.float32))
        _write(dst, result, OTHER)
    else:
        _write(dst, None, OTHER)
    core.current().count(chosen, "tensor_tensor", _free(dst), reads=(data1, data2), writes=(dst,))


def activation(
    dst, op, data, bias=None, scale=1.0, reduce_op=None, reduce_res=None, reduce_cmd=None, name=None
) -> None:
    """dst = op(data * scale + bias) on the Scalar Engine in fp32; the model implements op=nl.copy."""
    instruction = "nisa.activation"
    dst, data = _tensor(dst, "dst", instruction), _tensor(data, "data", instruction)
    if op is not nl.copy or bias is not None or reduce_op is not None:
        raise ModelError(f"{instruction}: the CPU model implements only op=nl.copy without bias or reduction")
    for t, role in ((dst, "dst"), (data, "data")):
        _on_chip(t, role, instruction, (core.SBUF, core.PSUM))
    _same_layout(dst, data, instruction)
    scale = _constant(scale, "scale", instruction)
    values = _read(data, "data", instruction, dst.shape)
    _write(dst, None if values is None else values.astype(np.float32) * np.float32(scale), OTHER)
    core.current().count(scalar_engine, "activation", _free(dst), reads=(data,), writes=(dst,))


def nc_transpose(dst, data, engine=None, name=None) -> None:
    """dst = data.T: on the Tensor Engine ([P <= 128, F <= 128] SBUF -> PSUM, bit-exact from NeuronCore-v3) or the
    Vector Engine (at most 32 x 32)."""
    instruction = "nisa.nc_transpose"
    dst, data = _tensor(dst, "dst", instruction), _tensor(data, "data", instruction)
    chosen = _engine(
        engine, tensor_engine if dst.buffer is core.PSUM else vector_engine, instruction, (tensor_engine, vector_engine)
    )
    if data.ndim != 2 or dst.shape != data.shape[::-1]:
        raise ModelError(f"{instruction}: dst {dst.shape} must be the transpose of data {data.shape} (2-D)")
    if dst.dtype != data.dtype:
        raise ModelError(f"{instruction}: dst dtype {dst.dtype} must equal data dtype {data.dtype}")
    limit = 128 if chosen == tensor_engine else 32
    if max(data.shape) > limit:
        raise ModelError(f"{instruction}: the {chosen} engine transposes at most {limit} x {limit}, got {data.shape}")
    if chosen == tensor_engine:
        _on_chip(data, "data", instruction, (core.SBUF,))
        _on_chip(dst, "dst", instruction, (core.PSUM,))
        _one_bank(dst, instruction)
    else:
        _on_chip(data, "data", instruction, (core.SBUF, core.PSUM))
        _on_chip(dst, "dst", instruction, (core.SBUF, core.PSUM))
    values = _read(data, "data", instruction)
    _write(dst, None if values is None else values.T, OTHER)
    core.current().count(chosen, "nc_transpose", data.shape[0], data.dtype.itemsize, reads=(data,), writes=(dst,))


def _one_bank(dst: Tensor, instruction: str) -> None:
    """A Tensor Engine result lands in one 2 KiB PSUM bank (per partition)."""
    bank = core.current().target.psum_bank_bytes
    first, last = dst.free_bytes()
    if first // bank != last // bank:
        raise ModelError(
            f"{instruction}: dst {dst.name!r} {dst.shape} {dst.dtype} spans bytes {first}..{last} of "
            f"each partition, crossing a {bank}-byte PSUM bank boundary (one matmul writes one bank: "
            f"at most {bank // 4} fp32 per partition)"
        )


def nc_matmul(
    dst,
    stationary,
    moving,
    is_stationary_onezero=False,
    is_moving_onezero=False,
    is_transpose=False,
    accumulate=None,
    tile_position=(),
    tile_size=(),
    perf_mode=None,
    name=None,
) -> None:
    """dst[M, N] (PSUM, fp32) = stationary[K, M].T @ moving[K, N] (both SBUF), K <= 128 partitions, M <= 128,
    N <= 512. accumulate=False overwrites, True adds to what earlier matmuls wrote there, None infers it (overwrite
    where nothing was written, add where a matmul wrote); adding onto memory a matmul did not write is an error
    (undefined behaviour on NeuronCore-v2/v3)."""
    instruction = "nisa.nc_matmul"
    dst = _tensor(dst, "dst", instruction)
    stationary, moving = _tensor(stationary, "stationary", instruction), _tensor(moving, "moving", instruction)
    if is_transpose or tile_position or tile_size or perf_mode not in (None, "none"):
        raise ModelError(f"{instruction}: transpose mode, PE tiling and perf modes are not modelled")
    target = core.current().target
    if stationary.ndim != 2 or moving.ndim != 2 or dst.ndim != 2:
        raise ModelError(
            f"{instruction}: the model takes 2-D operands, got dst {dst.shape}, stationary "
            f"{stationary.shape}, moving {moving.shape}"
        )
    _on_chip(stationary, "stationary", instruction, (core.SBUF,))
    _on_chip(moving, "moving", instruction, (core.SBUF,))
    _on_chip(dst, "dst", instruction, (core.PSUM,))
    (k, m), (k2, n) = stationary.shape, moving.shape
    if k != k2:
        raise ModelError(
            f"{instruction}: stationary {stationary.shape} and moving {moving.shape} differ in the "
            "contraction (partition) dimension"
        )
    if m > target.stationary_fmax:
        raise ModelError(
            f"{instruction}: stationary free size {m} exceeds {target.stationary_fmax} "
            "(nl.tile_size.gemm_stationary_fmax)"
        )
    if n > target.moving_fmax:
        raise ModelError(
            f"{instruction}: moving free size {n} exceeds {target.moving_fmax} (nl.tile_size.gemm_moving_fmax)"
        )
    if dst.shape != (m, n):
        raise ModelError(f"{instruction}: dst {dst.shape} must be (stationary free, moving free) = {(m, n)}")
    for t, role in ((stationary, "stationary"), (moving, "moving")):
        if t.dtype not in MATMUL_DTYPES:
            raise ModelError(f"{instruction}: {role} dtype {t.dtype} is not a Tensor Engine input dtype")
    fp32 = stationary.dtype == nl.float32 or moving.dtype == nl.float32
    if fp32 and stationary.dtype != moving.dtype:
        raise ModelError(
            f"{instruction}: fp32 operands multiply only with fp32 (got {stationary.dtype} and {moving.dtype})"
        )
    if dst.dtype != nl.float32:
        raise ModelError(f"{instruction}: dst must be fp32 in PSUM on NeuronCore-v2/v3, got {dst.dtype}")
    _one_bank(dst, instruction)
    state = dst.state
    if accumulate is None:
        if (state == OTHER).any():
            raise ModelError(
                f"{instruction}: accumulating onto PSUM written by a non-matmul instruction (memset, "
                "tensor_copy) is undefined behaviour on NeuronCore-v2/v3"
            )
        adds = state == MATMUL
        if adds.any() and not adds.all():
            raise ModelError(
                f"{instruction}: dst {dst.name!r} is partly matmul-written and partly not; pass accumulate= explicitly"
            )
        add = bool(adds.all())
    elif accumulate:
        if (state != MATMUL).any():
            what = "uninitialized" if (state == UNWRITTEN).any() else "written by a non-matmul instruction"
            raise ModelError(
                f"{instruction}: accumulate=True onto PSUM {what} (undefined on NeuronCore-v2/v3: "
                "start each accumulation group with accumulate=False)"
            )
        add = True
    else:
        add = False
    s, mv = _read(stationary, "stationary", instruction), _read(moving, "moving", instruction)
    values = None
    if s is not None:
        assert mv is not None  # _read gives both or neither (the core's arithmetic switch)
        values = dst.data.astype(np.float32) if add else np.zeros((m, n), np.float32)
        s32, m32 = s.astype(np.float32), mv.astype(np.float32)
        for i in range(k):  # fp32 accumulation in K order: product rounded to fp32 (exact for bf16), then added
            values += np.multiply.outer(s32[i], m32[i])
    _write(dst, values, MATMUL)
    core.current().count(tensor_engine, "nc_matmul", n, m, k, bool(fp32), reads=(stationary, moving), writes=(dst,))


# --- random numbers ------------------------------------------------------------------------------------------
# Each engine has its own generator (NKI_FACTS.md section 5 and 13): set_rng_seed seeds the Vector Engine's,
# rand_set_state GpSimd's (XORWOW, 6 uint32 of state per lane), and rng draws from the engine it runs on. The
# model's generator is PCG64 seeded from the seed values, not XORWOW: only the seeding contract is modelled.
XORWOW_STATE = {gpsimd_engine: 6}  # uint32 per lane (nki.isa.rand_set_state; the Vector Engine's needs v4+)


def _seed(engine_: str, values: np.ndarray | None, lanes: int) -> None:
    core_ = core.current()
    seed = [0] if values is None else values.view(np.uint32).ravel().tolist()
    core_.generators[engine_] = np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed)))
    core_.seeded_lanes[engine_] = lanes


def set_rng_seed(src_seeds, name=None) -> None:
    """Seed the Vector Engine's generator from a [1, 1] 32-bit SBUF tile."""
    src_seeds = _tensor(src_seeds, "src_seeds", "nisa.set_rng_seed")
    _on_chip(src_seeds, "src_seeds", "nisa.set_rng_seed", (core.SBUF,))
    if src_seeds.shape != (1, 1) or src_seeds.dtype.itemsize != 4:
        raise ModelError(
            f"nisa.set_rng_seed: the seed is a [1, 1] 32-bit tile, got {src_seeds.shape} {src_seeds.dtype}"
        )
    _seed(vector_engine, _read(src_seeds, "src_seeds", "nisa.set_rng_seed"), core.current().target.partitions)
    core.current().count(vector_engine, "set_rng_seed", 1, reads=(src_seeds,))


def rand_set_state(src_seeds, engine=None, name=None) -> None:
    """Set an engine's generator state: a uint32 SBUF tile [lanes, 6] of XORWOW states for GpSimd (NeuronCore-v3+),
    partition p seeding lane p. An all-zero XORWOW state draws only zeros: refused."""
    instruction = "nisa.rand_set_state"
    src_seeds = _tensor(src_seeds, "src_seeds", instruction)
    if core.current().target.name == "trn1":
        raise ModelError(
            f"{instruction} needs NeuronCore-v3+ (trn2); on trn1 seed the Vector Engine with nisa.set_rng_seed"
        )
    chosen = _engine(engine, gpsimd_engine, instruction, (gpsimd_engine,))
    _on_chip(src_seeds, "src_seeds", instruction, (core.SBUF,))
    words = XORWOW_STATE[chosen]
    if src_seeds.dtype != nl.uint32 or src_seeds.ndim != 2 or src_seeds.shape[1] != words:
        raise ModelError(
            f"{instruction}: {chosen}'s XORWOW state is {words} uint32 per lane: src_seeds must be a "
            f"uint32 [lanes, {words}] tile, got {src_seeds.shape} {src_seeds.dtype}"
        )
    start, lanes = src_seeds.partitions()
    values = _read(src_seeds, "src_seeds", instruction)
    if values is not None and core.current().strict and (~values[:, :5].any(axis=1)).any():
        raise ModelError(
            f"{instruction}: a lane's XORWOW state has its five xorshift words all zero, which "
            "draws only zeros; give every lane a nonzero state"
        )
    _seed(chosen, values, start + lanes if start == 0 else 0)
    core.current().count(chosen, "rand_set_state", words, reads=(src_seeds,))


def rng(dst, engine=None, name=None) -> None:
    """32 random bits per element into a 32-bit integer dst (Vector Engine, or GpSimd from v3), from the
    generator of the engine it runs on; in strict mode drawing from lanes whose generator this program never
    seeded is an error (their state is whatever an earlier kernel left). The model leaves out the truncation to
    narrower dtypes."""
    dst = _tensor(dst, "dst", "nisa.rng")
    chosen = _engine(engine, vector_engine, "nisa.rng", (vector_engine, gpsimd_engine))
    start, lanes = _on_chip(dst, "dst", "nisa.rng", (core.SBUF,))
    if dst.dtype not in (nl.int32, nl.uint32):
        raise ModelError(f"nisa.rng: the CPU model fills int32/uint32 tiles, got {dst.dtype}")
    core_ = core.current()
    if core_.strict and core_.seeded_lanes.get(chosen, 0) < start + lanes:
        how = "nisa.set_rng_seed" if chosen == vector_engine else "nisa.rand_set_state(..., engine=gpsimd)"
        raise ModelError(
            f"nisa.rng on {chosen}: partitions {start}..{start + lanes - 1} draw from a generator "
            f"this program did not seed (each engine has its own; seed {chosen}'s with {how})"
        )
    if core_.arithmetic:
        generator = core_.generators.setdefault(chosen, np.random.Generator(np.random.PCG64(0)))
        _write(dst, generator.integers(0, 2**32, size=dst.shape, dtype=np.uint32).view(dst.dtype))
    else:
        _write(dst, None)
    core_.count(chosen, "rng", _free(dst), writes=(dst,))


# --- virtual registers (dynamic loops: loops.py) -----------------------------------------------------------------
import types  # noqa: E402

from .loops import VirtualRegister, recorded, register_int  # noqa: E402  (loops needs only core)


def register_alloc(x=None) -> VirtualRegister:
    """A new virtual register, set to the int ``x`` where given (a register_move at this point of the program)."""
    reg = VirtualRegister()
    if x is not None:
        register_move(reg, x)
    return reg


def _register(reg: object, role: str, instruction: str) -> VirtualRegister:
    if not isinstance(reg, VirtualRegister):
        raise ModelError(
            f"{instruction}: {role} must be a VirtualRegister (nisa.register_alloc()), got {type(reg).__name__}"
        )
    return reg


def _scalar_tile(t: object, role: str, instruction: str) -> Tensor:
    """A one-element int32 tensor in SBUF or HBM: what a register loads from or stores to (SDK isa register_load,
    register_store: "a single scalar value (up to 32-bit)"; the model holds registers as int32: assumed)."""
    t = _tensor(t, role, instruction)
    if t.buffer is core.PSUM or t.size != 1 or t.dtype != nl.int32:
        raise ModelError(
            f"{instruction}: {role} must be a one-element int32 tensor in SBUF or HBM, got "
            f"{t.buffer.name} {t.shape} {t.dtype}"
        )
    if t.buffer.on_chip:
        t.alloc.use()
        t.partitions()
    return t


def _writable(reg: VirtualRegister, instruction: str) -> VirtualRegister:
    """A register an instruction writes: not an nl.fori_loop's induction register, which is read-only."""
    if reg._induction:
        raise ModelError(
            f"{instruction}: dst is an nl.fori_loop's induction register, which is read-only (the body "
            "gets i as a read-only VirtualRegister: nl.fori_loop, SDK nki/api/nki/language/__init__.py; "
            "nki/deep-dives/nki-dynamic-loops.rst), during the loop or after it; allocate a register of "
            "your own with nisa.register_alloc() and write that"
        )
    return reg


def register_move(dst, src) -> None:
    """dst = src: a compile-time int (32-bit) or another register."""
    dst = _writable(_register(dst, "dst", "nisa.register_move"), "nisa.register_move")
    if isinstance(src, VirtualRegister):
        if src._value is None and core.current().arithmetic:
            raise ModelError("nisa.register_move: the src register was never written")
        dst._value = src._value
    else:
        dst._value = register_int(src, "nisa.register_move: src (an int or a VirtualRegister)")


def register_load(dst, src) -> None:
    """dst = the value of the one-element int32 tensor ``src`` (unknown under counting_only, which computes no
    data)."""
    dst = _writable(_register(dst, "dst", "nisa.register_load"), "nisa.register_load")
    src = _scalar_tile(src, "src", "nisa.register_load")
    values = _read(src, "src", "nisa.register_load")
    dst._value = None if values is None else int(values.reshape(-1)[0])


def register_store(dst, src) -> None:
    """The one-element int32 tensor ``dst`` = the register ``src``."""
    if isinstance(dst, VirtualRegister):
        _writable(dst, "nisa.register_store")
    dst = _scalar_tile(dst, "dst", "nisa.register_store")
    src = _register(src, "src", "nisa.register_store")
    if src._value is None and core.current().arithmetic:
        raise ModelError("nisa.register_store: the src register was never written")
    _write(dst, None if src._value is None else np.full(dst.shape, src._value, np.int32))


__all__ += ["VirtualRegister", "register_alloc", "register_move", "register_load", "register_store"]
# Every instruction records itself into the dynamic-loop body being traced, for later iterations to replay
# (loops.py); register_alloc records the register_move it issues, get_nc_version is no instruction.
for _name in __all__:
    if isinstance(globals()[_name], types.FunctionType) and _name not in ("get_nc_version", "register_alloc"):
        globals()[_name] = recorded(globals()[_name])
del _name
