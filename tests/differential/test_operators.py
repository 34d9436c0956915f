"""Every operator of NeuronArray (binary, reflected, in-place, unary, comparison, matmul, conversions,
getitem/setitem) on drawn operands against the same operator on ndarrays. The operators are enumerated from
NeuronArray's own dunder methods (OPERATORS below must cover each, test_coverage checks it)."""

from __future__ import annotations

import operator

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from .compare import NO_REFERENCE, RAISED, assert_bases, assert_matches, note, outcome, side
from .differences import Case, relaxations
from .draws import ALL, HARNESS, NUMERIC, Draw, Operand

BINARY = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor", "lshift", "rshift")
COMPARISON = ("eq", "ne", "lt", "le", "gt", "ge")
UNARY = {"neg": operator.neg, "pos": operator.pos, "abs": operator.abs, "invert": operator.invert}
CONVERSIONS = {
    "bool": bool,
    "int": int,
    "float": float,
    "complex": complex,
    "index": operator.index,
    "len": len,
    "iter": list,
    "round": round,
}
# the namespace's name of each operator, for differences.py (``x + y`` is add)
NAMES = {
    "add": "add",
    "sub": "subtract",
    "mul": "multiply",
    "truediv": "divide",
    "floordiv": "floor_divide",
    "mod": "remainder",
    "pow": "pow",
    "and": "bitwise_and",
    "or": "bitwise_or",
    "xor": "bitwise_xor",
    "lshift": "bitwise_left_shift",
    "rshift": "bitwise_right_shift",
    "matmul": "matmul",
    "eq": "equal",
    "ne": "not_equal",
    "lt": "less",
    "le": "less_equal",
    "gt": "greater",
    "ge": "greater_equal",
    "neg": "negative",
    "pos": "positive",
    "abs": "abs",
    "invert": "bitwise_invert",
}


def other(d: Draw, x: Operand):
    """The second operand: an array of any dtype broadcastable with x, or a Python scalar (big ints too)."""
    return d.like(x, d.pick((x.dtype, *ALL))) if d(st.booleans()) else d.scalar()


def binary(op):
    return lambda d: (op, (x := d.array(), other(d, x)))


def reflected(op):
    # a Python scalar on the left: Python calls the NeuronArray's __r<op>__
    return lambda d: (op, (d.scalar(), d.array()))


def inplace(op):
    def make(d: Draw):
        x = d.array(layouts=("contiguous", "reversed", "strided", "transposed", "readonly", "broadcast"))
        return op, (x, other(d, x))

    return make


def matmul_operands(d: Draw):
    n, k, m = (d(st.integers(0, 3)) for _ in range(3))
    return d.array(NUMERIC, shape=d.pick(((), (2,))) + (n, k)), d.array(NUMERIC, shape=(k, m))


def getitem_key(d: Draw, x: Operand):
    """A key NumPy takes (or refuses): integers in and out of range, slices with any step, Ellipsis, None,
    a boolean mask, an integer array, and tuples of them."""
    shape = x.value.shape
    parts = []
    for n in shape[: d(st.integers(0, len(shape)))]:
        parts.append(
            d(
                st.one_of(
                    st.integers(-n - 1, n),
                    st.sampled_from([slice(None, None, -1), slice(1, None, 2), slice(None), slice(-2, None, -2)]),
                )
            )
        )
    kind = d.pick(("tuple", "ellipsis", "none", "mask", "array"))
    if kind == "ellipsis":
        parts = [..., *parts[:1]]
    elif kind == "none":
        parts = [None, *parts]
    elif kind == "mask":
        return d.array("bool", shape=shape, layouts=("contiguous",))
    elif kind == "array" and shape:
        n = shape[0]
        return d.array(
            "int64",
            value=np.array(d(st.lists(st.integers(-n, max(n - 1, -n)), max_size=3)), dtype=np.int64),
            layouts=("contiguous",),
        )
    return tuple(parts) if len(parts) != 1 else parts[0]


def getitem(d: Draw):
    x = d.array()
    return operator.getitem, (x, getitem_key(d, x))


def setitem(d: Draw):
    x = d.array(layouts=("contiguous", "reversed", "strided", "transposed", "readonly", "broadcast"))
    key = getitem_key(d, x)
    value = d.scalar() if d(st.booleans()) else d.array(d.pick(ALL), shape=d.pick(((), (1,))))

    def write(a, k, v):
        a[k] = v
        return None

    return write, (x, key, value)


OPERATORS: dict[str, object] = {}
for _n in BINARY + COMPARISON:
    OPERATORS[f"__{_n}__"] = binary(getattr(operator, _n if _n not in ("and", "or") else f"{_n}_"))
for _n in BINARY:
    _op = getattr(operator, _n if _n not in ("and", "or") else f"{_n}_")
    OPERATORS[f"__r{_n}__"] = reflected(_op)
    OPERATORS[f"__i{_n}__"] = inplace(getattr(operator, f"i{_n}"))
for _n, _op in UNARY.items():
    OPERATORS[f"__{_n}__"] = (lambda op: lambda d: (op, (d.array(),)))(_op)
for _n, _op in CONVERSIONS.items():
    OPERATORS[f"__{_n}__"] = (lambda op: lambda d: (op, (d.array(shape=d.pick(((), (1,), (2,), (0,)))),)))(_op)
OPERATORS["__matmul__"] = lambda d: (operator.matmul, matmul_operands(d))
OPERATORS["__rmatmul__"] = lambda d: (operator.matmul, (np.ones((2, 3)).tolist(), d.array(NUMERIC, shape=(3, 2))))
OPERATORS["__imatmul__"] = lambda d: (
    operator.imatmul,
    (d.array(NUMERIC, shape=(2, 2)), d.array(NUMERIC, shape=(2, 2))),
)
OPERATORS["__getitem__"] = getitem
OPERATORS["__setitem__"] = setitem


@pytest.mark.parametrize("dunder", sorted(OPERATORS))
@HARNESS
@given(data=st.data())
def test_operator(dunder: str, data: st.DataObject) -> None:
    d = Draw(data)
    fn, args = OPERATORS[dunder](d)
    for op in d.operands:
        op.build()
    core = dunder[2:-2]
    inplace = core[0] == "i" and core[1:] in (*BINARY, "matmul")
    if core not in NAMES and core[0] in "ri" and core[1:] in NAMES:
        core = core[1:]
    case = Case(
        NAMES.get(core, core),
        tuple(op.dtype for op in d.operands),
        tuple(op.layout for op in d.operands),
        args,
        kind="write" if inplace or dunder == "__setitem__" else "call",
        source="operator",
    )
    note(f"{dunder}: {args!r}")
    want = outcome(fn, *side(args, "np"))
    got = outcome(fn, *side(args, "xp"))
    note(f"NumPy: {want!r}\nNeuronArray side: {got!r}")
    close = 8 if case.name in ("pow", "matmul") else None
    documented = assert_matches(got, want, close=close, relax=relaxations(case), what=dunder)
    if documented != NO_REFERENCE:  # else NumPy wrote nothing to compare the memory with
        assert_bases(d.operands, what=f"{dunder} operands' memory", unchanged=documented == RAISED)
