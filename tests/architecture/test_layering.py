"""The package's layers, checked on the source: an import graph read with ``ast`` (imports inside functions
count), no cycle between modules, and no edge against the layers of docs/architecture.md.

Layers, bottom to top: kernels; base (configuration, devices, dtypes, the precision registry); the array object;
the contraction engine; the namespace; adapters (NumPy dispatch, sharded arrays, autoray, the command-line
tools); the package root, which assembles them. A module may import its own layer and the layers below, with
the exceptions named in ``FORBIDDEN``. A package ``__init__`` importing its own submodules is not an edge (it
re-exports them); any other import of a package counts as an edge to its ``__init__``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Module-name prefixes by layer, bottom to top (the longest matching prefix decides).
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # the errors module imports nothing: every layer, the kernels included, raises its classes
    ("kernels", ("trn_backend.kernels", "trn_backend.errors")),
    (
        "base",
        (
            "trn_backend._config",
            "trn_backend._device",
            "trn_backend._dtypes",
            "trn_backend._precision",
            "trn_backend._mode_costs",
            "trn_backend._neuron_front",
            "trn_backend._overrides",
            "trn_backend._caches",
        ),
    ),
    (
        "array",
        (
            "trn_backend._array",
            "trn_backend._scalars",
            "trn_backend._indexing",
            "trn_backend._ndarray",
            "trn_backend._helpers",
        ),
    ),
    ("contraction", ("trn_backend.contraction",)),
    ("namespace", ("trn_backend._api", "trn_backend._namespace", "trn_backend.linalg", "trn_backend.fft")),
    (
        "adapters",
        (
            "trn_backend.numpy_dispatch",
            "trn_backend.distributed",
            "trn_backend._autoray",
            "trn_backend.check_neuron",
            "trn_backend.precision_report",
            "trn_backend.testing",
        ),
    ),
    ("root", ("trn_backend", "trn_backend.__main__")),
)
RANK = {name: i for i, (name, _) in enumerate(LAYERS)}
# Edges refused even where the layers would allow them: adapters are independent of each other (the command
# line excepted, which runs the tools).
FORBIDDEN = (
    ("trn_backend.distributed", "trn_backend.numpy_dispatch"),
    ("trn_backend.numpy_dispatch", "trn_backend.distributed"),
)


def modules() -> dict[str, Path]:
    """Every module of the package by its import name (kernels/ is installed as trn_backend.kernels)."""
    found = {}
    for top, name in (("trn_backend", "trn_backend"), ("kernels", "trn_backend.kernels")):
        for path in sorted((ROOT / top).rglob("*.py")):
            parts = path.relative_to(ROOT / top).with_suffix("").parts
            if top == "trn_backend" and parts[0] == "kernels":
                continue  # a link to kernels/ in a development checkout
            parts = parts[:-1] if parts[-1] == "__init__" else parts
            found[".".join((name, *parts))] = path
    return found


def imports(name: str, path: Path, known: dict[str, Path]) -> Iterator[tuple[str, int]]:
    """The package's modules ``name`` imports, with the line: ``from a import b`` is module ``a.b`` where that
    is a module, else ``a``."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module or ""
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name and not (path.name == "__init__.py" and target.startswith(name + ".")):
                yield target, node.lineno


def layer(name: str) -> str:
    best = max(
        (
            (len(p), layer_name)
            for layer_name, prefixes in LAYERS
            for p in prefixes
            if name == p or name.startswith(p + ".")
        ),
        default=None,
    )
    assert best is not None, f"{name} is in no layer: add it to LAYERS in {__file__} and docs/architecture.md"
    return best[1]


GRAPH = {name: sorted(set(imports(name, path, modules()))) for name, path in modules().items()}


def test_every_module_has_a_layer():
    for name in GRAPH:
        layer(name)


@pytest.mark.parametrize("name", sorted(GRAPH))
def test_imports_follow_the_layers(name: str):
    mine = layer(name)
    for target, line in GRAPH[name]:
        theirs = layer(target)
        where = f"{modules()[name].relative_to(ROOT)}:{line}"
        assert RANK[theirs] <= RANK[mine], f"{where}: {name} ({mine}) imports {target} ({theirs}), a layer above"
        for low, high in FORBIDDEN:
            assert not (name.startswith(low) and target.startswith(high)), f"{where}: {name} imports {target}"
        if target == "trn_backend":
            assert name == "trn_backend.__main__", (
                f"{where}: {name} imports the trn_backend package (which imports every layer); import the "
                "module that defines the name instead"
            )


def cycles(graph: dict[str, list[tuple[str, int]]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(t for t, _ in graph[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(t for t, _ in graph[child])))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_no_import_cycles():
    assert cycles(GRAPH) == []


def test_the_cycle_finder_finds_a_planted_cycle():
    planted = {"a": [("b", 1)], "b": [("c", 1)], "c": [("a", 1)], "d": [("a", 1)]}
    assert cycles(planted) == [["a", "b", "c"]]
    assert cycles({"a": [("b", 1)], "b": []}) == []


def test_the_graph_sees_every_form_of_import(tmp_path: Path):
    source = tmp_path / "probe.py"
    source.write_text(
        "from .. import _dtypes\nfrom ..contraction.plan import Plan\nimport trn_backend.fft\n"
        "def f():\n    from . import helper\n    from ..kernels import nki, missing\n"
    )
    known = {
        "trn_backend._dtypes",
        "trn_backend.contraction",
        "trn_backend.contraction.plan",
        "trn_backend.fft",
        "trn_backend.kernels",
        "trn_backend.kernels.nki",
        "trn_backend",
        "trn_backend.sub",
        "trn_backend.sub.helper",
    }
    found = sorted(t for t, _ in imports("trn_backend.sub.probe", source, known))
    # a name that is not a module (missing) is an edge to the package that defines it
    assert found == [
        "trn_backend._dtypes",
        "trn_backend.contraction.plan",
        "trn_backend.fft",
        "trn_backend.kernels",
        "trn_backend.kernels.nki",
        "trn_backend.sub.helper",
    ]
