"""DLPack cases, run by test_dlpack.py in a child process (``python -m tests.differential.dlpack_cases NAME...``):
a DLPack import of an odd layout can abort the interpreter (negative strides), which must not take the test run
with it. Each case prints ``START name`` before it runs and ``PASS name`` or ``FAIL name: why`` after; a case
that started and never finished crashed the process (test_dlpack reports its signal and runs the rest).

A case imports a view by DLPack on one side and does the same in NumPy (np.from_dlpack) on the other, compares
the values, then writes one element through the import and compares the outcome (NumPy refuses writes into a
read-only import) and both base arrays (the import shares memory, so the write must reach the base)."""

from __future__ import annotations

import sys

import numpy as np

import trn_backend as xp

from .compare import RAISED, assert_bases, assert_matches, outcome
from .differences import Case, relaxations
from .draws import Operand

# name -> (direction, layout, dtype): "in" imports an ndarray view into trn_backend (xp.from_dlpack); "out"
# exports a NeuronArray view to NumPy (np.from_dlpack).
CASES = {
    f"{way}:{layout}:{dtype}": (way, layout, dtype)
    for way in ("in", "out")
    for layout in ("contiguous", "reversed", "strided", "transposed", "broadcast", "readonly")
    for dtype in (("float32",) if layout == "reversed" else ("float32", "complex128"))
}
CASES.update({"in:contiguous:0-d": ("in", "contiguous", "0-d"), "in:contiguous:empty": ("in", "contiguous", "empty")})
# the negative-stride imports go last: they are the ones known to abort the process
ORDER = sorted(CASES, key=lambda n: ("reversed" in n, n))


def run(name: str) -> None:
    way, layout, dtype = CASES[name]
    value = {"0-d": np.array(3.0), "empty": np.zeros((0, 3))}.get(dtype)
    if value is None:
        value = (np.arange(12).reshape(3, 4) * 1.5).astype(dtype)
    op = Operand(value, str(value.dtype), layout)
    op.build()
    src_np, src_xp = op.np, op.xp
    if way == "in":
        # NumPy's reference: np.from_dlpack of the ndarray view; ours: xp.from_dlpack of the same ndarray view
        want, got = outcome(np.from_dlpack, src_np), outcome(xp.from_dlpack, src_np)
        assert_matches(got, want, what=f"from_dlpack({layout} ndarray)")
        if hasattr(want, "shape") and want.size:
            key = (0,) * want.ndim
            w_exc = outcome(want.__setitem__, key, 7)
            g_exc = outcome(got.__setitem__, key, 7)
            assert_matches(g_exc, w_exc, what="a write through the import")
            # both imports share the one ndarray base: the base must look as NumPy's write left it
            assert np.array_equal(np.asarray(got), np.asarray(want), equal_nan=True), "after the write"
    else:
        want, got = outcome(np.from_dlpack, src_np), outcome(np.from_dlpack, src_xp)
        assert_matches(
            xp.asarray(got) if isinstance(got, np.ndarray) else got, want, what=f"np.from_dlpack({layout} NeuronArray)"
        )
        if isinstance(want, np.ndarray) and want.size:
            key = (0,) * want.ndim
            case = Case("np.from_dlpack", (op.dtype,), (layout,), kind="write", source="dlpack")
            documented = assert_matches(
                outcome(got.__setitem__, key, 7),
                outcome(want.__setitem__, key, 7),
                relax=relaxations(case),
                what="a write through the export",
            )
            assert_bases([op], what="the exported array's base after the write", unchanged=documented == RAISED)


def main(names: list[str]) -> None:
    for name in names:
        print(f"START {name}", flush=True)
        try:
            run(name)
        except AssertionError as exc:
            print(f"FAIL {name}: {' '.join(str(exc).split())[:400] or repr(exc)}", flush=True)
        except Exception as exc:  # noqa: BLE001 - a case's own error is its failure
            print(f"FAIL {name}: {type(exc).__name__}: {exc}", flush=True)
        else:
            print(f"PASS {name}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or ORDER)
