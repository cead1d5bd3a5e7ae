"""Every one of KubeRay's samples is run here with real Ray, or the README says why not."""

from __future__ import annotations

import ast
import re

from tests.e2e.sample_verdicts import NOT_RUN, RUN
from tests.reference import KUBERAY_SAMPLES, REPO_ROOT, sample_files

SECTION = "### KubeRay's samples with real Ray"


def test_every_sample_has_one_verdict() -> None:
    files = {str(path.relative_to(KUBERAY_SAMPLES)) for path in sample_files()}
    assert not set(RUN) & set(NOT_RUN)
    assert sorted(files - set(RUN) - set(NOT_RUN)) == []  # a new sample needs a verdict
    assert sorted(set(RUN) | set(NOT_RUN)) == sorted(files)  # no verdict for a gone sample


def test_each_run_sample_is_named_by_a_test_module_with_tests() -> None:
    for file, module in RUN.items():
        source = (REPO_ROOT / module).read_text()
        tests = [
            node.name
            for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.AsyncFunctionDef) and node.name.startswith("test_")
        ]
        assert tests, module
        assert _named(file, source), f"{module} does not name {file}"


def _named(file: str, source: str) -> bool:
    """The file's name, its distinguishing part quoted (`ray-job.<name>.yaml`), or the module
    runs what `RUN` gives it."""
    middle = re.fullmatch(r"ray-(?:cluster|job|service)\.(.+)\.yaml", file)
    quoted = middle is not None and f'"{middle[1]}"' in source
    return file in source or quoted or "RUN.items()" in source


def test_the_readme_lists_each_sample_not_run_with_its_reason() -> None:
    readme = (REPO_ROOT / "README.md").read_text()
    assert SECTION in readme
    section = readme.split(SECTION, 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
    missing = [file for file in NOT_RUN if f"`{file}`" not in section]
    assert missing == []
    text = " ".join(section.split()).lower()
    assert [reason for reason in set(NOT_RUN.values()) if reason.lower() not in text] == []
