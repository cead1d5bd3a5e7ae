"""Pure kubelet logic, table-tested: env expansion, status, probe timing, back-off, images."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from devcluster.kubelet import envs, images, network, status, volumes
from devcluster.kubelet.probes import ProbeSpec, ProbeTracker
from devcluster.kubelet.status import RUNNING, TERMINATED, WAITING, ContainerRecord


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("$(A)-$(B)", "1-2"),
        ("$$(A)", "$(A)"),
        ("$(MISSING)", "$(MISSING)"),
        ("$(A", "$(A"),
        ("cost $5", "cost $5"),
        ("end$", "end$"),
    ],
)
def test_expand_follows_kubernetes_rules(text: str, expected: str) -> None:
    assert envs.expand(text, {"A": "1", "B": "2"}) == expected


POD: dict[str, Any] = {
    "metadata": {"name": "p", "namespace": "ns", "uid": "u-1", "labels": {"ray.io/group": "g"}},
    "spec": {"nodeName": "devcluster", "containers": [{"name": "c"}]},
    "status": {"podIP": "10.244.0.7"},
}


def test_container_env_resolves_every_source_in_order() -> None:
    data = {("configMap", "cm"): {"k": "from-cm"}, ("secret", "s"): {"pw": "hunter2"}}
    container = {
        "name": "c",
        "envFrom": [{"configMapRef": {"name": "cm"}, "prefix": "CM_"}],
        "env": [
            {"name": "NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {
                "name": "GROUP",
                "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['ray.io/group']"}},
            },
            {"name": "PW", "valueFrom": {"secretKeyRef": {"name": "s", "key": "pw"}}},
            {"name": "ADDR", "value": "$(IP):6379/$(NAME)"},
            {
                "name": "OPT",
                "valueFrom": {"secretKeyRef": {"name": "gone", "key": "x", "optional": True}},
            },
        ],
    }
    env = envs.container_env(
        POD, container, lambda kind, name: data.get((kind, name)), {"PATH": "/bin"}
    )
    assert env == {
        "PATH": "/bin",
        "CM_k": "from-cm",
        "NAME": "p",
        "IP": "10.244.0.7",
        "GROUP": "g",
        "PW": "hunter2",
        "ADDR": "10.244.0.7:6379/p",
    }


def test_missing_secret_is_a_config_error() -> None:
    container = {
        "name": "c",
        "env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}],
    }
    with pytest.raises(envs.ConfigError, match='secret "s" not found'):
        envs.container_env(POD, container, lambda kind, name: None, {})


@pytest.mark.parametrize(
    ("resources", "ref", "expected"),
    [
        ({"limits": {"cpu": "500m"}}, {"resource": "limits.cpu"}, "1"),
        ({"limits": {"cpu": "2"}}, {"resource": "requests.cpu"}, "2"),
        ({"limits": {"memory": "2Gi"}}, {"resource": "limits.memory"}, str(2 * 2**30)),
        ({}, {"resource": "limits.cpu"}, "4"),
    ],
)
def test_resource_field_refs(resources: dict[str, Any], ref: dict[str, Any], expected: str) -> None:
    container = {"name": "c", "resources": resources}
    assert (
        envs.resource_value({**POD, "spec": {"containers": [container]}}, container, ref, 4)
        == expected
    )


def _record(state: str, code: int = 0, ready: bool = False, last: bool = False) -> ContainerRecord:
    record = ContainerRecord("c", "img", state=state, exit_code=code, ready=ready)
    record.last_terminated = {"exitCode": 1} if last else None
    return record


@pytest.mark.parametrize(
    ("policy", "inits", "containers", "phase"),
    [
        ("Always", [], [_record(WAITING)], "Pending"),
        ("Always", [_record(RUNNING)], [_record(WAITING)], "Pending"),
        ("Never", [_record(TERMINATED, 1)], [_record(WAITING)], "Failed"),
        ("Always", [_record(TERMINATED, 0)], [_record(RUNNING)], "Running"),
        ("Always", [], [_record(TERMINATED, 0)], "Running"),
        ("OnFailure", [], [_record(TERMINATED, 0), _record(TERMINATED, 0)], "Succeeded"),
        ("OnFailure", [], [_record(TERMINATED, 2)], "Running"),
        ("Never", [], [_record(TERMINATED, 0), _record(TERMINATED, 2)], "Failed"),
        ("Always", [], [_record(WAITING, last=True)], "Running"),
        ("Never", [], [_record(RUNNING), _record(TERMINATED, 0)], "Running"),
    ],
)
def test_phase_follows_get_phase(
    policy: str, inits: list[ContainerRecord], containers: list[ContainerRecord], phase: str
) -> None:
    assert status.phase(policy, inits, containers) == phase


def test_ready_conditions_and_transition_times() -> None:
    pod = {"spec": {"restartPolicy": "Always"}, "status": {}}
    first = status.pod_status(
        pod, [], [_record(RUNNING, ready=False)], "10.244.0.2", "10.244.0.1", "t1"
    )
    by_type = {c["type"]: c for c in first["conditions"]}
    assert (
        by_type["Ready"]["status"] == "False" and by_type["Ready"]["reason"] == "ContainersNotReady"
    )
    assert by_type["PodScheduled"]["status"] == by_type["Initialized"]["status"] == "True"
    assert first["podIP"] == "10.244.0.2" and first["hostIP"] == "10.244.0.1"
    second = status.pod_status(
        {**pod, "status": first},
        [],
        [_record(RUNNING, ready=True)],
        "10.244.0.2",
        "10.244.0.1",
        "t2",
    )
    by_type = {c["type"]: c for c in second["conditions"]}
    assert by_type["Ready"] == {
        "type": "Ready",
        "status": "True",
        "lastProbeTime": None,
        "lastTransitionTime": "t2",
    }
    assert by_type["PodScheduled"]["lastTransitionTime"] == "t1"  # unchanged status keeps its time
    assert second["containerStatuses"][0]["ready"] is True


def test_container_status_shapes() -> None:
    record = ContainerRecord(
        "c", "img", state=TERMINATED, reason="", exit_code=137, started_at="a", finished_at="b"
    )
    record.restart_count, record.last_terminated = 2, {"exitCode": 1, "reason": "Error"}
    out = status.container_status(record)
    assert out["state"] == {
        "terminated": {"exitCode": 137, "reason": "Error", "startedAt": "a", "finishedAt": "b"}
    }
    assert out["lastState"] == {"terminated": {"exitCode": 1, "reason": "Error"}}
    assert (out["restartCount"], out["ready"], out["started"]) == (2, False, False)


@pytest.mark.parametrize(
    ("policy", "code", "restart"),
    [("Always", 0, True), ("OnFailure", 0, False), ("OnFailure", 1, True), ("Never", 1, False)],
)
def test_should_restart(policy: str, code: int, restart: bool) -> None:
    assert status.should_restart(policy, code) is restart


def test_backoff_is_immediate_then_doubles_to_the_cap() -> None:
    assert [status.backoff_delay(n) for n in range(7)] == [0, 10, 20, 40, 80, 160, 300]


def test_probe_tracker_thresholds_and_timing() -> None:
    spec = ProbeSpec.parse(
        {"initialDelaySeconds": 5, "periodSeconds": 2, "failureThreshold": 2, "successThreshold": 2}
    )
    tracker = ProbeTracker(spec, started_at=100.0, initially=False)
    assert not tracker.due(104.9) and tracker.due(105.0)
    assert tracker.record(True, 105.0) is False and tracker.result is False  # needs two successes
    assert not tracker.due(106.0) and tracker.due(107.0)
    assert tracker.record(True, 107.0) is True and tracker.result is True
    assert tracker.record(False, 109.0) is False
    assert tracker.record(True, 111.0) is False  # a success resets the failure streak
    assert tracker.record(False, 113.0) is False and tracker.record(False, 115.0) is True
    assert tracker.result is False


@pytest.mark.parametrize(
    ("image", "repository"),
    [
        ("rayproject/ray:2.41.0-py311", "rayproject/ray"),
        ("docker.io/rayproject/ray-ml@sha256:abc", "rayproject/ray-ml"),
        ("redis:7", "redis"),
        ("localhost:5000/app:1", "localhost:5000/app"),
    ],
)
def test_repository_of(image: str, repository: str) -> None:
    assert images.repository_of(image) == repository


def test_image_map_and_command_line() -> None:
    mapping = images.default_image_map()
    ray = mapping.lookup("rayproject/ray:2.41.0")
    assert ray.path_prefix[0].endswith("bin") and ray.home == "/home/ray"
    redis = mapping.lookup("redis:7.2")
    assert images.command_line(redis, [], []) == ["redis-server", "--protected-mode", "no"]
    assert images.command_line(redis, [], ["--port", "7000"]) == ["--port", "7000"]
    assert images.command_line(ray, ["ray"], ["start"]) == ["ray", "start"]


def test_mount_script_orders_mounts_and_uses_relative_sources(tmp_path: Path) -> None:
    pod = {
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {"volumes": [{"name": "logs", "emptyDir": {}}]},
    }
    paths = volumes.prepare_volumes(pod, tmp_path, tmp_path / "claims", lambda kind, name: None)
    container = {"volumeMounts": [{"name": "logs", "mountPath": "/tmp/ray"}]}
    mounts = volumes.container_mounts(container, paths, tmp_path)
    assert [m.target for m in mounts] == ["/tmp/ray", volumes.SERVICE_ACCOUNT_DIR]
    script = volumes.mount_script(
        tmp_path, "containers/c/tmp", mounts, "../net/hosts", "p", "/home/ray"
    )
    lines = script.splitlines()
    assert lines.index("mount -o bind containers/c/tmp /tmp") < lines.index(
        "mount -o bind volumes/logs /tmp/ray"
    )
    assert "mount -o bind,ro ../net/hosts /etc/hosts" in lines and lines[-1] == 'exec "$@"'
    assert (tmp_path / "volumes" / "kube-api-access-devcluster" / "namespace").read_text() == "ns"


def test_configmap_items_become_files(tmp_path: Path) -> None:
    pod = {"metadata": {"name": "p"}, "spec": {"automountServiceAccountToken": False, "volumes": [
        {"name": "conf", "configMap": {"name": "cm", "items": [{"key": "a", "path": "sub/a.txt"}]}},
    ]}}  # fmt: skip
    paths = volumes.prepare_volumes(
        pod, tmp_path, tmp_path, lambda kind, name: {"a": b"A", "b": b"B"}
    )
    assert (paths["conf"] / "sub" / "a.txt").read_bytes() == b"A"
    assert not (paths["conf"] / "b").exists() and list(paths) == ["conf"]


def test_volume_files_get_their_items_mode_else_the_volumes_default_mode(tmp_path: Path) -> None:
    # KubeRay v1.5.0's ray-cluster.tls.yaml runs its certificate script from a ConfigMap
    # mounted with defaultMode 0777; the init container failed with "Permission denied".
    script = {"key": "gen.sh", "path": "gen.sh"}
    runnable = {"key": "gen.sh", "path": "run", "mode": 0o755}
    pod = {"metadata": {"name": "p"}, "spec": {"automountServiceAccountToken": False, "volumes": [
        {"name": "gen", "configMap": {"name": "tls", "defaultMode": 0o777, "items": [script]}},
        {"name": "ca", "secret": {"secretName": "ca", "items": [
            {"key": "ca.key", "path": "ca.key", "mode": 0o400}, {"key": "gen.sh", "path": "x"},
        ]}},
        {"name": "both", "projected": {"defaultMode": 0o440, "sources": [
            {"configMap": {"name": "tls", "items": [runnable]}},
            {"secret": {"name": "ca", "items": [{"key": "ca.key", "path": "key"}]}},
        ]}},
    ]}}  # fmt: skip
    paths = volumes.prepare_volumes(
        pod, tmp_path, tmp_path, lambda kind, name: {"gen.sh": b"#!/bin/sh", "ca.key": b"K"}
    )

    def mode(path: Path) -> int:
        return path.stat().st_mode & 0o777

    assert mode(paths["gen"] / "gen.sh") == 0o777
    assert (mode(paths["ca"] / "ca.key"), mode(paths["ca"] / "x")) == (0o400, 0o644)
    assert (mode(paths["both"] / "run"), mode(paths["both"] / "key")) == (0o755, 0o440)


def test_a_projected_token_is_devclusters_placeholder_without_a_real_api_server(
    tmp_path: Path,
) -> None:
    # KubeRay's ray-cluster.kubernetes.auth-manual.yaml mounts a projected token; devcluster
    # accepts any bearer token, so its placeholder stands in (the pod used to fail).
    token = {"serviceAccountToken": {"path": "token"}}
    pod = {"metadata": {"name": "p", "namespace": "ns"}, "spec": {"volumes": [
        {"name": "ray-token", "projected": {"sources": [token]}},
    ]}}  # fmt: skip
    paths = volumes.prepare_volumes(pod, tmp_path, tmp_path, lambda kind, name: None)
    assert (paths["ray-token"] / "token").read_bytes() == b"devcluster"
    with pytest.raises(volumes.VolumeError, match="no service account token"):
        volumes.prepare_volumes(
            pod, tmp_path, tmp_path, lambda kind, name: None, placeholder_token=False
        )


def test_ip_allocator_is_next_fit() -> None:
    allocator = network.IpAllocator()
    first, second = allocator.allocate(), allocator.allocate()
    assert (first, second) == ("10.244.0.2", "10.244.0.3")
    allocator.release(first)
    assert allocator.allocate() == "10.244.0.4"  # a freed IP is not reused at once


def test_host_paths_under_tmp_stay_visible_through_the_private_tmp() -> None:
    # A checkout cloned under /tmp (as CI may do) keeps its venv visible inside pods.
    script = volumes.mount_script(
        Path("/state/pods/p"),
        "containers/c/tmp",
        [],
        "hosts",
        "p",
        "/",
        host_paths=["/tmp/ci/main/.venv", "/opt/elsewhere"],
    )
    lines = script.splitlines()
    bind = lines.index("mount --bind /tmp/ci/main/.venv containers/c/tmp/ci/main/.venv")
    assert lines.index("mount -o rbind containers/c/tmp /tmp") > bind
    assert not any("/opt/elsewhere" in line for line in lines)


def test_host_paths_under_the_pods_home_stay_visible_through_it() -> None:
    """Regression: the per-pod home mounted over /root hid KubeRay's submitter built into
    /root/.cache, and its pods failed with `exec: kuberay-submitter: not found`."""
    built = "/root/.cache/kuberay-temporal/kuberay-v1.7.0-0/bin"
    home = volumes.Mount("home", "/root")
    script = volumes.mount_script(
        Path("/state/pods/p"), "tmp", [home], "hosts", "p", "/", host_paths=[built]
    )
    lines = script.splitlines()
    inside = "home/.cache/kuberay-temporal/kuberay-v1.7.0-0/bin"
    bind = lines.index(f"mount --bind {built} {inside}")
    assert lines.index(f"mkdir -p {inside}") < bind < lines.index("mount -o rbind home /root")
    assert "mount -o bind tmp /tmp" in lines  # nothing of the host's under /tmp here


def test_a_missing_stand_in_program_is_named_with_its_install_command() -> None:
    tool = images.ImageEnvironment(programs=(("no-such-program-here", "apt-get install it"),))
    message = images.missing_program(tool, "example/tool:1")
    assert message is not None
    assert "no-such-program-here" in message and "example/tool:1" in message
    assert "`apt-get install it`" in message
    shell = images.ImageEnvironment(programs=(("sh", "apt-get install dash"),))
    assert images.missing_program(shell, "busybox") is None


def test_redis_images_have_their_data_directory() -> None:
    redis = images.default_image_map().lookup("redis:7.4.0")
    assert redis.directories == ("/data",) and redis.workdir == "/data"
    assert [program for program, _ in redis.programs] == ["redis-server"]


def test_kuberays_submitter_image_runs_its_submitter_built_from_the_module() -> None:
    """KubeRay's e2e tests give the submitter pod `kuberay/submitter:nightly` with command
    `/submitter`, a FROM-scratch image's one program: it runs the submitter `make kuberay`
    builds, found on the image's PATH, or names that command when it is not built."""
    submitter = images.default_image_map().lookup("kuberay/submitter:nightly")
    assert images.command_line(submitter, ["/submitter"], ["--", "python", "job.py"]) == [
        "kuberay-submitter",
        "--",
        "python",
        "job.py",
    ]
    assert images.command_line(submitter, [], ["--runtime-env-json", "{}"])[0] == (
        "kuberay-submitter"
    )  # the image's ENTRYPOINT
    assert submitter.path_prefix[0].endswith("/bin")
    unbuilt = dataclasses.replace(submitter, path_prefix=())
    message = images.missing_program(unbuilt, "kuberay/submitter:nightly")
    assert message is not None and "`make kuberay`" in message
