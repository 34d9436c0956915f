"""Sphinx configuration of the documentation site: the guides in docs/*.md and an API reference generated from the
docstrings. ``make docs`` builds it offline into build/docs with every warning an error."""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))

import trn_backend  # noqa: E402

project = "trn-backend"
release = version = trn_backend.__version__
extensions = ["sphinx.ext.autodoc", "myst_parser", "trn_api"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_ext"]
html_theme = "alabaster"  # bundled with Sphinx: the build needs no network
autodoc_typehints = "signature"
autodoc_member_order = "bysource"
myst_heading_anchors = 3  # links to a guide's sections (#section-title) resolve
