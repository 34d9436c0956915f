"""The front doors of contractions: ``entry_point``, the one decorator every public contraction function wears.

``@entry_point("einsum()")`` on ``def einsum(request, subscripts, /, *operands, optimize="auto")`` makes the
public ``einsum(subscripts, /, *operands, optimize="auto", precision=None, target_forward_error=None,
target_relative_error=None)``:

- the three precision keywords become one ``_precision.Request``, built once here (checked, so that errors name
  the function): the call's own choice where it makes one (which replaces the innermost ``precision`` block's
  entirely), else the block's; None for the device default. The body receives it and passes it on whole;
- a call's own relative target opens a report scope, so ``last_precision_report()`` after the call is the call's;
- a ``PrecisionError`` raised below is renamed to name the function the user called.

``ENTRY_POINTS`` lists every decorated function by that name: the registry the precision property test walks,
so an entry point added later is tested by construction. ``takes_precision=False`` marks the functions that
opt_einsum calls (their precision comes from a ``precision`` block only).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, Concatenate, Literal, ParamSpec, Protocol, TypeVar, overload

from .. import _precision

__all__ = ["entry_point", "ENTRY_POINTS"]

P = ParamSpec("P")
R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)
Body = Callable[Concatenate[_precision.Request | None, P], R]


class Door(Protocol[P, R_co]):
    """What a checker sees of a door: the body's parameters after the request; a call that gives a precision
    keyword is checked for its result type only (a ParamSpec cannot gain keyword parameters, PEP 612)."""

    @overload
    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R_co: ...
    @overload
    def __call__(self, *args: Any, precision: str | None, **kwargs: Any) -> R_co: ...
    @overload
    def __call__(self, *args: Any, target_forward_error: float | None, **kwargs: Any) -> R_co: ...
    @overload
    def __call__(self, *args: Any, target_relative_error: float | None, **kwargs: Any) -> R_co: ...


ENTRY_POINTS: dict[str, Callable[..., Any]] = {}

_KEYWORDS = ("precision", "target_forward_error", "target_relative_error")
_active = _precision.active_setting
_Error = _precision.PrecisionError


@overload
def entry_point(
    name: str, *, key: str | None = None, takes_precision: Literal[True] = True
) -> Callable[[Body[P, R]], Door[P, R]]: ...
@overload
def entry_point(
    name: str, *, key: str | None = None, takes_precision: Literal[False]
) -> Callable[[Body[P, R]], Callable[P, R]]: ...
def entry_point(
    name: str, *, key: str | None = None, takes_precision: bool = True
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Make ``body(request, *args, **kwargs)`` the public ``name`` (see the module docstring), listed in
    ``ENTRY_POINTS`` as ``key`` (default: ``name``; several functions may share a name in errors)."""

    def decorate(body: Callable[..., Any]) -> Callable[..., Any]:
        if takes_precision:

            @functools.wraps(body)
            def door(*args: Any, **kwargs: Any) -> Any:
                if not kwargs:  # the common call (the @ operator, each step of a network): no keywords to pass
                    try:
                        return body(_active(), *args)
                    except _Error as e:
                        raise e.named(name) from e.__cause__
                if "precision" in kwargs or "target_forward_error" in kwargs or "target_relative_error" in kwargs:
                    chosen = (
                        kwargs.pop("precision", None),
                        kwargs.pop("target_forward_error", None),
                        kwargs.pop("target_relative_error", None),
                    )
                    own = _precision.request_of(*chosen, name)
                    try:
                        # given as the defaults (the block's request, its report), or no relative target (no
                        # report of the call's own)
                        if own is None or own.relative is None or chosen == (None, None, None):
                            return body(own, *args, **kwargs)
                        with _precision.reporting(own):
                            return body(own, *args, **kwargs)
                    except _Error as e:
                        raise e.named(name) from e.__cause__
                try:
                    return body(_active(), *args, **kwargs)
                except _Error as e:
                    raise e.named(name) from e.__cause__
        else:

            @functools.wraps(body)
            def door(*args: Any, **kwargs: Any) -> Any:
                try:
                    return body(_active(), *args, **kwargs)
                except _Error as e:
                    raise e.named(name) from e.__cause__

        door.__signature__ = _public_signature(body, takes_precision)  # type: ignore[attr-defined]
        ENTRY_POINTS[key or name] = door
        return door

    return decorate


def _public_signature(body: Callable[..., Any], takes_precision: bool) -> inspect.Signature:
    """``body``'s signature without its request, with the precision keywords where the door takes them."""
    params = list(inspect.signature(body).parameters.values())[1:]
    if takes_precision:
        extra = [
            inspect.Parameter(
                k,
                inspect.Parameter.KEYWORD_ONLY,
                default=None,
                annotation="str | None" if k == "precision" else "float | None",
            )
            for k in _KEYWORDS
        ]
        at = next((i for i, p in enumerate(params) if p.kind is inspect.Parameter.VAR_KEYWORD), len(params))
        params[at:at] = extra
    return inspect.Signature(params, return_annotation=inspect.signature(body).return_annotation)
