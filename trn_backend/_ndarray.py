"""NumPy's ndarray methods on NeuronArray, for code that duck-types ndarray (dask's chunk functions call
x.sum(axis=...), x.reshape(...), x.astype(...)).

Each runs the NumPy dispatch table's implementation of the NumPy function of its name (trn_backend.numpy_dispatch),
which calls the namespace: one implementation of each rule. The method hands the call to the dispatch table
directly (``_numpy_method``, which calls the implementation itself where the arguments need no conversion)
rather than through the NumPy function and its protocol; where an argument is another array type with its own
``__array_function__``, the NumPy function runs instead, so that NumPy's protocol lets that type take part.
NumPy's in-place methods sort and resize are left out (``fill`` and the attributes ``real``, ``imag``,
``strides``, ``flat`` are NeuronArray's own). ``NdarrayMethods`` is a base class of NeuronArray, which supplies
``_t`` (the tensor), ``size``, ``__array_ufunc__`` and ``_numpy_method``; ``item``, a Python conversion, is
NeuronArray's own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from . import _dtypes

if TYPE_CHECKING:
    import torch

__all__ = ["NdarrayMethods"]


def _numpy(func: Any, x: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``func(x, *args, **kwargs)`` as NumPy would run it on ``x``: the dispatch table (``_numpy_method``) with no
    other array type taking part (``__array_ufunc__`` for a ufunc), else the NumPy function itself (NumPy's
    protocol then asks each type)."""
    for values in (args, kwargs.values()):
        for a in values:
            foreign = _FOREIGN.get(type(a))
            if foreign is None:
                foreign = _FOREIGN[type(a)] = hasattr(type(a), "__array_function__") and not issubclass(
                    type(a), (NdarrayMethods, np.ndarray)
                )
            if foreign:
                return func(x, *args, **kwargs)
    if isinstance(func, np.ufunc):  # conj and conjugate are ufuncs: NEP 13's entry
        return x.__array_ufunc__(func, "__call__", x, *args, **kwargs)
    return x._numpy_method(func, args, kwargs)


# type -> whether it is another array type with its own __array_function__ (filled as types are met: a lookup
# that fails, for ints and None, costs more than the rest of a small method call)
_FOREIGN: dict[type, bool] = {}


