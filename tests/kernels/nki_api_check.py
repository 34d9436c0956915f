"""Static API check for NKI kernel sources, so kernels can be vetted without the Neuron toolchain.

The NKI 0.6.0 names and parameters (tests/kernels/data/nki_api_0_6.json, transcribed from NKI_FACTS.md section 11)
are the reference. ``check_source`` parses a kernel file with ``ast`` and reports, as ``file:line: message``:

a. attribute chains rooted at ``nki`` / ``nl`` / ``nisa`` (or any alias imported for them) that name something
   the table does not document, or a name that is only in the stubs (not in the published API index);
b. calls to documented functions with an unknown keyword, a keyword repeating a positional argument, or more
   positional arguments than parameters;
c. any import of ``neuronxcc`` (the legacy toolchain, not the ``nki`` package);
d. Python constructs NKI 0.3+ rejects: ``*args`` / bare ``*`` / ``**kwargs`` in a signature, ``is`` / ``is not``,
   list displays or comprehensions as call arguments (NKI wants tuples), except access patterns, which are lists
   of [stride, count] pairs (``NkiTensor.ap``'s ``pattern: list[list[int]]``; a tuple there is reported), and
   string ``buffer=`` arguments.

Aliases are tracked per file, not per scope: that is enough for kernel files, which bind them once at the top.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from pathlib import Path

TABLE_PATH = Path(__file__).parent / "data" / "nki_api_0_6.json"

# The conventional module aliases; a bare ``nl`` in a kernel file means nki.language even without an import.
CONVENTIONAL_ALIASES = {"nki": "nki", "nl": "nki.language", "nisa": "nki.isa"}

VAR_KEYWORD = "**"  # a parameter name starting with this takes any keyword (only nki.jit's **kwargs)


@dataclass(frozen=True)
class Table:
    """The documented API, flattened to fully qualified names (``nki.isa.engine.vector``)."""

    source: str
    modules: frozenset[str]  # "nki", "nki.language", ...
    functions: dict[str, tuple[str, ...]]  # "nki.isa.nc_matmul" -> ordered parameter names
    known: frozenset[str]  # every documented qualified name, modules included
    stub_only: frozenset[str]  # in the 0.6.0 stubs but not in the published API index


def load_table(path: str | Path | None = None) -> Table:
    """Read the API table JSON (default: tests/kernels/data/nki_api_0_6.json) into a ``Table``."""
    data = json.loads(Path(path or TABLE_PATH).read_text())
    functions: dict[str, tuple[str, ...]] = {}
    known: set[str] = set(data["modules"])
    stub_only: set[str] = set()
    for mod, entry in data["modules"].items():
        functions.update({f"{mod}.{name}": tuple(params) for name, params in entry["functions"].items()})
        known.update(f"{mod}.{name}" for name in [*entry["functions"], *entry["names"], *entry["stub_only"]])
        stub_only.update(f"{mod}.{name}" for name in entry["stub_only"])
    known.add("nki.language.tile_size")
    known.update(f"nki.language.tile_size.{attr}" for attr in data["tile_size"])
    for enum, members in data["isa_enums"].items():
        known.update(f"nki.isa.{enum}.{member}" for member in members)
    known.update(f"nki.isa.{alias}" for alias in data["isa_engine_aliases"])
    tensor = data["nki_tensor"]
    known.update(f"nki.language.NkiTensor.{m}" for m in [*tensor["methods"], *tensor["attributes"]])
    return Table(data["source"], frozenset(data["modules"]), functions, frozenset(known), frozenset(stub_only))


def _dotted(node: ast.expr) -> list[str] | None:
    """``a.b.c`` -> ["a", "b", "c"]; None when the chain is not rooted at a plain name (a call, a subscript)."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


