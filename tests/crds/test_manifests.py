"""The generated CRDs: committed copy in sync, structural, KubeRay-compatible, accept samples."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from crds.manifests import crd_manifests
from crds.validation import versions
from kuberay_temporal.cli import main
from kuberay_temporal.manifests import REGENERATE_COMMAND, rendered_files
from tests.reference import KUBERAY_CRDS, REPO_ROOT, sample_files

DEPLOY_CRDS = REPO_ROOT / "deploy" / "crds"
PRESERVE = "x-kubernetes-preserve-unknown-fields"
INT_OR_STRING = "x-kubernetes-int-or-string"
# What kubectl's client-side apply may store in the last-applied-configuration annotation.
ANNOTATION_LIMIT = 256 * 1024

CRDS = {crd["spec"]["names"]["kind"]: crd for crd in crd_manifests()}
KINDS = sorted(CRDS)


@functools.cache
def kuberay_crd(kind: str) -> dict[str, Any]:
    """KubeRay's CRD (about 1 MB of YAML each: parsed once, with libyaml when present)."""
    plural = CRDS[kind]["spec"]["names"]["plural"]
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    text = (KUBERAY_CRDS / f"ray.io_{plural}.yaml").read_text()
    crd: dict[str, Any] = yaml.load(text, Loader=loader)
    return crd


def v1(crd: dict[str, Any]) -> dict[str, Any]:
    [version] = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    return version


def schema_of(kind: str) -> dict[str, Any]:
    schema: dict[str, Any] = v1(CRDS[kind])["schema"]["openAPIV3Schema"]
    return schema


