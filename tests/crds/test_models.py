"""The ray.io models: lossless round trips, KubeRay's field names, strict types."""

from __future__ import annotations

import types
import typing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel

from crds.common import ObjectMeta, RayModel
from crds.enums import ClusterState, ConditionStatus, JobStatus
from crds.loading import KIND_MODELS, is_ray_object, parse_ray_object
from crds.raycluster import RayCluster, RayClusterStatus
from crds.violations import InvalidObjectError
from tests.reference import KUBERAY_CRDS, sample_files


def _ray_docs(path: Path) -> list[dict[str, Any]]:
    docs = [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]
    return [d for d in docs if is_ray_object(d) and d.get("kind") in KIND_MODELS]


SAMPLES_WITH_RAY_OBJECTS = [p for p in sample_files() if _ray_docs(p)]


def test_samples_cover_every_kind() -> None:
    kinds = {d["kind"] for p in SAMPLES_WITH_RAY_OBJECTS for d in _ray_docs(p)}
    assert kinds == {"RayCluster", "RayJob", "RayService", "RayCronJob"} == set(KIND_MODELS)
    assert len(SAMPLES_WITH_RAY_OBJECTS) >= 80


@pytest.mark.parametrize("path", SAMPLES_WITH_RAY_OBJECTS, ids=lambda p: p.name)
def test_every_kuberay_sample_round_trips(path: Path) -> None:
    for doc in _ray_docs(path):
        model = parse_ray_object(doc)
        assert model.to_json_dict() == doc


# --- field names against KubeRay's own CRD schemas ----------------------------------------------


def _model_of(annotation: Any) -> type[RayModel] | None:
    """The RayModel inside Optional[...] / list[...] / dict[str, ...], if any."""
    if isinstance(annotation, type) and issubclass(annotation, RayModel):
        return annotation
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType, list, dict):
        for arg in typing.get_args(annotation):
            found = _model_of(arg)
            if found is not None:
                return found
    return None


def _unwrap(node: dict[str, Any]) -> dict[str, Any]:
    """Step through arrays and maps to the object schema describing their elements."""
    while True:
        if node.get("type") == "array":
            node = node["items"]
        elif "additionalProperties" in node and "properties" not in node:
            node = node["additionalProperties"]
        else:
            return node


def _compare(model: type[BaseModel], schema: dict[str, Any], path: str) -> list[str]:
    problems = []
    ours = {f.alias or name: f for name, f in model.model_fields.items()}
    theirs = schema.get("properties", {})
    for missing in sorted(set(theirs) - set(ours)):
        problems.append(f"{path}.{missing}: in KubeRay's CRD, not in {model.__name__}")
    for extra in sorted(set(ours) - set(theirs)):
        problems.append(f"{path}.{extra}: in {model.__name__}, not in KubeRay's CRD")
    for alias, field in ours.items():
        sub = _model_of(field.annotation)
        # KubeRay's CRD leaves metadata untyped, as the API server owns it.
        if sub is not None and sub is not ObjectMeta and alias in theirs:
            problems += _compare(sub, _unwrap(theirs[alias]), f"{path}.{alias}")
    return problems


@pytest.mark.parametrize("kind", sorted(KIND_MODELS))
def test_field_names_match_kuberay_crd(kind: str) -> None:
    crd = yaml.load((KUBERAY_CRDS / f"ray.io_{kind.lower()}s.yaml").read_text(), yaml.CSafeLoader)
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1")
    schema = version["schema"]["openAPIV3Schema"]
    assert _compare(KIND_MODELS[kind], schema, kind) == []


# --- strictness and status serialisation --------------------------------------------------------

BASE: dict[str, Any] = {
    "apiVersion": "ray.io/v1",
    "kind": "RayCluster",
    "metadata": {"name": "c"},
    "spec": {
        "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": []}}},
    },
}


@pytest.mark.parametrize(
    ("patch", "path", "phrase"),
    [
        pytest.param({"suspend": "true"}, "spec.suspend", "must be a boolean", id="bool-as-string"),
        pytest.param(
            {"rayVersion": 2.5}, "spec.rayVersion", "must be a string", id="number-as-string"
        ),
        pytest.param({"bogus": 1}, "spec.bogus", "unknown field", id="unknown-field"),
        pytest.param(
            {"upgradeStrategy": {"type": "Rolling"}},
            "spec.upgradeStrategy.type",
            "unsupported value 'Rolling'",
            id="unknown-enum",
        ),
        pytest.param(
            {"workerGroupSpecs": [{"groupName": "g", "replicas": "2", "template": {}}]},
            "spec.workerGroupSpecs[0].replicas",
            "must be an integer",
            id="nested-path",
        ),
    ],
)
def test_schema_errors_carry_json_paths(patch: dict[str, Any], path: str, phrase: str) -> None:
    doc = {**BASE, "spec": {**BASE["spec"], **patch}}
    with pytest.raises(InvalidObjectError) as err:
        parse_ray_object(doc)
    assert [v.path for v in err.value.violations] == [path]
    assert phrase in err.value.violations[0].message


def test_header_errors_are_reported_together() -> None:
    with pytest.raises(InvalidObjectError) as err:
        parse_ray_object({"apiVersion": "ray.io/v2", "kind": "RayThing", "metadata": {}})
    assert [v.path for v in err.value.violations] == ["apiVersion", "kind", "metadata.name", "spec"]


def test_status_times_are_written_like_metav1_time() -> None:
    cluster = RayCluster.model_validate(BASE)
    cluster.status = RayClusterStatus(
        state=ClusterState.READY,
        state_transition_times={ClusterState.READY: datetime(2026, 1, 2, 3, 4, 5, 678, tzinfo=UTC)},
    )
    out = cluster.to_json_dict()["status"]
    assert out == {"state": "ready", "stateTransitionTimes": {"ready": "2026-01-02T03:04:05Z"}}


def test_enum_helpers() -> None:
    assert JobStatus.SUCCEEDED.is_terminal and not JobStatus.RUNNING.is_terminal
    assert ConditionStatus.TRUE == "True"