class _Checker:
    """One pass over one parsed file; ``problems`` collects (line, message)."""

    def __init__(self, table: Table) -> None:
        self.table = table
        self.aliases: dict[str, str] = dict(CONVENTIONAL_ALIASES)  # local name -> qualified NKI name
        self.problems: list[tuple[int, str]] = []

    def report(self, node: ast.AST, message: str) -> None:
        self.problems.append((getattr(node, "lineno", 0), message))

    def check_name(self, node: ast.AST, written: str, qualified: str) -> bool:
        """Report ``qualified`` (spelled ``written`` in the source) if undocumented or stub-only; True if fine."""
        if qualified in self.table.stub_only:
            self.report(node, f"`{written}` is only in the NKI 0.6 stubs, not in the published API index")
            return False
        if qualified not in self.table.known:
            self.report(node, f"`{written}` is not in the NKI 0.6 API table")
            return False
        return True

    # --- imports (rule c and alias resolution) ---
    def imports(self, tree: ast.Module) -> None:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    top = alias.name.split(".")[0]
                    if top == "neuronxcc":
                        self.report(node, f"`import {alias.name}`: use the `nki` package, not `neuronxcc`")
                    elif top == "nki" and self.check_name(node, alias.name, alias.name):
                        self.aliases[alias.asname or "nki"] = alias.name if alias.asname else "nki"
            elif isinstance(node, ast.ImportFrom):
                module = node.module or ""
                top = module.split(".")[0]
                if node.level == 0 and top == "neuronxcc":
                    self.report(node, f"`from {module} import ...`: use the `nki` package, not `neuronxcc`")
                elif node.level == 0 and top == "nki":
                    for alias in node.names:
                        if alias.name == "*":
                            self.report(node, f"`from {module} import *` hides which NKI names are used")
                        elif self.check_name(node, f"{module}.{alias.name}", f"{module}.{alias.name}"):
                            self.aliases[alias.asname or alias.name] = f"{module}.{alias.name}"
                else:  # e.g. `from .toolchain import nki, nl, nisa`: the conventional aliases, re-exported
                    for alias in node.names:
                        if alias.name in CONVENTIONAL_ALIASES:
                            self.aliases[alias.asname or alias.name] = CONVENTIONAL_ALIASES[alias.name]

    # --- rule a: attribute chains ---
    def qualify(self, node: ast.expr) -> tuple[list[str], str] | None:
        """The chain as written and its qualified NKI name, or None when it is not rooted at an NKI alias."""
        parts = _dotted(node)
        if parts is None or parts[0] not in self.aliases:
            return None
        return parts, ".".join([self.aliases[parts[0]], *parts[1:]])

    def chain(self, node: ast.Attribute) -> None:
        resolved = self.qualify(node)
        if resolved is None:
            return
        parts, _ = resolved
        root = self.aliases[parts[0]]
        for i in range(2, len(parts) + 1):  # report the shortest undocumented prefix only
            if not self.check_name(node, ".".join(parts[:i]), ".".join([root, *parts[1:i]])):
                return

    # --- rule b: calls to documented functions ---
    def call(self, node: ast.Call) -> None:
        resolved = self.qualify(node.func)
        if resolved is None or resolved[1] not in self.table.functions:
            return
        written = ".".join(resolved[0])
        params = self.table.functions[resolved[1]]
        positional = [p for p in params if not p.startswith(VAR_KEYWORD)]
        takes_any_keyword = len(positional) < len(params)
        if not any(isinstance(a, ast.Starred) for a in node.args) and len(node.args) > len(positional):
            self.report(node, f"`{written}` takes at most {len(positional)} positional arguments, got {len(node.args)}")
        for kw in node.keywords:
            if kw.arg is None:  # **mapping: cannot be checked statically
                continue
            if kw.arg in positional[: len(node.args)]:
                self.report(node, f"`{written}` got parameter `{kw.arg}` both positionally and by keyword")
            elif kw.arg not in positional and not takes_any_keyword:
                self.report(node, f"`{written}` has no parameter `{kw.arg}` (NKI 0.6: {', '.join(params)})")

    # --- rule d: Python constructs NKI rejects ---
    def signature(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        name = getattr(node, "name", "<lambda>")
        args = node.args
        if args.vararg:
            self.report(node, f"`{name}` has `*{args.vararg.arg}` in its signature; NKI rejects variadic arguments")
        elif args.kwonlyargs:
            self.report(node, f"`{name}` has a bare `*` (keyword-only parameters) in its signature; NKI rejects it")
        if args.kwarg:
            self.report(node, f"`{name}` has `**{args.kwarg.arg}` in its signature; NKI rejects variadic keywords")

    def call_arguments(self, node: ast.Call) -> None:
        callee = ast.unparse(node.func)
        values = [(None, a) for a in node.args] + [(kw.arg, kw.value) for kw in node.keywords]
        for keyword, value in values:
            where = f"`{keyword}=`" if keyword else "a positional argument"
            if isinstance(value, (ast.List, ast.ListComp)) and not _pattern(value):
                self.report(value, f"`{callee}` gets a list as {where}; NKI wants a tuple")
            if (
                callee.endswith(".ap")
                and (keyword == "pattern" or (keyword is None and value is node.args[0]))
                and isinstance(value, ast.Tuple)
            ):
                self.report(
                    value,
                    f"`{callee}` gets its access pattern as a tuple; it is a list of [stride, count] "
                    "lists (NkiTensor.ap: pattern: list[list[int]])",
                )
            if keyword == "buffer" and isinstance(value, ast.Constant) and isinstance(value.value, str):
                self.report(value, f"`{callee}` gets buffer={value.value!r}; use a buffer object such as `nl.sbuf`")

    def run(self, tree: ast.Module) -> None:
        self.imports(tree)
        inner = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and id(node) not in inner:
                self.chain(node)
            elif isinstance(node, ast.Call):
                self.call(node)
                self.call_arguments(node)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                self.signature(node)
            elif isinstance(node, ast.Compare) and any(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
                self.report(node, f"`{ast.unparse(node)}` uses `is`/`is not`; NKI rejects identity comparisons")


def _pattern(node: ast.expr) -> bool:
    """A list display of [stride, count] list displays: an access pattern."""
    return (
        isinstance(node, ast.List)
        and bool(node.elts)
        and all(isinstance(e, ast.List) and len(e.elts) == 2 for e in node.elts)
    )


def check_source(source: str, table: Table, filename: str = "<kernel>") -> list[str]:
    """Problems in one NKI kernel source, each ``filename:line: message``; an empty list means it passes."""
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as exc:
        return [f"{filename}:{exc.lineno}: syntax error: {exc.msg}"]
    checker = _Checker(table)
    checker.run(tree)
    return [f"{filename}:{line}: {message}" for line, message in sorted(checker.problems)]
