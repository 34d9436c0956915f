"""The namespace's extension point: argument types whose calls another layer handles (sharded arrays).

Every public function of the namespace is ``public(func, name)``: it calls ``func`` unless a registered type
takes part in the call, in which case that type's handler runs the call instead. Adapters register their types
in ``OVERRIDES`` when they are imported (``trn_backend.distributed`` does for its sharded arrays and their
``Sharding``); nothing is rebound. This module imports nothing from trn_backend: every layer may import it.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

__all__ = ["OVERRIDES", "Handler", "public", "handler"]

# handler(func, name, args, kwargs): runs ``func`` (the namespace's own function, ``name`` its public name, such
# as "linalg.matmul") on arguments one of which has the handler's type
Handler = Callable[[Callable[..., Any], str, tuple, dict], Any]

# argument type (exactly; subclasses register themselves) -> its handler
OVERRIDES: dict[type, Handler] = {}

_SEQUENCES = (list, tuple)


def handler(args: tuple, kwargs: dict[str, Any]) -> Handler | None:
    """The handler of the first argument of a registered type: an argument, an element of a list or tuple
    argument, or a keyword value (``device=``); None when there is none."""
    for x in (*args, *kwargs.values()):
        kind = type(x)
        found = OVERRIDES.get(kind)
        if found is not None:
            return found
        if kind in _SEQUENCES:
            for y in x:
                found = OVERRIDES.get(type(y))
                if found is not None:
                    return found
    return None


def public(func: Callable[..., Any], name: str) -> Callable[..., Any]:
    """``func`` as the namespace exports it under ``name``: called directly unless ``OVERRIDES`` has a type
    among the arguments (see ``handler``). Without registered types the cost is one truth test and one call;
    ``func``'s name, docstring and signature are the wrapper's (``inspect.signature`` follows ``__wrapped__``)."""
    params = list(inspect.signature(func).parameters.values())
    positional = [p.name for p in params if p.kind is p.POSITIONAL_ONLY and p.default is p.empty]
    keywords = [p for p in params if p.kind is p.KEYWORD_ONLY]
    if positional and len(positional) + len(keywords) == len(params) and func.__name__.isidentifier() and \
            not {func.__name__, *positional} & _TEMPLATE_NAMES:
        return _exact(func, name, positional, bool(keywords))

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if OVERRIDES:
            found = handler(args, kwargs)
            if found is not None:
                return found(func, name, args, kwargs)
        return func(*args, **kwargs)

    return wrapper


# A function whose parameters are required positional-only ones, then keyword-only ones (the element-wise
# functions, the reductions: the hottest calls) gets a wrapper with those positional parameters and ``**kwargs``:
# it forwards them without packing ``*args`` (the general wrapper's call costs about three times as much), and a
# handler still sees the call's own arguments, since such a function can only be called as ``f(a, b, key=...)``.
# The wrapper is defined under the function's own name, so a wrong call's TypeError names the function.
_TEMPLATE_NAMES = frozenset({"func", "public_name", "handler", "OVERRIDES", "found", "kwargs"})
_EXACT = """\
def {function}({params}, /{more}):
    if OVERRIDES:
        found = handler(({params},), {given})
        if found is not None:
            return found(func, public_name, ({params},), {given})
    return func({params}{forward})
"""


def _exact(func: Callable[..., Any], name: str, positional: list[str], keywords: bool) -> Callable[..., Any]:
    scope = {"func": func, "public_name": name, "handler": handler, "OVERRIDES": OVERRIDES}
    source = _EXACT.format(function=func.__name__, params=", ".join(positional),
                           more=", **kwargs" if keywords else "", given="kwargs" if keywords else "{}",
                           forward=", **kwargs" if keywords else "")
    exec(source, scope)  # noqa: S102 - the fixed template above, with the function's parameter names
    return functools.wraps(func)(scope[func.__name__])
