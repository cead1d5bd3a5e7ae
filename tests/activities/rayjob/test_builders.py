"""The RayJob builders: the RayCluster, the submitter Job and the RayJob head Service."""

from __future__ import annotations

import copy
import shlex
from typing import Any

import pytest

from activities.builders.rayjob import (
    InvalidJobSpecError,
    build_rayjob_cluster,
    build_rayjob_head_service,
    build_submitter_job,
    submit_script,
)
from crds.enums import JobSubmissionMode
from crds.raycluster import RayCluster
from crds.rayjob import RayJob
from tests.alias_bombs import BOMB_398, BOMB_584, SMALL_BOMB

IMAGE = "rayproject/ray:2.60.0"
CLUSTER_SPEC: dict[str, Any] = {
    "headGroupSpec": {
        "rayStartParams": {},
        "template": {
            "spec": {
                "containers": [
                    {
                        "name": "ray-head",
                        "image": IMAGE,
                        "ports": [{"name": "dashboard", "containerPort": 8266}],
                    }
                ]
            }
        },
    },
}


def rayjob(**spec: Any) -> RayJob:
    return RayJob.model_validate(
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayJob",
            "metadata": {
                "name": "train",
                "namespace": "ns",
                "uid": "u-1",
                "labels": {"team": "a"},
                "annotations": {"note": "x"},
            },
            "spec": {
                "entrypoint": "  python train.py --x 1  ",
                "rayClusterSpec": copy.deepcopy(CLUSTER_SPEC),
                **spec,
            },
        }
    )


def cluster(name: str = "train-abcde", **spec: Any) -> RayCluster:
    return RayCluster.model_validate(
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayCluster",
            "metadata": {"name": name, "namespace": "ns", "uid": "c-1"},
            "spec": {**copy.deepcopy(CLUSTER_SPEC), **spec},
        }
    )


def test_cluster_copies_spec_labels_and_owner() -> None:
    built = build_rayjob_cluster(rayjob(), "train-abcde", "train-xyz12", attempt=2)
    meta = built["metadata"]
    assert meta["name"] == "train-abcde" and meta["namespace"] == "ns"
    assert meta["labels"] == {
        "team": "a",
        "ray.io/originated-from-cr-name": "train",
        "ray.io/originated-from-crd": "RayJob",
        "ray.io/job-submission-mode": "K8sJobMode",
        "ray.io/rayjob-attempt": "2",
    }
    assert meta["annotations"] == {"note": "x"}
    owner = meta["ownerReferences"][0]
    assert (owner["kind"], owner["uid"], owner["controller"]) == ("RayJob", "u-1", True)
    assert built["spec"] == CLUSTER_SPEC


