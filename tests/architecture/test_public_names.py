"""Public names, by construction over every module of the package: no ``__all__`` lists a private name, and every
exception or warning class the package defines is one of ``trn_backend.errors``'s (defined there, published
there, the same object wherever else it is re-exported)."""

from __future__ import annotations

import importlib
import inspect

import pytest

import trn_backend
from tests.architecture.test_layering import modules
from trn_backend import errors

# exception classes that never leave the module that defines them (control flow, not errors a caller sees)
_INTERNAL = {("trn_backend.kernels.reference._common", "_NonFinite"), ("trn_backend.kernels.nki.model.core", "Stopped")}


def _imported() -> list:
    # a package's __main__ runs its command when imported
    return [importlib.import_module(name) for name in sorted(modules()) if not name.endswith(".__main__")]


@pytest.mark.parametrize("module", _imported(), ids=lambda m: m.__name__)
def test_no_private_name_in_all(module):
    private = [n for n in getattr(module, "__all__", ()) if n.startswith("_") and not n.startswith("__")]
    assert not private, f"{module.__name__}.__all__ lists private names {private}"


def test_every_exception_class_is_in_the_errors_module():
    defined = {
        (m.__name__, name): obj
        for m in _imported()
        for name, obj in vars(m).items()
        if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == m.__name__
    }
    outside = sorted(set(defined) - _INTERNAL - {("trn_backend.errors", n) for n in errors.__all__})
    assert not outside, f"exception classes defined outside trn_backend.errors: {outside}"
    for name in errors.__all__:
        cls = getattr(errors, name)
        assert cls.__module__ == "trn_backend.errors" and cls.__doc__, name


def test_the_errors_are_the_same_objects_where_re_exported():
    from trn_backend.distributed._strategy import PlacementError
    from trn_backend.kernels import reference
    from trn_backend.kernels.nki import model

    assert trn_backend.PrecisionError is errors.PrecisionError is reference.PrecisionError
    assert reference.PrecisionWarning is errors.PrecisionWarning
    assert PlacementError is errors.PlacementError
    assert model.ModelError is errors.ModelError
    assert issubclass(errors.PrecisionError, ValueError) and issubclass(errors.RegisterUseError, TypeError)
    with pytest.raises(errors.PrecisionError, match=r"^matmul\(\): no mode reaches"):
        with trn_backend.precision(target_forward_error=1e-30):
            trn_backend.ones((2, 2)) @ trn_backend.ones((2, 2))
