"""The exceptions and warnings trn_backend raises beyond Python's own.

Every class derives from the built-in exception a caller would catch without knowing trn_backend
(``PrecisionError`` is a ``ValueError``, ``RegisterUseError`` a ``TypeError``), so ``except ValueError`` keeps
working; catch these names to tell trn_backend's refusals apart. This module imports nothing, so every layer of
the package (the kernels included) raises the same classes.
"""

from __future__ import annotations

__all__ = ["PrecisionError", "PrecisionWarning", "PlacementError", "ModelError", "RegisterUseError"]


class PrecisionError(ValueError):
    """A precision mode or target that cannot be honoured: operands whose range a mode cannot vouch for, a target
    no mode reaches. The message starts with the function that raised it; the front doors (einsum, matmul, ...)
    rename it to the function the user called."""

    def __init__(self, message: str, func: str = "kernels") -> None:
        super().__init__(f"{func}: {message}")
        self.message = message

    def named(self, func: str) -> PrecisionError:
        """The same error, as raised by ``func`` (the cause travels along)."""
        renamed = PrecisionError(self.message, func)
        renamed.__cause__ = self.__cause__
        return renamed


class PrecisionWarning(UserWarning):
    """A precision mode ran as a cheaper one because the operands leave nothing more to gain."""


class PlacementError(ValueError):
    """Sharded arrays: no placement of a contraction step gives the result placement the caller forced (raised on
    every rank alike)."""


class ModelError(RuntimeError):
    """The CPU model of the NeuronCore: a kernel broke a documented hardware rule; the message names the rule (the
    NKI compiler or the hardware would reject the kernel, or compute garbage)."""


class RegisterUseError(ModelError, TypeError):
    """The CPU model of the NeuronCore: a kernel used a VirtualRegister's value while it is being traced (a
    TypeError under NKI's tracer, SDK isa VirtualRegister note)."""
