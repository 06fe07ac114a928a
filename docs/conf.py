"""Sphinx configuration: ``make docs`` builds these pages into docs/_build/html."""

import re
from pathlib import Path

_INIT = Path(__file__).resolve().parents[1] / "murano_engine" / "__init__.py"

project = "murano-engine"
author = "the murano-engine developers"
# the release, read without importing the package (as setup.py does)
release = re.search(r'^__version__ = "([^"]+)"$', _INIT.read_text(encoding="utf-8"),
                    re.MULTILINE).group(1)
version = release

# Pages are Markdown read by MyST; the source links and images stay readable on a code host.
extensions = ["myst_parser"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]
# [text](page.md#a-heading) links: anchors for headings down to level 3
myst_heading_anchors = 3

html_theme = "alabaster"
html_title = f"murano-engine {release}"
html_theme_options = {
    "description": "Multi-machine applications as MuranoPL packages",
    "page_width": "1100px",
    "sidebar_width": "240px",
}
html_show_sourcelink = False
