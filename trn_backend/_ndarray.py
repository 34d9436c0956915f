"""NumPy's ndarray methods on NeuronArray, for code that duck-types ndarray (dask's chunk functions call
x.sum(axis=...), x.reshape(...), x.astype(...)).

Each calls the NumPy function of its name, which the NumPy dispatch table runs on the namespace
(trn_backend.numpy_dispatch): one implementation of each rule. NumPy's in-place methods sort and resize are
left out (``fill`` and the attributes ``real``, ``imag``, ``strides``, ``flat`` are NeuronArray's own).
``NdarrayMethods`` is a base class of NeuronArray, which supplies ``_t`` (the tensor) and ``size``; ``item``, a
Python conversion, is NeuronArray's own.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _dtypes

__all__ = ["NdarrayMethods"]


class NdarrayMethods:
    """ndarray's methods as the NumPy functions of the same names, called on the array."""

    __slots__ = ()

    def all(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.all(x, ...) as ndarray's method."""
        return np.all(self, *args, **kwargs)

    def any(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.any(x, ...) as ndarray's method."""
        return np.any(self, *args, **kwargs)

    def argmax(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.argmax(x, ...) as ndarray's method."""
        return np.argmax(self, *args, **kwargs)

    def argmin(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.argmin(x, ...) as ndarray's method."""
        return np.argmin(self, *args, **kwargs)

    def argsort(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.argsort(x, ...) as ndarray's method."""
        return np.argsort(self, *args, **kwargs)

    def clip(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.clip(x, ...) as ndarray's method."""
        return np.clip(self, *args, **kwargs)

    def conj(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.conj(x, ...) as ndarray's method."""
        return np.conj(self, *args, **kwargs)

    def conjugate(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.conjugate(x, ...) as ndarray's method."""
        return np.conjugate(self, *args, **kwargs)

    def cumprod(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.cumprod(x, ...) as ndarray's method."""
        return np.cumprod(self, *args, **kwargs)

    def cumsum(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.cumsum(x, ...) as ndarray's method."""
        return np.cumsum(self, *args, **kwargs)

    def diagonal(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.diagonal(x, ...) as ndarray's method."""
        return np.diagonal(self, *args, **kwargs)

    def dot(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.dot(x, ...) as ndarray's method."""
        return np.dot(self, *args, **kwargs)

    def max(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.max(x, ...) as ndarray's method."""
        return np.max(self, *args, **kwargs)

    def mean(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.mean(x, ...) as ndarray's method."""
        return np.mean(self, *args, **kwargs)

    def min(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.min(x, ...) as ndarray's method."""
        return np.min(self, *args, **kwargs)

    def nonzero(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.nonzero(x, ...) as ndarray's method."""
        return np.nonzero(self, *args, **kwargs)

    def prod(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.prod(x, ...) as ndarray's method."""
        return np.prod(self, *args, **kwargs)

    def ravel(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.ravel(x, ...) as ndarray's method."""
        return np.ravel(self, *args, **kwargs)

    def repeat(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.repeat(x, ...) as ndarray's method."""
        return np.repeat(self, *args, **kwargs)

    def round(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.round(x, ...) as ndarray's method."""
        return np.round(self, *args, **kwargs)

    def searchsorted(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.searchsorted(x, ...) as ndarray's method."""
        return np.searchsorted(self, *args, **kwargs)

    def squeeze(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.squeeze(x, ...) as ndarray's method."""
        return np.squeeze(self, *args, **kwargs)

    def std(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.std(x, ...) as ndarray's method."""
        return np.std(self, *args, **kwargs)

    def sum(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.sum(x, ...) as ndarray's method."""
        return np.sum(self, *args, **kwargs)

    def swapaxes(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.swapaxes(x, ...) as ndarray's method."""
        return np.swapaxes(self, *args, **kwargs)

    def take(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.take(x, ...) as ndarray's method."""
        return np.take(self, *args, **kwargs)

    def trace(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.trace(x, ...) as ndarray's method."""
        return np.trace(self, *args, **kwargs)

    def var(self, *args: Any, **kwargs: Any) -> Any:
        """numpy.var(x, ...) as ndarray's method."""
        return np.var(self, *args, **kwargs)

    def reshape(self, *shape: Any, order: str = "C", copy: bool | None = None) -> Any:
        """ndarray.reshape: the shape as one tuple or as separate ints."""
        return np.reshape(self, shape[0] if len(shape) == 1 else shape, order=order, copy=copy)

    def transpose(self, *axes: Any) -> Any:
        """ndarray.transpose: the axes as one sequence or as separate ints; none (or None) reverses them."""
        return np.transpose(self, axes[0] if len(axes) == 1 else (axes or None))

    def astype(self, dtype: Any, order: str = "K", casting: str = "unsafe", subok: bool = True,
               copy: bool = True) -> Any:
        """ndarray.astype: ``casting`` is checked with NumPy's rule; NeuronArrays are C-ordered (order K, A or C)."""
        if order not in ("K", "A", "C"):
            raise ValueError(f"x.astype(): order={order!r} cannot be met: NeuronArrays are C-ordered")
        target = _dtypes.to_dtype(dtype, "x.astype() dtype")
        if casting != "unsafe" and not np.can_cast(_dtypes.public(self._t.dtype), _dtypes.public(target), casting):
            raise TypeError(f"x.astype(): cannot cast {_dtypes.name(self._t.dtype)} to {_dtypes.name(target)} under "
                            f"casting={casting!r}")
        return np.astype(self, target, copy=copy)  # NumPy's unsafe cast (complex to real keeps the real part)

    def copy(self, order: str = "C") -> Any:
        """ndarray.copy (NeuronArrays are C-ordered: order K, A or C)."""
        if order not in ("K", "A", "C"):
            raise ValueError(f"x.copy(): order={order!r} cannot be met: NeuronArrays are C-ordered")
        return np.copy(self)

    def flatten(self, order: str = "C") -> Any:
        """ndarray.flatten: a 1-d copy."""
        return np.copy(np.ravel(self, order=order))

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
