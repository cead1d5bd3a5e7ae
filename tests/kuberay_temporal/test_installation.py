"""The top-level import names: declared once, and a clash stops every command with its cause."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

from kuberay_temporal import installation

ROOT = Path(__file__).resolve().parents[2]


def test_the_declared_names_are_the_packages_the_wheel_installs() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = pyproject["tool"]["setuptools"]["packages"]["find"]["include"]
    assert sorted(p.removesuffix("*") for p in patterns) == sorted(installation.PACKAGES)
    # Every top-level package but the repository's own tooling ships in the wheel.
    folders = {p.name for p in ROOT.iterdir() if (p / "__init__.py").exists()}
    assert folders - {"tests", "benchmarks", "docs"} == set(installation.PACKAGES)


def test_this_installation_has_no_clash() -> None:
    assert installation.clashes() == []


def test_a_name_another_distribution_installs_is_named_with_that_distribution() -> None:
    def owners() -> dict[str, list[str]]:
        return {"workflows": ["kuberay-temporal", "workflows-engine"], "crds": ["kuberay_temporal"]}

    assert installation.clashes(owners=owners) == [
        "'workflows' is also installed by workflows-engine"
    ]


def test_a_package_that_resolves_elsewhere_is_named_with_where(tmp_path: Path) -> None:
    assert installation.clashes(("workflows",), home=tmp_path, owners=dict) == [
        f"'workflows' is imported from {ROOT / 'workflows'}, not from {tmp_path / 'workflows'}"
    ]
    assert installation.clashes(("no_such_package_here",), owners=dict) == [
        "'no_such_package_here' cannot be found"
    ]


def test_a_shadowing_folder_on_the_path_stops_the_command_before_it_imports(
    tmp_path: Path,
) -> None:
    shadow = tmp_path / "worker"
    shadow.mkdir()
    (shadow / "__init__.py").write_text("raise SystemExit('the shadowing package was imported')\n")
    done = subprocess.run(
        [sys.executable, "-m", "kuberay_temporal", "worker", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stderr
    assert f"'worker' is imported from {shadow}, not from {ROOT / 'worker'}" in done.stderr
    assert "virtual environment of its own" in done.stderr
    assert "the shadowing package was imported" not in done.stderr
