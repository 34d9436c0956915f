"""A Sphinx directive that documents every public name a trn_backend module exports, from their docstrings.

``.. trn-api:: trn_backend._api.creation`` expands to one ``autofunction`` (or ``autoclass``/``autodata``) entry per
name in that module's ``__all__``, documented as the public ``trn_backend.<name>`` (``trn_backend.linalg.<name>``
for the linalg and fft extensions). The reference then lists what the package exports, not a hand-kept copy.
"""

from __future__ import annotations

import importlib

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.pycode import ModuleAnalyzer
from sphinx.util.docutils import SphinxDirective


class TrnApi(SphinxDirective):
    required_arguments = 1  # the module whose __all__ is listed
    option_spec = {"public": str}  # the public module the names are documented under (default trn_backend)

    def run(self) -> list[nodes.Node]:
        module = importlib.import_module(self.arguments[0])
        public_name = self.options.get("public", "trn_backend")
        public = importlib.import_module(public_name)
        # a constant's documentation is the string after its assignment in the defining module (a float's own
        # docstring would describe the float type)
        attribute_docs = ModuleAnalyzer.for_module(module.__name__).find_attr_docs()
        lines = []
        for name in module.__all__:
            value = getattr(public, name)
            if isinstance(value, type) or callable(value):
                lines += [f".. {'autoclass' if isinstance(value, type) else 'autofunction'}:: {public_name}.{name}", ""]
                continue
            doc = attribute_docs.get(("", name))
            if not doc:
                raise self.error(f"{module.__name__}.{name}: a public constant without a docstring after it")
            lines += [f".. py:data:: {public_name}.{name}", f"   :value: {value!r}", "", *(f"   {d}" for d in doc)]
        container = nodes.section()
        self.state.nested_parse(StringList(lines, source=self.arguments[0]), self.content_offset, container)
        return container.children


def setup(app):
    app.add_directive("trn-api", TrnApi)
    return {"parallel_read_safe": True}
