"""Coverage is enforced here, from the registries themselves: every entry point (entries.py: the dispatch TABLE,
the namespace with linalg and fft, the ufuncs, NumPy's fallback for the namespace's names) has a recipe or an
exclusion with a reason, every NeuronArray operator a recipe (test_operators.OPERATORS), and the differences
table is well-formed. A function or operator added later fails here until the harness draws it."""

from __future__ import annotations

import operator

import trn_backend as xp
from trn_backend.numpy_dispatch._registry import TABLE
from trn_backend.numpy_dispatch.ufuncs import UFUNCS

from . import differences
from .entries import EXCLUDED, all_entries, namespace_functions, recipe_for, short_name
from .recipes import RECIPES
from .test_operators import OPERATORS
from .test_writes import VIEWS, WRITES

# Python's operator protocol: every dunder of the operator module that applies to arrays, the reflected forms
# of the binary ones, and the conversions; NeuronArray's own dunders among them must all have a recipe
_BINARY = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor", "lshift", "rshift", "matmul")
PROTOCOL = (
    (
        {n for n in dir(operator) if n.startswith("__") and callable(getattr(operator, n))}
        - {"__call__", "__concat__", "__iconcat__", "__delitem__", "__not__", "__inv__", "__contains__"}
    )
    | {f"__r{n}__" for n in _BINARY}
    | {
        "__bool__",
        "__int__",
        "__float__",
        "__complex__",
        "__index__",
        "__len__",
        "__iter__",
        "__round__",
        "__abs__",
        "__setitem__",
        "__getitem__",
    }
)


def test_every_entry_point_has_a_recipe_or_an_exclusion():
    entries = all_entries()
    ids = {e.id for e in entries}
    assert {f"numpy:{short_name(f)}" for f in TABLE} <= ids
    assert {f"namespace:{n}" for n in namespace_functions()} <= ids
    assert {f"ufunc:{u.__name__}" for u in UFUNCS} <= ids
    missing = sorted(e.id for e in entries if e.id not in EXCLUDED and recipe_for(e) is None)
    assert not missing, (
        f"entry points without an argument recipe (add one to recipes.py, or an exclusion "
        f"with its reason to entries.EXCLUDED): {missing}"
    )
    stale = sorted(set(EXCLUDED) - ids)
    assert not stale, f"exclusions of entry points that no longer exist: {stale}"
    assert all(reason.strip() for reason in EXCLUDED.values())


def test_every_namespace_function_has_a_numpy_reference_or_an_exclusion():
    no_reference = sorted(e.id for e in all_entries() if e.np_fn is None and e.id not in EXCLUDED)
    assert not no_reference, no_reference


def test_every_operator_has_a_recipe():
    defined = {n for n in dir(xp.NeuronArray) if n in PROTOCOL}
    missing = sorted(defined - set(OPERATORS))
    assert not missing, f"NeuronArray operators without a recipe in test_operators.OPERATORS: {missing}"
    assert {"__getitem__", "__setitem__", "__matmul__", "__rmatmul__", "__imatmul__"} <= set(OPERATORS)


def test_recipes_are_used():
    used = {id(recipe_for(e)) for e in all_entries() if e.id not in EXCLUDED}
    unused = sorted(name for name, r in RECIPES.items() if id(r) not in used)
    assert not unused, f"recipes no entry point uses (a renamed function?): {unused}"


def test_write_patterns_cover_the_brief():
    assert {"copyto", "+=", "fill", "flat[0]", "add out="} <= set(WRITES)
    assert {"flip", "rot90", "diagonal", "broadcast_to", "x.imag", "copy.copy", "reshape"} <= set(VIEWS)


def test_differences_table_is_data_with_reasons():
    relaxes = {"scalar", "dtype", "stable", "unordered", "reference", "skip", "ulp", "shape"}
    for entry in differences.TABLE:
        assert entry.reason and entry.differs and entry.condition
        assert entry.relax in relaxes or entry.relax.startswith("raises:"), entry.relax
        assert entry.entries == "*" or isinstance(entry.entries, frozenset)
