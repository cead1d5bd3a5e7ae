"""Malformed requests get kube-apiserver's status codes and Status bodies."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest

from devcluster.server import DevCluster
from tests.devcluster.conftest import Kubectl

JSON = {"Content-Type": "application/json"}


async def _call(
    cluster: DevCluster,
    method: str,
    path: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, Any], Any]:
    data = body if isinstance(body, (str, bytes)) or body is None else json.dumps(body)
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, cluster.url + path, data=data, headers=headers or JSON) as response,
    ):
        return response.status, await response.json(content_type=None), response.headers


def _failure(code: int, reason: str, message: str, **extra: Any) -> dict[str, Any]:
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        **extra,
        "code": code,
    }
    return body


CM_PATH = "/api/v1/namespaces/default/configmaps"


async def test_bad_json(shared_cluster: DevCluster) -> None:
    code, body, _ = await _call(shared_cluster, "POST", CM_PATH, "{not json")
    assert code == 400
    assert body == _failure(
        400,
        "BadRequest",
        "the object provided is unrecognized (must be of type ConfigMap): couldn't get "
        "version/kind; json parse error: invalid character 'n' looking for beginning of object "
        "key string ({not json)",
    )


async def test_wrong_version_and_kind_for_the_url(
    shared_cluster: DevCluster, ray_crds: list[str]
) -> None:
    code, body, _ = await _call(
        shared_cluster,
        "POST",
        CM_PATH,
        {"apiVersion": "apps/v1", "kind": "ConfigMap", "metadata": {"name": "a"}},
    )
    assert (code, body["reason"]) == (400, "BadRequest")
    assert body["message"] == (
        "the API version in the data (apps/v1) does not match the expected API version (v1)"
    )
    path = "/apis/ray.io/v1/namespaces/default/rayjobs"
    code, body, _ = await _call(
        shared_cluster,
        "POST",
        path,
        {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "a"}},
    )
    assert (code, body["reason"]) == (422, "Invalid")
    assert (
        body["message"]
        == 'RayCluster.ray.io "a" is invalid: kind: Invalid value: "RayCluster": must be RayJob'
    )


@pytest.mark.parametrize(
    ("name", "detail"),
    [
        pytest.param("Bad_Name", "a lowercase RFC 1123 subdomain", id="uppercase-underscore"),
        pytest.param("x" * 254, "must be no more than 253 characters", id="too-long"),
    ],
)
async def test_invalid_names_are_422(shared_cluster: DevCluster, name: str, detail: str) -> None:
    code, body, _ = await _call(
        shared_cluster,
        "POST",
        CM_PATH,
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}},
    )
    assert (code, body["reason"]) == (422, "Invalid")
    assert body["message"].startswith(
        f'ConfigMap "{name}" is invalid: metadata.name: Invalid value: '
    )
    cause = body["details"]["causes"][0]
    assert cause["reason"] == "FieldValueInvalid" and cause["field"] == "metadata.name"
    assert detail in cause["message"]
    assert body["details"]["kind"] == "ConfigMap" and body["details"]["name"] == name


@pytest.mark.parametrize(
    ("metadata", "detail"),
    [
        pytest.param(
            {"name": 1}, "number into Go struct field ObjectMeta.metadata.name", id="name"
        ),
        pytest.param(
            {"name": "cm", "labels": ["a"]},
            "array into Go struct field ObjectMeta.metadata.labels of type map[string]string",
            id="labels",
        ),
        pytest.param(
            {"name": "cm", "annotations": {"a": True}},
            "bool into Go struct field ObjectMeta.metadata.annotations of type string",
            id="annotation-value",
        ),
    ],
)
async def test_metadata_of_the_wrong_type_is_400(
    shared_cluster: DevCluster, metadata: dict[str, Any], detail: str
) -> None:
    # Found by tests/badinput: these reached the name and label checks and raised (a 500).
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata}
    code, status, _ = await _call(shared_cluster, "POST", CM_PATH, body)
    assert (code, status["reason"]) == (400, "BadRequest")
    assert detail in status["message"]


async def test_service_names_follow_dns1035(shared_cluster: DevCluster) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "1svc"},
        "spec": {"ports": [{"port": 80}]},
    }
    code, status, _ = await _call(
        shared_cluster, "POST", "/api/v1/namespaces/default/services", body
    )
    assert code == 422 and "a DNS-1035 label must consist" in status["message"]


async def test_missing_name_is_required(shared_cluster: DevCluster) -> None:
    code, body, _ = await _call(
        shared_cluster, "POST", CM_PATH, {"apiVersion": "v1", "kind": "ConfigMap"}
    )
    assert code == 422
    assert body["message"] == (
        'ConfigMap "" is invalid: metadata.name: Required value: name or generateName is required'
    )


async def test_unknown_fields_strict_and_warn(
    shared_cluster: DevCluster, ray_crds: list[str]
) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "strict", "colour": "x"},
        "bogus": 1,
    }
    code, status, _ = await _call(shared_cluster, "POST", CM_PATH + "?fieldValidation=Strict", body)
    assert (code, status["reason"]) == (400, "BadRequest")
    assert status["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: '
        'unknown field "bogus", unknown field "metadata.colour"'
    )
    code, _, headers = await _call(shared_cluster, "POST", CM_PATH + "?fieldValidation=Warn", body)
    assert code == 201
    assert headers.getall("Warning") == [
        '299 - "unknown field \\"bogus\\""',
        '299 - "unknown field \\"metadata.colour\\""',
    ]
    job = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "strict"},
        "spec": {"entrypoint": "x", "notAField": True},
    }
    code, status, _ = await _call(
        shared_cluster,
        "POST",
        "/apis/ray.io/v1/namespaces/default/rayjobs?fieldValidation=Strict",
        job,
    )
    assert code == 400
    assert status["message"].endswith('strict decoding error: unknown field "spec.notAField"')
    code, stored, _ = await _call(
        shared_cluster, "POST", "/apis/ray.io/v1/namespaces/default/rayjobs", job
    )
    assert code == 201 and "notAField" not in stored["spec"]  # pruned, as a real server does


async def test_kubectl_strict_validation_reports_unknown_fields(
    kubectl: Kubectl, namespace: str
) -> None:
    manifest = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "dta": {}}
    result = await kubectl.run("apply", "-n", namespace, "-f", "-", stdin=json.dumps(manifest))
    assert result.code == 1
    assert 'strict decoding error: unknown field "dta"' in result.err


async def test_unsupported_patch_type_and_unknown_urls(
    shared_cluster: DevCluster, ray_crds: list[str]
) -> None:
    path = "/apis/ray.io/v1/namespaces/default/rayjobs/strict"
    code, body, _ = await _call(
        shared_cluster,
        "PATCH",
        path,
        {"spec": {}},
        {"Content-Type": "application/strategic-merge-patch+json"},
    )
    assert (code, body["reason"]) == (415, "UnsupportedMediaType")
    code, body, _ = await _call(shared_cluster, "GET", "/apis/nothing.io/v1/widgets")
    assert code == 404 and body["message"] == "the server could not find the requested resource"
    code, body, _ = await _call(
        shared_cluster,
        "PUT",
        CM_PATH + "/a",
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}},
    )
    assert code == 400
    assert body["message"] == "the name of the object (b) does not match the name on the URL (a)"
