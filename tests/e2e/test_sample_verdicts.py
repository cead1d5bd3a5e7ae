"""Every one of KubeRay's samples is run here with real Ray, or the README says why not."""

from __future__ import annotations

import ast
import re
import zipfile
from importlib.metadata import distribution
from pathlib import Path

import yaml

from devcluster.networking.archives import parse_sums
from tests.e2e.sample_verdicts import NOT_RUN, OLD_HANDLE_API, RUN
from tests.reference import KUBERAY_DIR, KUBERAY_SAMPLES, REPO_ROOT, sample_files

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


def test_the_old_handle_api_is_what_stops_those_samples() -> None:
    """Their apps' modules, in the archives the node serves, pass an option this Ray lacks.

    Found by running `ray-service.sample.yaml`: the archive is downloaded, the stands deploy,
    and the driver's constructor fails with `DeploymentHandle.options() got an unexpected
    keyword argument 'use_new_handle_api'`.
    """
    handles = Path(str(distribution("ray").locate_file("ray/serve/handle.py")))
    options = [
        node
        for node in ast.walk(ast.parse(handles.read_text()))
        if isinstance(node, ast.FunctionDef) and node.name == "options"
    ]
    assert options  # read, not imported: importing Ray Serve here warns (pydantic v1 fields)
    for node in options:
        assert node.args.kwarg is None
        assert "use_new_handle_api" not in [a.arg for a in node.args.kwonlyargs]
    folder = KUBERAY_DIR / "archives"
    files = {a.url: a.file for a in parse_sums((folder / "SHA256SUMS").read_text(), folder)}
    samples = [file for file, reason in NOT_RUN.items() if reason == OLD_HANDLE_API]
    assert samples
    for sample in samples:
        (service,) = [
            d
            for d in yaml.safe_load_all((KUBERAY_SAMPLES / sample).read_text())
            if d["kind"] == "RayService"
        ]
        apps = yaml.safe_load(service["spec"]["serveConfigV2"])["applications"]
        calls = []
        for app in apps:
            with zipfile.ZipFile(files[app["runtime_env"]["working_dir"]]) as archive:
                module = app["import_path"].split(".")[0] + ".py"
                (member,) = [n for n in archive.namelist() if n.split("/", 1)[1] == module]
                calls.append("use_new_handle_api=True" in archive.read(member).decode())
        assert calls and all(calls), sample