def walk(node: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema node with its field path, the skeletons inside preserved objects too."""
    yield path, node
    for name, child in node.get("properties", {}).items():
        yield from walk(child, f"{path}.{name}")
    if "items" in node:
        yield from walk(node["items"], f"{path}[]")
    if isinstance(node.get("additionalProperties"), dict):
        yield from walk(node["additionalProperties"], f"{path}{{}}")


# --- committed files ----------------------------------------------------------------------------


def test_deploy_crds_match_the_models() -> None:
    expected = rendered_files()
    committed = {path.name: path.read_text() for path in DEPLOY_CRDS.glob("*.yaml")}
    stale = sorted(
        name
        for name in expected.keys() | committed.keys()
        if expected.get(name) != committed.get(name)
    )
    assert not stale, (
        f"deploy/crds/ is out of date ({', '.join(stale)}): run `{REGENERATE_COMMAND}`"
    )


def test_crds_command_prints_every_crd(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["crds"]) == 0
    assert list(yaml.safe_load_all(capsys.readouterr().out)) == crd_manifests()


def test_crds_command_writes_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["crds", "--output-dir", str(tmp_path / "out")]) == 0
    written = {path.name: path.read_text() for path in (tmp_path / "out").iterdir()}
    assert written == rendered_files()
    assert sorted(written) == [f"ray.io_{kind.lower()}s.yaml" for kind in KINDS]
    assert len(capsys.readouterr().out.splitlines()) == len(KINDS)


@pytest.mark.parametrize("kind", KINDS)
def test_fits_in_a_client_side_apply_annotation(kind: str) -> None:
    # The annotation holds the object as JSON, so its JSON size is what counts.
    assert len(json.dumps(CRDS[kind])) < ANNOTATION_LIMIT


# --- structural -------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_schema_is_structural(kind: str) -> None:
    schema = schema_of(kind)
    assert "$ref" not in json.dumps(schema)
    assert "$defs" not in schema
    for path, node in walk(schema):
        assert "type" in node or node.get(INT_OR_STRING), f"{kind}{path} has no type"
        assert "anyOf" not in node and "oneOf" not in node, f"{kind}{path} is a free union"
        if node.get("type") == "object":
            typed = "properties" in node or "additionalProperties" in node
            assert typed or node.get(PRESERVE) or path == ".metadata", f"{kind}{path} is opaque"
            assert not ("properties" in node and "additionalProperties" in node), path
        if node.get("type") == "array":
            assert "items" in node, f"{kind}{path} array without items"
        if "default" in node:
            assert check(node["default"], node) == [], f"{kind}{path} default fails its schema"


@pytest.mark.parametrize("kind", KINDS)
def test_top_level_is_like_every_crd(kind: str) -> None:
    properties = schema_of(kind)["properties"]
    assert properties["metadata"] == {"type": "object"}
    assert properties["apiVersion"] == properties["kind"] == {"type": "string"}
    assert {"spec", "status"} <= properties.keys()


# --- same API surface as KubeRay --------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_names_scope_and_printer_columns_are_kuberays(kind: str) -> None:
    ours, theirs = CRDS[kind], kuberay_crd(kind)
    assert ours["metadata"]["name"] == theirs["metadata"]["name"]
    assert ours["spec"]["group"] == theirs["spec"]["group"] == "ray.io"
    assert ours["spec"]["names"] == theirs["spec"]["names"]
    assert ours["spec"]["scope"] == theirs["spec"]["scope"] == "Namespaced"
    ours_v1 = v1(ours)
    assert [v["name"] for v in ours["spec"]["versions"]] == ["v1"]
    assert ours_v1["served"] and ours_v1["storage"]
    assert ours_v1["subresources"] == {"status": {}}
    assert ours_v1["additionalPrinterColumns"] == v1(theirs)["additionalPrinterColumns"]


@pytest.mark.parametrize("kind", KINDS)
def test_every_kuberay_field_is_in_the_schema(kind: str) -> None:
    ours = dict(walk(schema_of(kind)))
    preserved = tuple(path for path, node in ours.items() if node.get(PRESERVE))
    theirs = dict(walk(v1(kuberay_crd(kind))["schema"]["openAPIV3Schema"]))
    missing = [
        path
        for path in theirs
        if path not in ours and not path.startswith(preserved) and path != ".metadata"
    ]
    assert not missing


@pytest.mark.parametrize("kind", KINDS)
def test_kuberays_defaults_and_rules_are_reproduced(kind: str) -> None:
    """Every default, minimum, format and CEL rule KubeRay puts on a field we type is ours too.

    `format: int32` is a bound: the API server refuses a larger value for such a field.
    """
    ours = dict(walk(schema_of(kind)))
    theirs = dict(walk(v1(kuberay_crd(kind))["schema"]["openAPIV3Schema"]))
    checked = 0
    for path, node in theirs.items():
        if path not in ours or ours[path].get(PRESERVE):
            continue
        mine = ours[path]
        for keyword in ("default", "minimum", "minItems", "format"):
            if keyword in node and not path.endswith("observedGeneration"):
                assert mine.get(keyword) == node[keyword], f"{kind}{path} {keyword}"
                checked += 1
        their_messages = {rule["message"] for rule in node.get("x-kubernetes-validations", [])}
        my_messages = {rule["message"] for rule in mine.get("x-kubernetes-validations", [])}
        assert my_messages == their_messages, f"{kind}{path} CEL rules"
        checked += len(their_messages)
    assert checked >= 3


@pytest.mark.parametrize("kind", KINDS)
def test_every_integer_field_has_the_width_of_kuberays(kind: str) -> None:
    integers = [
        (path, node) for path, node in walk(schema_of(kind)) if node.get("type") == "integer"
    ]
    assert integers
    assert all(node.get("format") in ("int32", "int64") for _, node in integers), integers


@pytest.mark.parametrize("kind", KINDS)
def test_every_default_kuberay_declares_is_declared_at_the_same_path(kind: str) -> None:
    # Those inside embedded Kubernetes objects (a port's `protocol: TCP`) too: the API server
    # writes them into the stored CR, so without them a manifest is stored differently.
    def defaults(schema: dict[str, Any]) -> dict[str, Any]:
        return {path: node["default"] for path, node in walk(schema) if "default" in node}

    theirs = defaults(v1(kuberay_crd(kind))["schema"]["openAPIV3Schema"])
    assert defaults(schema_of(kind)) == theirs
    assert any(path.endswith(".ports[].protocol") for path in theirs)


def test_rayjob_defaults_the_brief_names() -> None:
    spec = schema_of("RayJob")["properties"]["spec"]["properties"]
    assert spec["submissionMode"]["default"] == "K8sJobMode"
    assert spec["backoffLimit"]["default"] == 0
    assert spec["ttlSecondsAfterFinished"]["default"] == 0
    group = spec["rayClusterSpec"]["properties"]["workerGroupSpecs"]["items"]["properties"]
    assert (group["minReplicas"]["default"], group["maxReplicas"]["default"]) == (0, 2**31 - 1)
    assert group["numOfHosts"]["default"] == 1


def test_raycronjob_template_is_the_rayjob_spec_and_the_rest_is_kuberays() -> None:
    """The template gets every rule of a RayJob's spec; schedule and zone are KubeRay's."""
    spec = schema_of("RayCronJob")["properties"]["spec"]
    assert spec["properties"]["jobTemplate"] == schema_of("RayJob")["properties"]["spec"]
    theirs = v1(kuberay_crd("RayCronJob"))["schema"]["openAPIV3Schema"]["properties"]
    assert sorted(spec["required"]) == sorted(theirs["spec"]["required"])
    for name in ("schedule", "timeZone", "suspend"):
        assert spec["properties"][name] == theirs["spec"]["properties"][name], name
    assert spec["properties"]["timeZone"]["minLength"] == 1
    status = schema_of("RayCronJob")["properties"]["status"]["properties"]
    assert status == theirs["status"]["properties"]


# --- samples against the schema ---------------------------------------------------------------


def check(value: Any, node: dict[str, Any], path: str = "") -> list[str]:
    """A small structural-schema check: types, enums, required, unknown fields, minimums.

    Unknown fields are errors, as with kubectl's default `--validate=strict`.
    """
    if node.get(INT_OR_STRING):
        ok = isinstance(value, (int, str)) and not isinstance(value, bool)
        return [] if ok else [f"{path}: not int-or-string"]
    errors = _type_errors(value, node, path)
    if errors:
        return errors
    if "enum" in node and value not in node["enum"]:
        return [f"{path}: {value!r} not in {node['enum']}"]
    if "minimum" in node and value < node["minimum"]:
        return [f"{path}: below {node['minimum']}"]
    if isinstance(value, list):
        if len(value) < node.get("minItems", 0):
            return [f"{path}: too few items"]
        return [
            e for i, item in enumerate(value) for e in check(item, node["items"], f"{path}[{i}]")
        ]
    if isinstance(value, dict) and not node.get(PRESERVE):
        return _object_errors(value, node, path)
    return []


def _type_errors(value: Any, node: dict[str, Any], path: str) -> list[str]:
    expected = {
        "object": dict,
        "array": list,
        "string": str,
        "boolean": bool,
        "integer": int,
        "number": (int, float),
    }[node["type"]]
    if isinstance(value, bool) and node["type"] != "boolean":
        return [f"{path}: boolean where {node['type']} is expected"]
    return [] if isinstance(value, expected) else [f"{path}: not {node['type']}"]


def _object_errors(value: dict[str, Any], node: dict[str, Any], path: str) -> list[str]:
    errors = [f"{path}.{name}: required" for name in node.get("required", []) if name not in value]
    properties = node.get("properties")
    for name, item in value.items():
        if properties is not None:
            if name not in properties:
                errors.append(f"{path}.{name}: unknown field")
            else:
                errors += check(item, properties[name], f"{path}.{name}")
        elif "additionalProperties" in node:
            errors += check(item, node["additionalProperties"], f"{path}.{name}")
    return errors


def ray_samples() -> list[Any]:
    params = []
    for path in sample_files():
        for index, doc in enumerate(yaml.safe_load_all(path.read_text())):
            if doc and doc.get("apiVersion") == "ray.io/v1" and doc.get("kind") in CRDS:
                name = f"{path.relative_to(path.parents[1])}#{index}"
                params.append(pytest.param(doc, id=name))
    return params


@pytest.mark.parametrize("doc", ray_samples())
def test_kuberay_sample_is_accepted_by_the_schema(doc: dict[str, Any]) -> None:
    assert check(doc, schema_of(doc["kind"])) == []


@pytest.mark.parametrize(
    ("spec_patch", "error"),
    [
        pytest.param({"suspend": "yes"}, ".spec.suspend: not boolean", id="type"),
        pytest.param({"replicaz": 1}, ".spec.replicaz: unknown field", id="unknown-field"),
        pytest.param(
            {"headGroupSpec": {}}, ".spec.headGroupSpec.template: required", id="required"
        ),
        pytest.param(
            {"upgradeStrategy": {"type": "Rolling"}},
            ".spec.upgradeStrategy.type: 'Rolling' not in ['Recreate', 'None']",
            id="enum",
        ),
    ],
)
def test_schema_check_rejects_what_the_api_server_would(
    spec_patch: dict[str, Any], error: str
) -> None:
    doc = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "c"},
        "spec": {"headGroupSpec": {"template": {"spec": {"containers": []}}}, **spec_patch},
    }
    assert check(doc, schema_of("RayCluster")) == [error]


@pytest.mark.parametrize("kind", KINDS)
def test_ray_version_is_bounded_in_every_cluster_spec(kind: str) -> None:
    # Ours, not KubeRay's: the version is parsed on every pass and every pod build.
    nodes = [node for path, node in walk(schema_of(kind)) if path.endswith(".rayVersion")]
    assert nodes
    assert all(node["maxLength"] == versions.MAX_LENGTH for node in nodes)
