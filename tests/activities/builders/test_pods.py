"""Pods compared with what KubeRay's pod_test.go expects from the same cluster."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from activities.builders import BuildOptions, build_head_pod, build_worker_pod
from activities.builders.pods import InvalidPodTemplateError
from tests.activities.builders.fixtures import (
    FQDN,
    HEAD_POD,
    WORKER_POD,
    cluster,
    env_of,
    head_container,
    instance_dict,
    worker_container,
)

ULIMIT = "ulimit -n ${RAY_START_ULIMIT_OPEN_FILES:-65536};"
SHM_VOLUME = {"name": "shared-mem", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}}
SHM_MOUNT = {"mountPath": "/dev/shm", "name": "shared-mem"}
LOGS_VOLUME = {"name": "ray-logs", "emptyDir": {}}
LOGS_MOUNT = {"mountPath": "/tmp/ray", "name": "ray-logs"}
AUTOSCALER_CMD = (
    "ray kuberay-autoscaler --cluster-name $(RAY_CLUSTER_NAME) "
    "--cluster-namespace $(RAY_CLUSTER_NAMESPACE)"
)
# pod_test.go's expected autoscaler container.
AUTOSCALER_CONTAINER = {
    "name": "autoscaler",
    "image": "repo/image:custom",
    "imagePullPolicy": "IfNotPresent",
    "env": [
        {
            "name": "RAY_CLUSTER_NAME",
            "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['ray.io/cluster']"}},
        },
        {
            "name": "RAY_CLUSTER_NAMESPACE",
            "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}},
        },
        {"name": "RAY_HEAD_POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "KUBERAY_CRD_VER", "value": "v1"},
        {"name": "KUBERAY_GEN_AUTOSCALER_START_CMD", "value": AUTOSCALER_CMD},
    ],
    "command": ["/bin/bash", "-c", "--"],
    "args": [AUTOSCALER_CMD],
    "resources": {
        "limits": {"cpu": "500m", "memory": "512Mi"},
        "requests": {"cpu": "500m", "memory": "512Mi"},
    },
    "volumeMounts": [LOGS_MOUNT],
}


def _words(text: str) -> list[str]:
    return sorted(word for word in text.split(" ") if word)


def _head(data: dict[str, Any] | None = None, **kwargs: Any) -> dict[str, Any]:
    return build_head_pod(cluster(data), HEAD_POD, **kwargs)


def _worker(data: dict[str, Any] | None = None, **kwargs: Any) -> dict[str, Any]:
    return build_worker_pod(cluster(data), "small-group", WORKER_POD, **kwargs)


def _autoscaling(version: str | None = None) -> dict[str, Any]:
    data = instance_dict()
    data["spec"]["enableInTreeAutoscaling"] = True
    if version is not None:
        data["spec"]["autoscalerOptions"] = {"version": version}
    return data


def test_head_pod_like_kuberay() -> None:
    pod = _head()
    ray = pod["spec"]["containers"][0]
    env = env_of(ray)
    assert env["RAY_ADDRESS"] == "127.0.0.1:6379"
    assert env["RAY_USAGE_STATS_KUBERAY_IN_USE"] == "1"
    assert env["RAY_CLUSTER_NAME"] == {
        "fieldRef": {"fieldPath": "metadata.labels['ray.io/cluster']"}
    }
    assert env["RAY_CLUSTER_NAMESPACE"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}
    assert env["RAY_NODE_TYPE_NAME"] == {
        "fieldRef": {"fieldPath": "metadata.labels['ray.io/group']"}
    }
    assert env["RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE"] == "1"
    assert env["RAY_USAGE_STATS_EXTRA_TAGS"] == "kuberay_version=v1.7.0;kuberay_crd=RayCluster"
    assert "FQ_RAY_IP" not in env
    assert _words(ray["args"][0]) == _words(
        f"{ULIMIT} ray start --head --block --dashboard-agent-listen-port=52365 "
        "--memory=1073741824 --num-cpus=1 --metrics-export-port=8080 --dashboard-host=0.0.0.0"
    )
    assert env["KUBERAY_GEN_RAY_START_CMD"] == ray["args"][0].removeprefix(ULIMIT + " ")
    assert ray["command"] == ["/bin/bash", "-c", "--"]
    assert pod["spec"]["volumes"] == [SHM_VOLUME]
    assert ray["volumeMounts"] == [SHM_MOUNT]
    assert pod["metadata"]["labels"] == {
        "ray.io/is-ray-node": "yes",
        "ray.io/cluster": "raycluster-sample",
        "ray.io/node-type": "head",
        "ray.io/group": "headgroup",
        "ray.io/identifier": "raycluster-sample-head",
        "app.kubernetes.io/name": "kuberay",
        "app.kubernetes.io/created-by": "kuberay-operator",
    }
    annotations = pod["metadata"]["annotations"]
    assert annotations["ray.io/ft-enabled"] == "false"
    assert annotations["ray.io/kuberay-version"] == "v1.7.0"
    assert len(annotations["ray.io/upgrade-strategy-recreate-hash"]) == 32
    assert pod["metadata"]["name"] == HEAD_POD
    assert pod["metadata"]["namespace"] == "default"
    assert pod["metadata"]["ownerReferences"][0]["uid"] == "uid-1234"
    assert ray["ports"] == [{"name": "metrics", "containerPort": 8080}]


def test_worker_pod_like_kuberay() -> None:
    pod = _worker()
    ray = pod["spec"]["containers"][0]
    assert _words(ray["args"][0]) == _words(
        f"{ULIMIT} ray start --block --dashboard-agent-listen-port=52365 --memory=1073741824 "
        f"--num-cpus=1 --num-gpus=3 --address={FQDN}:6379 --port=6379 --metrics-export-port=8080"
    )
    env = env_of(ray)
    assert env["RAY_ADDRESS"] == f"{FQDN}:6379"
    assert env["FQ_RAY_IP"] == FQDN
    assert env["RAY_IP"] == "raycluster-sample-head-svc"
    assert env["TEST_ENV_NAME"] == "TEST_ENV_VALUE"
    assert "RAY_USAGE_STATS_EXTRA_TAGS" not in env
    assert ray["resources"]["limits"] == {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "3"}
    labels = pod["metadata"]["labels"]
    assert labels["ray.io/group"] == "small-group"
    assert labels["ray.io/node-type"] == "worker"
    assert labels["ray.io/worker-group-replica-index"] == "0"
    assert "ray.io/ft-enabled" not in pod["metadata"].get("annotations", {})
    assert pod["spec"]["volumes"] == [SHM_VOLUME]


def test_cpu_from_requests_when_no_limit() -> None:
    data = instance_dict()
    head_container(data)["resources"] = {
        "requests": {"cpu": "2", "memory": "1Gi"},
        "limits": {"memory": "1Gi"},
    }
    worker_container(data)["resources"] = {
        "requests": {"cpu": "2", "memory": "1Gi"},
        "limits": {"memory": "1Gi", "nvidia.com/gpu": "3"},
    }
    assert "--num-cpus=2" in _head(data)["spec"]["containers"][0]["args"][0]
    worker_args = _worker(data)["spec"]["containers"][0]["args"][0]
    assert "--num-cpus=2" in worker_args
    assert "--num-gpus=3" in worker_args


@pytest.mark.parametrize(
    ("command", "args", "expected_args"),
    [
        pytest.param(
            ["python"], ["/opt/code.py"], " python  /opt/code.py  && ", id="user-cmd-first"
        ),
        pytest.param(None, ["echo hi"], " echo hi  && ", id="args-only"),
        pytest.param(None, None, "", id="none"),
    ],
)
def test_user_command_runs_before_ray_start(
    command: list[str] | None, args: list[str] | None, expected_args: str
) -> None:
    data = instance_dict()
    if command:
        head_container(data)["command"] = command
    if args:
        head_container(data)["args"] = args
    ray = _head(data)["spec"]["containers"][0]
    assert ray["args"][0].startswith(expected_args + ULIMIT + " ray start --head ")


def test_user_ray_start_is_left_alone() -> None:
    data = instance_dict()
    head_container(data)["command"] = ["ray start --head --block"]
    ray = _head(data)["spec"]["containers"][0]
    assert ray["command"] == ["ray start --head --block"]
    assert "args" not in ray
    assert "ray start --head" in env_of(ray)["KUBERAY_GEN_RAY_START_CMD"]


def test_overwrite_container_cmd_annotation() -> None:
    data = instance_dict()
    data["metadata"]["annotations"] = {"ray.io/overwrite-container-cmd": "true"}
    head_container(data).update(command=["I am head"], args=["I am head again"])
    worker_container(data).update(command=["I am worker"], args=["I am worker again"])
    head, worker = _head(data), _worker(data)
    assert head["spec"]["containers"][0]["command"] == ["I am head"]
    assert head["spec"]["containers"][0]["args"] == ["I am head again"]
    assert worker["spec"]["containers"][0]["command"] == ["I am worker"]
    assert worker["spec"]["containers"][0]["args"] == ["I am worker again"]
    assert head["metadata"]["annotations"]["ray.io/overwrite-container-cmd"] == "true"
    assert worker["metadata"]["annotations"]["ray.io/overwrite-container-cmd"] == "true"
    assert "KUBERAY_GEN_RAY_START_CMD" in env_of(worker["spec"]["containers"][0])


def test_autoscaler_sidecar() -> None:
    pod = _head(_autoscaling())
    ray = pod["spec"]["containers"][0]
    assert " --no-monitor " in ray["args"][0]
    assert pod["spec"]["volumes"] == [SHM_VOLUME, LOGS_VOLUME]
    assert ray["volumeMounts"] == [SHM_MOUNT, LOGS_MOUNT]
    assert pod["spec"]["containers"][1] == AUTOSCALER_CONTAINER
    assert pod["spec"]["serviceAccountName"] == "raycluster-sample"
    assert "RAY_enable_autoscaler_v2" not in env_of(ray)
    assert "restartPolicy" not in pod["spec"]


def test_autoscaler_options_override() -> None:
    data = _autoscaling()
    custom_mounts = [
        {"name": "ca-tls", "mountPath": "/etc/ca/tls", "readOnly": True},
        {"name": "ray-tls", "mountPath": "/etc/ray/tls"},
    ]
    security = {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    resources = {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}
    data["spec"]["autoscalerOptions"] = {
        "upscalingMode": "Aggressive",
        "idleTimeoutSeconds": 100,
        "image": "custom-autoscaler-xxx",
        "imagePullPolicy": "IfNotPresent",
        "resources": resources,
        "env": [{"name": "fooEnv", "value": "fooValue"}],
        "envFrom": [{"prefix": "Pre"}],
        "volumeMounts": custom_mounts,
        "securityContext": security,
    }
    expected = copy.deepcopy(AUTOSCALER_CONTAINER)
    expected.update(
        image="custom-autoscaler-xxx",
        resources=resources,
        envFrom=[{"prefix": "Pre"}],
        securityContext=security,
        volumeMounts=[*custom_mounts, LOGS_MOUNT],
    )
    expected["env"].append({"name": "fooEnv", "value": "fooValue"})
    assert _head(data)["spec"]["containers"][1] == expected


@pytest.mark.parametrize(
    ("version", "env_value", "restart_policy"),
    [
        pytest.param(None, None, None, id="unset-lets-ray-choose"),
        pytest.param("v1", "false", None, id="v1"),
        pytest.param("v2", "true", "Never", id="v2"),
    ],
)
def test_autoscaler_versions(
    version: str | None, env_value: str | None, restart_policy: str | None
) -> None:
    data = _autoscaling(version)
    head, worker = _head(data), _worker(data)
    assert env_of(head["spec"]["containers"][0]).get("RAY_enable_autoscaler_v2") == env_value
    assert head["spec"].get("restartPolicy") == restart_policy
    assert worker["spec"].get("restartPolicy") == restart_policy
    assert "RAY_enable_autoscaler_v2" not in env_of(worker["spec"]["containers"][0])


def test_worker_restart_policy_kept_for_v1() -> None:
    data = _autoscaling("v1")
    data["spec"]["workerGroupSpecs"][0]["template"]["spec"]["restartPolicy"] = "Always"
    assert _worker(data)["spec"]["restartPolicy"] == "Always"


@pytest.mark.parametrize(
    ("autoscaling", "account", "cluster_name", "expected"),
    [
        pytest.param(False, None, "raycluster-sample", None, id="none"),
        pytest.param(False, "head-sa", "raycluster-sample", "head-sa", id="user-no-autoscaling"),
        pytest.param(True, "head-sa", "raycluster-sample", "head-sa", id="user-with-autoscaling"),
        pytest.param(True, None, "raycluster-sample", "raycluster-sample", id="cluster-name"),
        pytest.param(True, None, "x" * 150 + "y" * 50, "y" * 50, id="clipped-like-check-name"),
    ],
)
def test_head_service_account(
    autoscaling: bool, account: str | None, cluster_name: str, expected: str | None
) -> None:
    data = _autoscaling() if autoscaling else instance_dict()
    data["metadata"]["name"] = cluster_name
    if account:
        data["spec"]["headGroupSpec"]["template"]["spec"]["serviceAccountName"] = account
    assert _head(data)["spec"].get("serviceAccountName") == expected


def test_created_by_rayservice() -> None:
    data = _autoscaling()
    data["metadata"]["labels"] = {"ray.io/originated-from-crd": "RayService"}
    head, worker = _head(data), _worker(data)
    assert head["metadata"]["labels"]["ray.io/serve"] == "false"
    assert worker["metadata"]["labels"]["ray.io/serve"] == "true"
    for pod in (head, worker):
        env = env_of(pod["spec"]["containers"][0])
        assert env["RAY_timeout_ms_task_wait_for_death_info"] == "0"
        assert env["RAY_gcs_server_request_timeout_seconds"] == "5"
        assert env["RAY_SERVE_KV_TIMEOUT_S"] == "5"
    assert env_of(head["spec"]["containers"][0])["RAY_USAGE_STATS_EXTRA_TAGS"].endswith(
        "kuberay_crd=RayService"
    )


@pytest.mark.parametrize(
    ("login", "expected"),
    [
        pytest.param(True, ["/bin/bash", "-cl", "--"], id="login"),
        pytest.param(False, ["/bin/bash", "-c", "--"], id="plain"),
    ],
)
def test_login_shell(login: bool, expected: list[str]) -> None:
    options = BuildOptions(login_shell=login)
    head, worker = _head(_autoscaling(), options=options), _worker(options=options)
    assert head["spec"]["containers"][0]["command"] == expected
    assert head["spec"]["containers"][1]["command"] == expected
    assert worker["spec"]["containers"][0]["command"] == expected
    assert worker["spec"]["initContainers"][0]["command"] == expected


def test_wait_gcs_ready_init_container() -> None:
    data = instance_dict()
    worker_container(data)["imagePullPolicy"] = "Always"
    init = _worker(data)["spec"]["initContainers"][-1]
    assert init["name"] == "wait-gcs-ready"
    assert init["image"] == "repo/image:custom"
    assert init["imagePullPolicy"] == "Always"
    assert init["resources"] == {
        "limits": {"cpu": "200m", "memory": "256Mi"},
        "requests": {"cpu": "200m", "memory": "256Mi"},
    }
    assert f"ray health-check --address {FQDN}:6379 > /dev/null 2>&1" in init["args"][0]
    # The user's env first (copied before KubeRay adds its own), then the head address.
    assert init["env"] == [
        {"name": "TEST_ENV_NAME", "value": "TEST_ENV_VALUE"},
        {"name": "FQ_RAY_IP", "value": FQDN},
        {"name": "RAY_IP", "value": "raycluster-sample-head-svc"},
    ]
    assert (
        "initContainers"
        not in _worker(options=BuildOptions(init_container_injection=False))["spec"]
    )


def test_wait_gcs_ready_script_matches_kuberay_text() -> None:
    script = _worker()["spec"]["initContainers"][0]["args"][0]
    lines = script.split("\n")
    assert lines[0] == ""
    assert lines[1] == "\t" * 5 + "SECONDS=0"
    assert lines[3] == "\t" * 6 + "if (( SECONDS <= 120 )); then"
    assert lines[-2] == "\t" * 5 + "done"
    assert lines[-1] == "\t" * 4


def test_user_init_containers_get_head_address() -> None:
    data = instance_dict()
    spec = data["spec"]["headGroupSpec"]["template"]["spec"]
    spec["initContainers"] = [{"name": "setup", "image": "busybox"}]
    init = _head(data)["spec"]["initContainers"][0]
    assert init["env"] == [
        {"name": "FQ_RAY_IP", "value": FQDN},
        {"name": "RAY_IP", "value": "raycluster-sample-head-svc"},
    ]


def test_multi_host_labels_and_template_name_ignored() -> None:
    data = instance_dict()
    group = data["spec"]["workerGroupSpecs"][0]
    group["numOfHosts"] = 4
    group["template"]["metadata"]["name"] = "ray-worker-test"
    group["template"]["metadata"]["generateName"] = "ignored-"
    pod = build_worker_pod(
        cluster(data),
        "small-group",
        WORKER_POD,
        replica_index=1,
        replica_name="small-group-abcde",
        host_index=2,
    )
    assert pod["metadata"]["name"] == WORKER_POD
    assert "generateName" not in pod["metadata"]
    labels = pod["metadata"]["labels"]
    assert labels["ray.io/worker-group-replica-name"] == "small-group-abcde"
    assert labels["ray.io/worker-group-replica-index"] == "1"
    assert labels["ray.io/replica-host-index"] == "2"


@pytest.mark.parametrize(
    ("ports", "expected"),
    [
        pytest.param(None, [{"name": "metrics", "containerPort": 8080}], id="default-added"),
        pytest.param(
            [{"name": "metrics", "containerPort": 8081}],
            [{"name": "metrics", "containerPort": 8081}],
            id="custom-kept",
        ),
    ],
)
def test_metrics_port(ports: list[dict[str, Any]] | None, expected: list[dict[str, Any]]) -> None:
    data = instance_dict()
    if ports is not None:
        head_container(data)["ports"] = copy.deepcopy(ports)
        worker_container(data)["ports"] = copy.deepcopy(ports)
    assert _head(data)["spec"]["containers"][0]["ports"] == expected
    assert _worker(data)["spec"]["containers"][0]["ports"] == expected


@pytest.mark.parametrize(
    ("plasma", "shared_memory"),
    [
        pytest.param(None, True, id="unset"),
        pytest.param("/dev/shm", False, id="dev-shm"),
        pytest.param("/tmp/ray/plasma", False, id="elsewhere"),
    ],
)
def test_plasma_directory_skips_shared_memory(plasma: str | None, shared_memory: bool) -> None:
    data = instance_dict()
    if plasma is not None:
        data["spec"]["headGroupSpec"]["rayStartParams"]["plasma-directory"] = plasma
    spec = _head(data)["spec"]
    assert ("volumes" in spec) is shared_memory


def test_existing_dev_shm_mount_is_kept() -> None:
    data = instance_dict()
    head_container(data)["volumeMounts"] = [{"name": "mine", "mountPath": "/dev/shm"}]
    data["spec"]["headGroupSpec"]["template"]["spec"]["volumes"] = [
        {"name": "mine", "emptyDir": {}}
    ]
    spec = _head(data)["spec"]
    assert spec["volumes"] == [{"name": "mine", "emptyDir": {}}]


def test_group_labels_and_resources() -> None:
    data = instance_dict()
    group = data["spec"]["workerGroupSpecs"][0]
    group["labels"] = {"accelerator-type": "TPU-V6E", "ray.io/cluster": "evil"}
    group["resources"] = {"cpu": "8", "TPU": "4"}
    group["template"]["metadata"]["labels"] = {"accelerator-type": "GPU", "market-type": "spot"}
    pod = _worker(data)
    labels = pod["metadata"]["labels"]
    assert labels["accelerator-type"] == "TPU-V6E"
    assert labels["market-type"] == "spot"
    assert labels["ray.io/cluster"] == "raycluster-sample"
    args = pod["spec"]["containers"][0]["args"][0]
    assert " --num-cpus=8 " in args
    assert """ --resources='{"TPU":4}' """ in args
    assert " --labels=accelerator-type=TPU-V6E,ray.io/cluster=evil " in args


def test_input_model_is_not_mutated() -> None:
    model = cluster(_autoscaling("v2"))
    before = model.model_dump()
    build_head_pod(model, HEAD_POD)
    build_worker_pod(model, "small-group", WORKER_POD)
    assert model.model_dump() == before


def test_unknown_group_and_empty_template() -> None:
    with pytest.raises(KeyError):
        build_worker_pod(cluster(), "nope", WORKER_POD)
    data = instance_dict()
    data["spec"]["headGroupSpec"]["template"]["spec"]["containers"] = []
    with pytest.raises(InvalidPodTemplateError):
        _head(data)


@pytest.mark.parametrize(
    ("auth", "expected_env", "volume"),
    [
        pytest.param(
            {"mode": "token"},
            {
                "RAY_AUTH_MODE": "token",
                "RAY_AUTH_TOKEN": {
                    "secretKeyRef": {"name": "raycluster-sample", "key": "auth_token"}
                },
            },
            False,
            id="shared-token",
        ),
        pytest.param(
            {"mode": "token", "secretName": "mine"},
            {
                "RAY_AUTH_MODE": "token",
                "RAY_AUTH_TOKEN": {"secretKeyRef": {"name": "mine", "key": "auth_token"}},
            },
            False,
            id="user-secret",
        ),
        pytest.param(
            {"mode": "token", "enableK8sTokenAuth": True},
            {"RAY_AUTH_MODE": "token", "RAY_ENABLE_K8S_TOKEN_AUTH": "true"},
            True,
            id="k8s-token",
        ),
    ],
)
def test_token_auth(auth: dict[str, Any], expected_env: dict[str, Any], volume: bool) -> None:
    data = _autoscaling()
    data["spec"]["authOptions"] = auth
    head, worker = _head(data), _worker(data)
    for container in (
        head["spec"]["containers"][0],
        head["spec"]["containers"][1],
        worker["spec"]["containers"][0],
        worker["spec"]["initContainers"][0],
    ):
        env = env_of(container)
        assert {name: env.get(name) for name in expected_env} == expected_env
    volumes = [v["name"] for v in head["spec"]["volumes"]]
    assert ("ray-token" in volumes) is volume
