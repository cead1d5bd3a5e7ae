"""Every KubeRay behaviour the code cites by tag has an entry in docs/kuberay-parity.md.

Comments and docstrings name KubeRay behaviours by short tags: C for RayCluster, J for RayJob,
S for RayService, P for pain points, singly (`C4`) or as ranges (`J16–J18`, each member
counts). A reader must be able to look each one up in the repository, and no comment may
point at a document that is not in it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

from tests.reference import REPO_ROOT

PARITY = REPO_ROOT / "docs" / "kuberay-parity.md"

SCANNED = (
    "activities",
    "workflows",
    "worker",
    "bridge",
    "crds",
    "kuberay_temporal",
    "devcluster",
    "benchmarks",
    "tests",
    "controlplane",
    "deploy",
    "README.md",
    "docs",
)
"""Where tags are cited: these folders (Python, Go and Markdown files) and files."""
SOURCE_SUFFIXES = frozenset({".py", ".go", ".md"})

TAG = re.compile(r"\b([CJSP])([1-9][0-9]?)(?:\s*[–-]\s*\1?([1-9][0-9]?))?\b")
"""A cited tag (`S13`) or range of tags (`J16–J18`, `C3-C5`, `S10–12`)."""
ENTRY = re.compile(r"^### ([CJSP][1-9][0-9]?)\b", re.MULTILINE)
"""An entry of docs/kuberay-parity.md: a level-3 heading that starts with its tag."""

SKIPPED_DIRS = frozenset(
    {
        ".venv",
        ".git",
        ".hypothesis",
        ".import_linter_cache",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".state",
        ".compose",
        "__pycache__",
        "build",
        "dist",
    }
)
"""Tools' caches and build output: not files of the repository."""

# Built from parts so that this file does not itself contain what it forbids.
FORBIDDEN = tuple(
    name + suffix
    for name in ("REFERENCE", "DESIGN", "STYLE", "TEMPORAL")
    for suffix in (".md", " §")
)
"""Pointers to design notes that are not in the repository."""


def _files(root: Path) -> Iterator[Path]:
    """Every file under `root`, outside caches and build output."""
    if root.is_file():
        yield root
        return
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not d.endswith(".egg-info"))
        for name in sorted(names):
            yield Path(folder) / name


def _scanned_sources() -> Iterator[Path]:
    for entry in SCANNED:
        for path in _files(REPO_ROOT / entry):
            if path.suffix in SOURCE_SUFFIXES and path != PARITY:
                yield path


def cited_tags() -> dict[str, set[str]]:
    """Each tag the code cites, with the files (relative to the repository) that cite it."""
    cited: dict[str, set[str]] = {}
    for path in _scanned_sources():
        text = path.read_text(encoding="utf-8", errors="replace")
        for match in TAG.finditer(text):
            family, first, last = match.group(1), int(match.group(2)), match.group(3)
            low, high = sorted((first, int(last) if last else first))
            for number in range(low, high + 1):
                cited.setdefault(f"{family}{number}", set()).add(
                    path.relative_to(REPO_ROOT).as_posix()
                )
    return cited


def defined_tags() -> set[str]:
    """The tags that have an entry in docs/kuberay-parity.md."""
    return set(ENTRY.findall(PARITY.read_text(encoding="utf-8")))


def test_every_cited_tag_has_an_entry() -> None:
    cited = cited_tags()
    assert cited, "no tag found: the scan or the expression is broken"
    missing = sorted(set(cited) - defined_tags(), key=lambda tag: (tag[0], int(tag[1:])))
    report = [f"{tag} (cited in {', '.join(sorted(cited[tag]))})" for tag in missing]
    assert not missing, "tags without an entry in docs/kuberay-parity.md:\n" + "\n".join(report)


def test_no_file_points_at_design_notes_outside_the_repository() -> None:
    needles = [needle.encode() for needle in FORBIDDEN]
    found = []
    for path in _files(REPO_ROOT):
        if path == PARITY:
            continue
        data = path.read_bytes()
        hits = [needle.decode() for needle in needles if needle in data]
        if hits:
            found.append(f"{path.relative_to(REPO_ROOT).as_posix()}: {', '.join(hits)}")
    assert not found, "pointers to documents outside the repository:\n" + "\n".join(found)
