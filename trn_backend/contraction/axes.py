"""tensordot's axes: validated, made canonical and turned into labels (a ``Spec``), with errors that name the
axes and sizes: what tensordot's front door and the opt_einsum backend's tensordot share.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TypeGuard

import numpy as np
import torch

from .._helpers import normalize_axis
from .parse import Spec, symbol
from .plan import result_dtype

__all__ = ["canonical_axes", "is_int", "tensordot_spec"]

Size = tuple[int, ...]
Axes = int | tuple[tuple[int, ...], tuple[int, ...]]  # canonical axes (``canonical_axes``)


def canonical_axes(axes: object) -> Axes:
    """``axes`` as an int or a pair of int tuples; anything else is a TypeError naming it."""
    if (
        type(axes) is tuple
        and len(axes) == 2
        and type(axes[0]) is tuple
        and type(axes[1]) is tuple
        and all(type(i) is int for i in axes[0] + axes[1])
    ):
        return axes  # already canonical: what opt_einsum passes on every step
    if is_int(axes):
        return int(axes)
    if isinstance(axes, Sequence) and not isinstance(axes, str) and len(axes) == 2:
        pair = tuple(tuple(x) if isinstance(x, Sequence) and not isinstance(x, str) else (x,) for x in axes)
        if all(is_int(i) for side in pair for i in side):
            first, second = (tuple(int(i) for i in side) for side in pair)  # two sides: len(axes) == 2
            return first, second
    raise TypeError(f"tensordot(): axes must be an int or a pair of sequences of ints, got {axes!r}")


def is_int(x: object) -> TypeGuard[int | np.integer]:
    """An int or NumPy integer, not a bool."""
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


@functools.lru_cache(maxsize=4096)
def tensordot_spec(sa: Size, sb: Size, da: torch.dtype, db: torch.dtype, axes: Axes) -> Spec:
    """The labels of tensordot(x1, x2, axes) on operands of these shapes and dtypes (``axes`` canonical),
    validated (errors name the axes and sizes)."""
    result_dtype((da, db), "tensordot")
    if isinstance(axes, int):
        if not 0 <= axes <= min(len(sa), len(sb)):
            raise ValueError(
                f"tensordot(): axes={axes} must be between 0 and the smaller rank "
                f"({min(len(sa), len(sb))}) of x1 and x2"
            )
        axes_a, axes_b = tuple(range(len(sa) - axes, len(sa))), tuple(range(axes))
    else:
        axes_a, axes_b = axes
        if len(axes_a) != len(axes_b):
            raise ValueError(f"tensordot(): axes {axes!r} name {len(axes_a)} axes of x1 but {len(axes_b)} of x2")
        axes_a = tuple(normalize_axis(i, len(sa), "tensordot") for i in axes_a)
        axes_b = tuple(normalize_axis(i, len(sb), "tensordot") for i in axes_b)
        for ax, name in ((axes_a, "x1"), (axes_b, "x2")):
            if len(set(ax)) != len(ax):
                raise ValueError(f"tensordot(): axes {axes!r} repeat an axis of {name}")
    for i, j in zip(axes_a, axes_b, strict=True):
        if sa[i] != sb[j]:
            raise ValueError(
                f"tensordot(): axis {i} of x1 has size {sa[i]} but axis {j} of x2 has size "
                f"{sb[j]} (shapes {tuple(sa)} and {tuple(sb)}); contracted sizes must be equal"
            )
    a = [symbol(i) for i in range(len(sa))]
    b = [symbol(len(sa) + j) for j in range(len(sb))]
    for i, j in zip(axes_a, axes_b, strict=True):
        b[j] = a[i]
    output = [c for i, c in enumerate(a) if i not in axes_a] + [c for j, c in enumerate(b) if j not in axes_b]
    return Spec(("".join(a), "".join(b)), "".join(output))
