"""docs/ builds with Sphinx as `make docs` builds it, a warning failing the build, and
README's links lead to pages that exist."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"


def test_the_docs_build_without_a_warning(tmp_path):
    try:
        import myst_parser  # noqa: F401
        import sphinx  # noqa: F401
    except ImportError as exc:
        raise AssertionError(f"{exc.name} is missing: it is in the test extras "
                             f"(make install, or pip install -e '.[test]')") from None
    done = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
         "-d", str(tmp_path / "doctrees"), str(DOCS), str(tmp_path / "html")],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    pages = {p.stem for p in DOCS.glob("*.md")}
    assert {"getting-started", "tutorial", "local-cloud", "security", "durability",
            "commands", "api", "web", "openstack", "core-library", "internals"} <= pages
    assert pages <= {p.stem for p in (tmp_path / "html").glob("*.html")}
    # every screenshot of docs/screenshots is shown (docs/web.md)
    shown = {p.name for p in (tmp_path / "html" / "_images").iterdir()}
    assert {p.name for p in (DOCS / "screenshots").glob("*.png")} <= shown


def test_readmes_links_lead_to_files_that_exist():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    local = [link.split("#")[0] for link in links if "://" not in link]
    assert any(link.startswith("docs/") for link in local), links
    missing = [link for link in local if link and not (REPO / link).exists()]
    assert not missing, missing
