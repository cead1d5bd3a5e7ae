"""The Dockerfile and its pinned requirements, checked statically (no Docker engine here).

Checked: a multi-stage build from a base pinned by tag that installs the wheel; a numeric
non-root user; `kuberay-temporal` as the entrypoint; every package the wheel needs copied
into the build and let through .dockerignore; the requirements pin every runtime dependency
of the distribution (so `--no-deps` installs a complete set) at versions pyproject accepts,
and nothing that brings `ray`; every package the build installs from an index, the build
tools too, is pinned with the hashes of its files and installed with `--require-hashes`.
"""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.reference import REPO_ROOT

DOCKERFILE = (REPO_ROOT / "Dockerfile").read_text()
INSTRUCTIONS = [
    line.strip()
    for line in DOCKERFILE.replace("\\\n", " ").splitlines()
    if line.strip() and not line.lstrip().startswith("#")
]
REQUIREMENTS = REPO_ROOT / "deploy" / "image" / "requirements.txt"
BUILD_REQUIREMENTS = REPO_ROOT / "deploy" / "image" / "build-requirements.txt"
_PINNED = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)((?:\s+--hash=\S+)*)")
_HASH = re.compile(r"--hash=sha256:[0-9a-f]{64}")
PYPROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())


def _entries(path: Path) -> list[str]:
    """The requirement entries of a requirements file, continuation lines joined."""
    text = path.read_text().replace("\\\n", " ")
    lines = (line.split(" #")[0].strip() for line in text.splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def _pins(path: Path = REQUIREMENTS) -> dict[str, str]:
    pins = {}
    for entry in _entries(path):
        name, _, rest = entry.partition("==")
        pins[canonicalize_name(name)] = rest.split()[0]
    return pins


def _runtime_closure() -> dict[str, list[Requirement]]:
    """Every distribution the installed kuberay-temporal needs without extras."""
    closure: dict[str, list[Requirement]] = {}
    todo = ["kuberay-temporal"]
    while todo:
        for text in metadata.distribution(todo.pop()).requires or []:
            requirement = Requirement(text)
            if requirement.marker and not requirement.marker.evaluate({"extra": ""}):
                continue
            name = canonicalize_name(requirement.name)
            if name not in closure:
                todo.append(name)
            closure.setdefault(name, []).append(requirement)
    return closure


def test_multi_stage_build_from_a_base_pinned_by_tag() -> None:
    froms = [line for line in INSTRUCTIONS if line.startswith("FROM ")]
    assert froms == ["FROM ${PYTHON_IMAGE} AS build", "FROM ${PYTHON_IMAGE}"]
    (base,) = re.findall(r"^ARG PYTHON_IMAGE=(\S+)$", DOCKERFILE, re.MULTILINE)
    assert re.fullmatch(r"python:3\.11\.\d+-slim-\w+", base), base


def test_the_wheel_and_the_pinned_requirements_are_installed_without_resolving() -> None:
    run = " ".join(line for line in INSTRUCTIONS if line.startswith("RUN "))
    assert "python -m build --wheel" in run
    assert "pip install --require-hashes --no-deps --require-virtualenv -r /requirements.txt" in run
    assert "pip install --no-deps --require-virtualenv /dist/*.whl" in run
    assert "/dist/*.whl[" not in run, "the wheel without extras: `local` brings ray"
    assert not re.search(r"\bray\b", run), "no ray in the image"
    assert "COPY --from=build /venv /venv" in INSTRUCTIONS


def test_the_image_runs_as_a_numeric_non_root_user_with_our_entrypoint() -> None:
    (user,) = [line.split()[1] for line in INSTRUCTIONS if line.startswith("USER ")]
    uid, _, gid = user.partition(":")
    assert uid.isdigit() and int(uid) > 0 and gid.isdigit()
    assert INSTRUCTIONS.index(f"USER {user}") > INSTRUCTIONS.index("FROM ${PYTHON_IMAGE}")
    assert 'ENTRYPOINT ["kuberay-temporal"]' in INSTRUCTIONS
    assert 'CMD ["worker", "--health-port", "8080"]' in INSTRUCTIONS


def test_every_package_of_the_distribution_is_copied_and_not_ignored() -> None:
    packages = {
        p.rstrip("*") for p in PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]
    }
    copied = {line.split()[1].rstrip("/") for line in INSTRUCTIONS if line.startswith("COPY ")}
    assert packages <= copied, packages - copied
    ignore = (REPO_ROOT / ".dockerignore").read_text().splitlines()
    assert ignore[ignore.index("*")] == "*"  # everything is excluded unless let through
    allowed = {line[1:].rstrip("/") for line in ignore if line.startswith("!")}
    sources = copied - {"--from=build"}
    assert sources <= allowed | {"pyproject.toml", "README.md"}, sources - allowed
    for source in sources:
        assert (REPO_ROOT / source).exists(), source


def test_requirements_pin_every_runtime_dependency_at_an_accepted_version() -> None:
    pins = _pins()
    closure = _runtime_closure()
    assert set(closure) == set(pins), (
        f"missing: {set(closure) - set(pins)}; superfluous: {set(pins) - set(closure)}"
    )
    for name, requirements in closure.items():
        for requirement in requirements:
            assert requirement.specifier.contains(pins[name], prereleases=True), (
                f"{name}=={pins[name]} does not satisfy {requirement}"
            )
    assert "ray" not in pins


@pytest.mark.parametrize("path", [REQUIREMENTS, BUILD_REQUIREMENTS], ids=lambda p: p.name)
def test_every_requirement_is_pinned_with_the_hashes_of_its_files(path: Path) -> None:
    entries = _entries(path)
    assert entries
    for entry in entries:
        match = _PINNED.fullmatch(entry)
        assert match is not None, f"{path.name}: not `name==version --hash=…`: {entry[:80]}"
        hashes = match.group(3).split()
        assert hashes and all(_HASH.fullmatch(h) for h in hashes), entry[:80]
        assert len(set(hashes)) == len(hashes), entry[:80]


def test_every_pip_install_from_an_index_requires_hashes() -> None:
    """Only our own wheel, built in the image, goes in without a hash."""
    copied = {line.split()[2]: line.split()[1] for line in INSTRUCTIONS if line.startswith("COPY ")}
    installs = [
        command.strip()
        for line in INSTRUCTIONS
        if line.startswith("RUN ")
        for command in line.removeprefix("RUN ").split("&&")
        if "pip install" in command
    ]
    assert len(installs) == 3, installs
    for command in installs:
        if command.endswith("/dist/*.whl"):
            assert "--no-deps" in command
            continue
        assert "--require-hashes" in command and "--no-deps" in command, command
        (target,) = re.findall(r"-r (\S+)", command)
        assert REPO_ROOT / copied[target] in (REQUIREMENTS, BUILD_REQUIREMENTS), command
    assert {"build", "setuptools"} <= set(_pins(BUILD_REQUIREMENTS))


def test_the_probe_port_answers_on_the_containers_addresses() -> None:
    """The default is loopback; in a container, `docker run -p` reaches only its interfaces."""
    assert "ENV KUBERAY_TEMPORAL_HEALTH_ADDRESS=0.0.0.0" in INSTRUCTIONS
