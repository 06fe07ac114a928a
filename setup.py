"""Packaging for the Murano-style engine, its guest agent and its API."""

import re
from pathlib import Path

from setuptools import find_packages, setup


def core_library_files() -> list[tuple[str, list[str]]]:
    """meta/ (the core library in MuranoPL), installed under share/murano-engine."""
    groups: dict[str, list[str]] = {}
    for path in sorted(Path("meta").rglob("*")):
        if path.is_file():
            groups.setdefault(str(Path("share/murano-engine") / path.parent), []).append(
                str(path))
    return sorted(groups.items())


def release() -> str:
    """``murano_engine.__version__``, read without importing the package."""
    text = Path("murano_engine/__init__.py").read_text(encoding="utf-8")
    return re.search(r'^__version__ = "([^"]+)"$', text, re.MULTILINE).group(1)


setup(
    name="murano-engine",
    version=release(),
    description="Deploy multi-machine applications written as MuranoPL packages",
    python_requires=">=3.11",
    packages=find_packages(include=["murano_engine*", "murano_agent*", "murano_common*"]),
    include_package_data=True,
    data_files=core_library_files(),
    # The agent's service files, sample config and plan schemas, installed beside its
    # code; the JSON schemas of the API's request bodies; the local cloud's sandbox set-up.
    package_data={
        "murano_agent": ["packaging/*.sample", "packaging/*.service", "packaging/*.ps1",
                         "schemas/*.json"],
        "murano_engine.api": ["*.sample"],
        "murano_engine.api.schemas": ["*.json"],
        "murano_engine.web": ["templates/*.html", "static/*.css", "static/*.js"],
        "murano_engine.dsl": ["yaql_tables.json"],
        "murano_engine.clouds.local": ["sandbox-init.py", "sandbox-enter.py"],
        "murano_engine.clouds.heat_providers": ["*.yaml"],
    },
    install_requires=[
        "yaql>=3.0",
        "regex>=2022.1",
        "PyYAML>=6.0",
        "eventlet>=0.35",
        "kombu>=5.3",
        "python-heatclient>=3.0",
        "keystoneauth1>=5.0",
        "jsonschema>=4.0",
        "cryptography>=41",
        "semantic_version>=2.10",
        "jsonpatch>=1.33",
        "SQLAlchemy>=2.0.21",
        "alembic>=1.12",
        "psycopg[binary]>=3.1",
        "Werkzeug>=3.0",
        "waitress>=3.0",
        "python-mistralclient>=4.0",
        "Jinja2>=3.1",
    ],
    extras_require={
        # tree-sitter-powershell: the tests parse every PowerShell script (no pwsh needed)
        # keystonemiddleware: tests/openstack runs murano-api's keystone strategy
        # openapi-spec-validator: the API's OpenAPI document is checked against the spec
        # sphinx, myst-parser: tests/docs builds docs/ (also `make docs`), warnings as errors
        "test": ["pytest>=8", "ruff>=0.5", "python-muranoclient>=2.0", "tree-sitter>=0.24",
                 "tree-sitter-powershell>=0.26", "keystonemiddleware>=10",
                 "selenium>=4.20", "openapi-spec-validator>=0.7",
                 "sphinx>=8", "myst-parser>=4"],
        "docs": ["sphinx>=8", "myst-parser>=4"],
        "keystone": ["keystonemiddleware>=10"],
    },
    entry_points={
        "console_scripts": [
            "murano-engine=murano_engine.cli.main:console",
            "murano-test-runner=murano_engine.cli.test_runner:console",
            "murano-agent=murano_agent.cli:main",
            "murano-api=murano_engine.server.main:main",
        ],
    },
)
