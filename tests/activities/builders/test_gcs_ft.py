"""GCS fault tolerance, after KubeRay's TestConfigureGCSFaultTolerance* cases."""

from __future__ import annotations

from typing import Any

import pytest

from activities.builders import build_gcs_storage_pvc, build_head_pod, build_worker_pod
from activities.builders.redis_cleanup_job import build_redis_cleanup_job
from tests.activities.builders.fixtures import (
    HEAD_POD,
    WORKER_POD,
    cluster,
    env_of,
    head_container,
    instance_dict,
)


def _pods(data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    model = cluster(data)
    return build_head_pod(model, HEAD_POD), build_worker_pod(model, "small-group", WORKER_POD)


@pytest.mark.parametrize(
    ("annotations", "head_env", "params", "expected"),
    [
        pytest.param(
            {}, [], {}, {"RAY_external_storage_namespace": "uid-1234"}, id="uid-namespace"
        ),
        pytest.param(
            {"ray.io/external-storage-namespace": "test-ns"},
            [],
            {},
            {"RAY_external_storage_namespace": "test-ns"},
            id="annotation-namespace",
        ),
        pytest.param(
            {},
            [{"name": "REDIS_PASSWORD", "value": "test-password"}],
            {},
            {"REDIS_PASSWORD": "test-password"},
            id="password-env-kept",
        ),
        pytest.param(
            {},
            [],
            {"redis-password": "test-password"},
            {"REDIS_PASSWORD": "test-password"},
            id="password-param-mirrored",
        ),
        pytest.param(
            {},
            [{"name": "REDIS_PASSWORD", "value": "test-password"}],
            {"redis-password": "$REDIS_PASSWORD"},
            {"REDIS_PASSWORD": "test-password"},
            id="param-refers-to-env",
        ),
    ],
)
def test_legacy_annotation(
    annotations: dict[str, str],
    head_env: list[dict[str, str]],
    params: dict[str, str],
    expected: dict[str, str],
) -> None:
    data = instance_dict()
    data["metadata"]["annotations"] = {"ray.io/ft-enabled": "true", **annotations}
    head_container(data)["env"] = [{"name": "RAY_REDIS_ADDRESS", "value": "redis:6379"}, *head_env]
    data["spec"]["headGroupSpec"]["rayStartParams"].update(params)
    head, worker = _pods(data)
    env = env_of(head["spec"]["containers"][0])
    assert {name: env.get(name) for name in expected} == expected
    assert head["metadata"]["annotations"]["ray.io/ft-enabled"] == "true"
    assert "RAY_gcs_rpc_server_reconnect_timeout_s" not in env
    worker_env = env_of(worker["spec"]["containers"][0])
    assert worker_env["RAY_gcs_rpc_server_reconnect_timeout_s"] == "600"
    for name in ("RAY_external_storage_namespace", "RAY_REDIS_ADDRESS", "REDIS_PASSWORD"):
        assert name not in worker_env
    assert "ray.io/ft-enabled" not in worker["metadata"].get("annotations", {})


def test_disabled() -> None:
    data = instance_dict()
    data["metadata"]["annotations"] = {"ray.io/ft-enabled": "false"}
    head, worker = _pods(data)
    assert head["metadata"]["annotations"]["ray.io/ft-enabled"] == "false"
    assert "ray.io/external-storage-namespace" not in head["metadata"]["annotations"]
    assert "RAY_gcs_rpc_server_reconnect_timeout_s" not in env_of(worker["spec"]["containers"][0])


SECRET_REF = {"secretKeyRef": {"name": "redis-secret", "key": "password"}}


@pytest.mark.parametrize(
    ("options", "expected_env", "flags"),
    [
        pytest.param(
            {"redisAddress": "redis:6379"},
            {"RAY_REDIS_ADDRESS": "redis:6379", "RAY_external_storage_namespace": "uid-1234"},
            [],
            id="address-only",
        ),
        pytest.param(
            {"redisAddress": "redis:6379", "redisPassword": {"value": "test-password"}},
            {"REDIS_PASSWORD": "test-password"},
            ["--redis-password=$REDIS_PASSWORD"],
            id="password-value",
        ),
        pytest.param(
            {
                "redisAddress": "redis:6379",
                "redisUsername": {"value": "user"},
                "redisPassword": {"valueFrom": SECRET_REF},
            },
            {"REDIS_USERNAME": "user", "REDIS_PASSWORD": SECRET_REF},
            ["--redis-password=$REDIS_PASSWORD", "--redis-username=$REDIS_USERNAME"],
            id="username-and-secret-password",
        ),
        pytest.param(
            {"redisAddress": "redis:6379", "externalStorageNamespace": "test-ns"},
            {"RAY_external_storage_namespace": "test-ns"},
            [],
            id="storage-namespace",
        ),
    ],
)
def test_options(options: dict[str, Any], expected_env: dict[str, Any], flags: list[str]) -> None:
    data = instance_dict()
    data["spec"]["gcsFaultToleranceOptions"] = options
    head, worker = _pods(data)
    ray = head["spec"]["containers"][0]
    env = env_of(ray)
    assert {name: env.get(name) for name in expected_env} == expected_env
    for flag in flags:
        assert f" {flag} " in ray["args"][0]
    annotations = head["metadata"]["annotations"]
    assert annotations["ray.io/ft-enabled"] == "true"
    assert annotations["ray.io/external-storage-namespace"] == env["RAY_external_storage_namespace"]
    assert (
        env_of(worker["spec"]["containers"][0])["RAY_gcs_rpc_server_reconnect_timeout_s"] == "600"
    )


def test_worker_reconnect_timeout_kept_when_set() -> None:
    data = instance_dict()
    data["spec"]["gcsFaultToleranceOptions"] = {"redisAddress": "redis:6379"}
    container = data["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]
    container["env"].append({"name": "RAY_gcs_rpc_server_reconnect_timeout_s", "value": "30"})
    _, worker = _pods(data)
    env = worker["spec"]["containers"][0]["env"]
    values = [v["value"] for v in env if v["name"] == "RAY_gcs_rpc_server_reconnect_timeout_s"]
    assert values == ["30"]


@pytest.mark.parametrize(
    ("storage", "claim", "sub_path"),
    [
        pytest.param(None, "raycluster-sample-gcs-pvc", None, id="operator-managed"),
        pytest.param({"claimName": "my-pvc"}, "my-pvc", None, id="user-claim"),
        pytest.param(
            {"subPath": "clusters/foo"}, "raycluster-sample-gcs-pvc", "clusters/foo", id="sub-path"
        ),
    ],
)
def test_embedded(storage: dict[str, str] | None, claim: str, sub_path: str | None) -> None:
    data = instance_dict()
    options: dict[str, Any] = {"backend": "rocksdb"}
    if storage:
        options["storage"] = storage
    data["spec"]["gcsFaultToleranceOptions"] = options
    head, _ = _pods(data)
    ray = head["spec"]["containers"][0]
    env = env_of(ray)
    assert env["RAY_gcs_storage"] == "rocksdb"
    assert env["RAY_gcs_storage_path"] == "/data/gcs"
    assert "RAY_REDIS_ADDRESS" not in env
    assert "RAY_external_storage_namespace" not in env
    mount = {"name": "gcs-storage", "mountPath": "/data/gcs"}
    if sub_path:
        mount["subPath"] = sub_path
    assert mount in ray["volumeMounts"]
    assert {"name": "gcs-storage", "persistentVolumeClaim": {"claimName": claim}} in head["spec"][
        "volumes"
    ]


@pytest.mark.parametrize(
    ("storage", "expected"),
    [
        pytest.param(
            None,
            {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
            id="defaults",
        ),
        pytest.param(
            {
                "size": "5Gi",
                "storageClassName": "fast",
                "accessModes": ["ReadWriteMany"],
                "deletionPolicy": "Retain",
            },
            {
                "accessModes": ["ReadWriteMany"],
                "storageClassName": "fast",
                "resources": {"requests": {"storage": "5Gi"}},
            },
            id="custom-retained",
        ),
    ],
)
def test_pvc(storage: dict[str, Any] | None, expected: dict[str, Any]) -> None:
    data = instance_dict()
    data["spec"]["gcsFaultToleranceOptions"] = {"backend": "rocksdb"}
    if storage:
        data["spec"]["gcsFaultToleranceOptions"]["storage"] = storage
    pvc = build_gcs_storage_pvc(cluster(data))
    assert pvc is not None
    assert pvc["metadata"]["name"] == "raycluster-sample-gcs-pvc"
    assert pvc["metadata"]["labels"] == {"ray.io/cluster": "raycluster-sample"}
    assert pvc["spec"] == expected
    assert ("ownerReferences" in pvc["metadata"]) is (storage is None)


def test_no_pvc_without_embedded_storage_or_with_claim() -> None:
    assert build_gcs_storage_pvc(cluster()) is None
    data = instance_dict()
    data["spec"]["gcsFaultToleranceOptions"] = {"backend": "rocksdb", "storage": {"claimName": "x"}}
    assert build_gcs_storage_pvc(cluster(data)) is None
    data["spec"]["gcsFaultToleranceOptions"] = {"redisAddress": "redis:6379"}
    assert build_gcs_storage_pvc(cluster(data)) is None


def test_redis_cleanup_job_is_kuberays() -> None:
    """KubeRay's buildRedisCleanupJob: the script starts by naming the manual procedure, and the
    pod template keeps the head pod's metadata (generateName, namespace, owner)."""
    data = instance_dict()
    data["spec"]["gcsFaultToleranceOptions"] = {"redisAddress": "redis:6379"}
    job = build_redis_cleanup_job(cluster(data))
    script = job["spec"]["template"]["spec"]["containers"][0]["args"][0]
    assert script.startswith('echo "To get more information about manually deleting the storage')
    assert ' for more details." && python -c "from ray._private.gcs_utils import' in script
    meta = job["spec"]["template"]["metadata"]
    assert meta["generateName"] == "raycluster-sample-head-"
    assert meta["namespace"] == job["metadata"]["namespace"]
    assert meta["ownerReferences"] == job["metadata"]["ownerReferences"]
    assert meta["labels"]["ray.io/node-type"] == "redis-cleanup"
