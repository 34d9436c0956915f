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
from typing import Any, TypeVar, cast

__all__ = ["OVERRIDES", "Handler", "public", "handler"]

# handler(func, name, args, kwargs): runs ``func`` (the namespace's own function, ``name`` its public name, such
# as "linalg.matmul") on arguments one of which has the handler's type
Handler = Callable[[Callable[..., Any], str, tuple, dict], Any]

# a public function's own type: its wrapper has its parameters, name and docstring, so a checker sees the public
# function as the implementation (a TypeVar, not ParamSpec and TypeVar: those would drop the overloads of a callable
# protocol such as contraction.front.Door)
F = TypeVar("F", bound=Callable[..., Any])

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


def public(func: F, name: str) -> F:
    """``func`` as the namespace exports it under ``name``: called directly unless ``OVERRIDES`` has a type
    among the arguments (see ``handler``). Without registered types the cost is one truth test and one call;
    ``func``'s name, docstring and signature are the wrapper's (``inspect.signature`` follows ``__wrapped__``)."""
    params = list(inspect.signature(func).parameters.values())
    positional = [p.name for p in params if p.kind is p.POSITIONAL_ONLY and p.default is p.empty]
    keywords = [p for p in params if p.kind is p.KEYWORD_ONLY]
    if (
        positional
        and len(positional) + len(keywords) == len(params)
        and func.__name__.isidentifier()
        and not {func.__name__, *positional, *(p.name for p in keywords)} & _TEMPLATE_NAMES
        and not any(p.name.startswith("_default_") for p in keywords)
    ):
        # the exec'd wrapper has func's parameters, defaults and name (the template in _exact)
        return cast(F, _exact(func, name, positional, keywords))

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if OVERRIDES:
            found = handler(args, kwargs)
            if found is not None:
                return found(func, name, args, kwargs)
        return func(*args, **kwargs)

    return cast(F, wrapper)  # wraps(func): func's name and docstring; it takes func's arguments and passes them on


# A function whose parameters are required positional-only ones, then keyword-only ones (the element-wise
# functions, the reductions: the hottest calls) gets a wrapper with those parameters: it forwards them without
# packing ``*args`` (the general wrapper's call costs about three times as much). Its keyword-only parameters are
# the function's own, each with the function's own default object: a call that leaves them all at their defaults
# calls ``func(x, ...)`` without packing ``**kwargs``, and one that gives any of them passes them all by keyword,
# which is the same call (a default passed explicitly is the parameter's own default). A handler sees the
# positional arguments and the keywords that differ from their defaults. The wrapper is defined under the
# function's own name, so a wrong call's TypeError names the function as the function itself would.
_TEMPLATE_NAMES = frozenset({"func", "public_name", "handler", "OVERRIDES", "found", "kwargs"})  # and _default_*
_EXACT = """\
def {function}({params}, /{keyword_params}):
    if OVERRIDES:
        kwargs = {{}}
{given}
        found = handler(({params},), kwargs)
        if found is not None:
            return found(func, public_name, ({params},), kwargs)
{call}
"""


def _exact(
    func: Callable[..., Any], name: str, positional: list[str], keywords: list[inspect.Parameter]
) -> Callable[..., Any]:
    scope: dict[str, Any] = {"func": func, "public_name": name, "handler": handler, "OVERRIDES": OVERRIDES}
    params = ", ".join(positional)
    keyword_params, given, defaults = [], [], []
    for i, p in enumerate(keywords):
        if p.default is p.empty:  # a required keyword: always given
            keyword_params.append(p.name)
            given.append(f"        kwargs[{p.name!r}] = {p.name}")
        else:
            scope[f"_default_{i}"] = p.default
            keyword_params.append(f"{p.name}=_default_{i}")
            given.append(f"        if {p.name} is not _default_{i}:\n            kwargs[{p.name!r}] = {p.name}")
            defaults.append(f"{p.name} is _default_{i}")
    forward = "".join(f", {p.name}={p.name}" for p in keywords)
    if not keywords:
        call = f"    return func({params})"
    elif len(defaults) == len(keywords):
        call = f"    if {' and '.join(defaults)}:\n        return func({params})\n    return func({params}{forward})"
    else:
        call = f"    return func({params}{forward})"
    source = _EXACT.format(
        function=func.__name__,
        params=params,
        keyword_params=", *, " + ", ".join(keyword_params) if keywords else "",
        given="\n".join(given) or "        pass",
        call=call,
    )
    exec(source, scope)  # noqa: S102 - the fixed template above, with the function's parameter names
    return functools.wraps(func)(scope[func.__name__])
