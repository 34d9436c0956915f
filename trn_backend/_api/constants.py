"""Constants of the standard."""

import math

__all__ = ["e", "inf", "nan", "newaxis", "pi"]

e = math.e
"""Euler's number, the base of the natural logarithm: the Python float nearest to it (2.718281828459045)."""

inf = math.inf
"""Positive infinity, IEEE 754 (a Python float)."""

nan = math.nan
"""A quiet not-a-number, IEEE 754 (a Python float)."""

newaxis = None
"""``None``: in an index, adds an axis of length one (``x[:, newaxis]``)."""

pi = math.pi
"""The ratio of a circle's circumference to its diameter: the Python float nearest to it (3.141592653589793)."""