def test_sidecar_mode_appends_the_submitter_to_the_head() -> None:
    job = rayjob(submissionMode="SidecarMode")
    built = build_rayjob_cluster(job, "train-abcde", "train-xyz12", attempt=1)
    assert built["metadata"]["annotations"]["ray.io/disable-provisioned-head-restart"] == "true"
    pod = built["spec"]["headGroupSpec"]["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    sidecar = pod["containers"][1]
    assert sidecar["name"] == "ray-job-submitter" and sidecar["image"] == IMAGE
    script = sidecar["args"][0]
    assert "http://localhost:8266/api/gcs_healthz" in script
    assert "ray job submit --address http://127.0.0.1:8266 --submission-id train-xyz12" in script
    assert "--no-wait" not in script and "ray job status" not in script


def test_k8s_job_script_checks_status_before_submitting() -> None:
    job = rayjob(
        runtimeEnvYAML="pip: [requests]\nenv_vars: {A: '1'}",
        metadata={"b": "2", "a": "1"},
        entrypointNumCpus=1.5,
        entrypointResources='{"r": 1}',
    )
    script = submit_script(
        job, "j-1", "svc.ns.svc.cluster.local:8265", JobSubmissionMode.K8S_JOB, 0
    )
    words = shlex.split(script)
    address = "http://svc.ns.svc.cluster.local:8265"
    assert words[:2] == ["until", "python"]
    status = words.index("status")
    expected = ["if", "!", "ray", "job", "status", "--address", address, "j-1"]
    assert words[status - 4 : status + 4] == expected
    submit = words.index("submit")
    tail = words[submit + 1 :]
    assert tail[:3] == ["--address", address, "--no-wait"]
    assert tail[tail.index("--runtime-env-json") + 1] == (
        '{"env_vars":{"A":"1"},"pip":["requests"]}'  # keys sorted, as Go's maps marshal
    )
    assert tail[tail.index("--metadata-json") + 1] == '{"a":"1","b":"2"}'
    assert tail[tail.index("--submission-id") + 1] == "j-1"
    assert tail[tail.index("--entrypoint-num-cpus") + 1] == "1.500000"
    assert tail[tail.index("--entrypoint-resources") + 1] == '{"r": 1}'
    # Unquoted, as KubeRay writes it: bash splits the entrypoint into its words.
    start = tail.index("--") + 1
    assert tail[start : tail.index(";", start)] == ["python", "train.py", "--x", "1"]
    assert words[-9:] == ["fi", ";", "ray", "job", "logs", "--address", address, "--follow", "j-1"]


def test_submitter_job_defaults() -> None:
    job = build_submitter_job(rayjob(), cluster(), "j-1", "svc.ns.svc.cluster.local:8265", 1)
    meta, spec = job["metadata"], job["spec"]
    assert meta["name"] == "train"
    assert meta["labels"]["app.kubernetes.io/created-by"] == "kuberay-operator"
    assert meta["labels"]["ray.io/originated-from-cr-name"] == "train"
    assert meta["ownerReferences"][0]["uid"] == "u-1"
    assert spec["backoffLimit"] == 2
    pod = spec["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    (container,) = pod["containers"]
    assert container["name"] == "ray-job-submitter" and container["image"] == IMAGE
    assert container["command"] == ["/bin/bash", "-ce", "--"]
    assert container["resources"] == {
        "limits": {"cpu": "1", "memory": "1Gi"},
        "requests": {"cpu": "500m", "memory": "200Mi"},
    }
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env == {
        "PYTHONUNBUFFERED": "1",
        "RAY_DASHBOARD_ADDRESS": "svc.ns.svc.cluster.local:8265",
        "RAY_JOB_SUBMISSION_ID": "j-1",
    }


def test_submitter_job_keeps_a_users_command_and_backoff() -> None:
    template = {
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "mine", "image": "x", "command": ["my-submit"]}],
        }
    }
    job = rayjob(submitterPodTemplate=template, submitterConfig={"backoffLimit": 0})
    built = build_submitter_job(job, cluster(), "j-1", "u:1", 1)
    assert built["spec"]["backoffLimit"] == 0
    container = built["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["my-submit"] and "args" not in container
    assert {e["name"] for e in container["env"]} >= {"RAY_JOB_SUBMISSION_ID"}


def test_token_auth_gives_the_submitter_a_secret_reference_only() -> None:
    job = rayjob()
    auth = cluster(authOptions={"mode": "token"})
    container = build_submitter_job(job, auth, "j", "u:1", 1)["spec"]["template"]["spec"][
        "containers"
    ][0]
    token = next(e for e in container["env"] if e["name"] == "RAY_AUTH_TOKEN")
    assert token["valueFrom"]["secretKeyRef"] == {"name": "train-abcde", "key": "auth_token"}
    assert "value" not in token


def test_head_service_is_the_rayjobs() -> None:
    service = build_rayjob_head_service(rayjob(), cluster())
    meta = service["metadata"]
    assert meta["name"] == "train-head-svc"
    assert meta["labels"] == {
        "ray.io/originated-from-cr-name": "train",
        "ray.io/originated-from-crd": "RayJob",
        "ray.io/node-type": "head",
        "ray.io/identifier": "train-head",
    }
    assert meta["ownerReferences"][0]["kind"] == "RayJob"
    assert service["spec"]["selector"]["ray.io/cluster"] == "train-abcde"
    assert any(p["name"] == "dashboard" and p["port"] == 8266 for p in service["spec"]["ports"])


@pytest.mark.parametrize("mode", ["K8sJobMode", "SidecarMode"])
@pytest.mark.parametrize(
    "bomb", [SMALL_BOMB, BOMB_398, BOMB_584], ids=["small-bomb", "bomb-398", "bomb-584"]
)
def test_an_alias_bomb_in_the_runtime_env_is_refused_unexpanded(bomb: str, mode: str) -> None:
    job = rayjob(runtimeEnvYAML=bomb, submissionMode=mode)
    with pytest.raises(InvalidJobSpecError) as err:
        if mode == "SidecarMode":
            build_rayjob_cluster(job, "train-abcde", "train-xyz12", attempt=1)
        else:
            build_submitter_job(job, cluster(), "j-1", "svc.ns.svc.cluster.local:8265", 1)
    assert str(err.value) == (
        "spec.runtimeEnvYAML: runtimeEnvYAML expands to more than 25,000 keys and values "
        "through its aliases (*name) (line 5)"
    )


def test_runtime_env_timestamps_stay_strings_as_kuberay_sends_them() -> None:
    job = rayjob(runtimeEnvYAML="env_vars: {DAY: 2024-01-01}\nconfig: &c {a: 1}\nmore: *c")
    script = submit_script(job, "j-1", "svc.ns.svc:8265", JobSubmissionMode.K8S_JOB, 0)
    words = shlex.split(script)
    assert words[words.index("--runtime-env-json") + 1] == (
        '{"config":{"a":1},"env_vars":{"DAY":"2024-01-01"},"more":{"a":1}}'
    )