class NdarrayMethods:
    """ndarray's methods as the NumPy functions of the same names, called on the array."""

    __slots__ = ()

    if TYPE_CHECKING:  # what NeuronArray supplies (see the module docstring)
        _t: torch.Tensor

        @property
        def size(self) -> int: ...

    def all(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.all(x, ...) as ndarray's method."""
        return _numpy(np.all, self, args, kwargs)

    def any(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.any(x, ...) as ndarray's method."""
        return _numpy(np.any, self, args, kwargs)

    def argmax(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.argmax(x, ...) as ndarray's method."""
        return _numpy(np.argmax, self, args, kwargs)

    def argmin(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.argmin(x, ...) as ndarray's method."""
        return _numpy(np.argmin, self, args, kwargs)

    def argsort(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.argsort(x, ...) as ndarray's method."""
        return _numpy(np.argsort, self, args, kwargs)

    def clip(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.clip(x, ...) as ndarray's method."""
        return _numpy(np.clip, self, args, kwargs)

    def conj(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.conj(x, ...) as ndarray's method."""
        return _numpy(np.conj, self, args, kwargs)

    def conjugate(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.conjugate(x, ...) as ndarray's method."""
        return _numpy(np.conjugate, self, args, kwargs)

    def cumprod(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.cumprod(x, ...) as ndarray's method."""
        return _numpy(np.cumprod, self, args, kwargs)

    def cumsum(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.cumsum(x, ...) as ndarray's method."""
        return _numpy(np.cumsum, self, args, kwargs)

    def diagonal(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.diagonal(x, ...) as ndarray's method."""
        return _numpy(np.diagonal, self, args, kwargs)

    def dot(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.dot(x, ...) as ndarray's method."""
        return _numpy(np.dot, self, args, kwargs)

    def max(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.max(x, ...) as ndarray's method."""
        return _numpy(np.max, self, args, kwargs)

    def mean(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.mean(x, ...) as ndarray's method."""
        return _numpy(np.mean, self, args, kwargs)

    def min(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.min(x, ...) as ndarray's method."""
        return _numpy(np.min, self, args, kwargs)

    def nonzero(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.nonzero(x, ...) as ndarray's method."""
        return _numpy(np.nonzero, self, args, kwargs)

    def prod(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.prod(x, ...) as ndarray's method."""
        return _numpy(np.prod, self, args, kwargs)

    def ravel(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.ravel(x, ...) as ndarray's method."""
        return _numpy(np.ravel, self, args, kwargs)

    def repeat(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.repeat(x, ...) as ndarray's method."""
        return _numpy(np.repeat, self, args, kwargs)

    def round(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.round(x, ...) as ndarray's method."""
        return _numpy(np.round, self, args, kwargs)

    def searchsorted(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.searchsorted(x, ...) as ndarray's method."""
        return _numpy(np.searchsorted, self, args, kwargs)

    def squeeze(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.squeeze(x, ...) as ndarray's method."""
        return _numpy(np.squeeze, self, args, kwargs)

    def std(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.std(x, ...) as ndarray's method."""
        return _numpy(np.std, self, args, kwargs)

    def sum(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.sum(x, ...) as ndarray's method."""
        return _numpy(np.sum, self, args, kwargs)

    def swapaxes(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.swapaxes(x, ...) as ndarray's method."""
        return _numpy(np.swapaxes, self, args, kwargs)

    def take(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.take(x, ...) as ndarray's method."""
        return _numpy(np.take, self, args, kwargs)

    def trace(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.trace(x, ...) as ndarray's method."""
        return _numpy(np.trace, self, args, kwargs)

    def var(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.var(x, ...) as ndarray's method."""
        return _numpy(np.var, self, args, kwargs)

    def reshape(self, *shape: Any, order: str = "C", copy: bool | None = None) -> Any:
        """ndarray.reshape: the shape as one tuple or as separate ints."""
        return _numpy(np.reshape, self, (shape[0] if len(shape) == 1 else shape,), {"order": order, "copy": copy})

    def transpose(self, *axes: Any) -> Any:
        """ndarray.transpose: the axes as one sequence or as separate ints; none (or None) reverses them."""
        return _numpy(np.transpose, self, (axes[0] if len(axes) == 1 else (axes or None),), {})

    def astype(
        self, dtype: Any, order: str = "K", casting: str = "unsafe", subok: bool = True, copy: bool = True
    ) -> Any:
        """ndarray.astype: ``casting`` is checked with NumPy's rule; NeuronArrays are C-ordered (order K, A or C)."""
        if order not in ("K", "A", "C"):
            raise ValueError(f"x.astype(): order={order!r} cannot be met: NeuronArrays are C-ordered")
        target = _dtypes.to_dtype(dtype, "x.astype() dtype")
        if casting != "unsafe" and not np.can_cast(_dtypes.public(self._t.dtype), _dtypes.public(target), casting):  # type: ignore[arg-type]  # NumPy checks the name
            raise TypeError(
                f"x.astype(): cannot cast {_dtypes.name(self._t.dtype)} to {_dtypes.name(target)} under "
                f"casting={casting!r}"
            )
        # NumPy's unsafe cast (complex to real keeps the real part)
        return _numpy(np.astype, self, (target,), {"copy": copy})

    def copy(self, order: str = "C") -> Any:
        """ndarray.copy (NeuronArrays are C-ordered: order K, A or C)."""
        if order not in ("K", "A", "C"):
            raise ValueError(f"x.copy(): order={order!r} cannot be met: NeuronArrays are C-ordered")
        return _numpy(np.copy, self, (), {})

    def flatten(self, order: str = "C") -> Any:
        """ndarray.flatten: a 1-d copy."""
        return _numpy(np.copy, _numpy(np.ravel, self, (), {"order": order}), (), {})

    def tolist(self) -> Any:
        """ndarray.tolist: nested lists of Python scalars (a device array is copied to the host)."""
        return np.asarray(self).tolist()

    @property
    def itemsize(self) -> int:
        """Bytes per element (ndarray.itemsize)."""
        return self._t.element_size()

    @property
    def nbytes(self) -> int:
        """Bytes of the elements."""
        return self._t.element_size() * self.size
