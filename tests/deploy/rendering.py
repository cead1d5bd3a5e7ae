"""The deployment manifests as the tools render them: `kubectl kustomize` and real Helm.

Helm comes from the `helm-python-sdk` wheel (Helm v4's Go SDK behind a C ABI), so rendering
needs no helm binary and no network; tests that need it skip with a reason when the wheel is
missing.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from kuberay_temporal.binaries import find_binary
from tests.reference import REPO_ROOT

DEPLOY = REPO_ROOT / "deploy"
CHART = DEPLOY / "helm" / "kuberay-temporal"
NAMESPACE = "kuberay-temporal"
RELEASE = "kuberay-temporal"

Doc = dict[str, Any]


def load_all(text: str) -> list[Doc]:
    """Every non-empty YAML document in `text`."""
    return [doc for doc in yaml.safe_load_all(text) if doc]


@cache
def kustomize_text(path: Path = DEPLOY) -> str:
    """`kubectl kustomize` of a directory (kubectl's built-in kustomize)."""
    return _kustomize(path)


def _kustomize(path: Path) -> str:
    result = subprocess.run(
        [str(find_binary("kubectl")), "kustomize", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def kustomize_docs() -> list[Doc]:
    """The kustomize base, rendered."""
    return load_all(kustomize_text())


@cache
def _overlay_text(components: tuple[str, ...]) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        # kustomize refuses absolute paths to other kustomizations.
        overlay = {
            "resources": [os.path.relpath(DEPLOY, root)],
            "components": [os.path.relpath(DEPLOY / "components" / c, root) for c in components],
        }
        (root / "kustomization.yaml").write_text(yaml.safe_dump(overlay))
        return _kustomize(root)


def kustomize_overlay_docs(*components: str) -> list[Doc]:
    """An overlay of the base with the components of `deploy/components/` named, rendered."""
    return load_all(_overlay_text(components))


def helm_docs(values: dict[str, Any] | None = None) -> list[Doc]:
    """The chart's templates rendered by Helm with `values` over its defaults (no CRDs)."""
    helm = pytest.importorskip("helm_python", reason="needs the helm-python-sdk wheel")
    chart = helm.Chart.load(str(CHART))
    rendered = chart.render(values or {}, name=RELEASE, namespace=NAMESPACE, is_install=True)
    return [
        doc
        for path, text in sorted(rendered.items())
        if path.endswith(".yaml")
        for doc in load_all(text)
    ]


def by_kind(docs: list[Doc], kind: str) -> dict[str, Doc]:
    """`name -> object` for one kind."""
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == kind}


def container(deployment: Doc) -> Doc:
    """The one container of a Deployment."""
    (only,) = deployment["spec"]["template"]["spec"]["containers"]
    return dict(only)


def settings_env(docs: list[Doc], component: str) -> dict[str, str]:
    """The environment a component's container gets from its ConfigMap and plain `env` values.

    Secret references are left out: they are optional and resolve to nothing here.
    """
    deployment = by_kind(docs, "Deployment")[f"kuberay-temporal-{component}"]
    spec = container(deployment)
    maps = by_kind(docs, "ConfigMap")
    env: dict[str, str] = {}
    for source in spec.get("envFrom") or []:
        env.update(maps[source["configMapRef"]["name"]]["data"])
    for var in spec.get("env") or []:
        if "value" in var:
            env[var["name"]] = var["value"]
    return env
