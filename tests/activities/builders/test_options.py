"""Each KubeRay operator variable, from the worker's environment to the objects it builds.

The settings turn the variables into `BuildOptions`; these tests build through that path
(`Settings.from_env(...).build_options()`), so a variable that is read but never
passed on fails here, not only a builder that ignores its option.
"""

from __future__ import annotations

from typing import Any

import pytest

from activities.builders import BuildOptions, build_head_pod, build_worker_pod
from activities.builders.cluster_services import build_head_service
from activities.builders.rayjob import build_rayjob_head_service, build_submitter_job
from activities.builders.redis_cleanup_job import build_redis_cleanup_job
from runtime.settings import Settings
from tests.activities.builders.fixtures import (
    HEAD_POD,
    WORKER_POD,
    cluster,
    env_of,
    head_container,
    instance_dict,
)
from tests.activities.rayjob.test_builders import cluster as job_cluster
from tests.activities.rayjob.test_builders import rayjob

PROBES = ("livenessProbe", "readinessProbe")


def _options(**environ: str) -> BuildOptions:
    return Settings.from_env(environ).build_options()


def _pods(options: BuildOptions) -> tuple[dict[str, Any], dict[str, Any]]:
    head = build_head_pod(cluster(), HEAD_POD, options)
    worker = build_worker_pod(cluster(), "small-group", WORKER_POD, options=options)
    return head, worker


def test_cluster_domain_is_in_every_address_to_the_head() -> None:
    _, worker = _pods(_options(CLUSTER_DOMAIN="corp.internal"))
    fqdn = "raycluster-sample-head-svc.default.svc.corp.internal"

    ray = worker["spec"]["containers"][0]
    assert env_of(ray)["FQ_RAY_IP"] == fqdn
    assert env_of(ray)["RAY_ADDRESS"] == f"{fqdn}:6379"
    assert f"--address={fqdn}:6379" in ray["args"][0]
    init = worker["spec"]["initContainers"][0]
    assert f"ray health-check --address {fqdn}:6379" in init["args"][0]
    assert "cluster.local" not in str(worker)


@pytest.mark.parametrize(
    ("value", "injected"),
    [pytest.param(None, True, id="unset"), pytest.param("false", False, id="false")],
)
def test_init_container_injection(value: str | None, injected: bool) -> None:
    environ = {} if value is None else {"ENABLE_INIT_CONTAINER_INJECTION": value}
    _, worker = _pods(_options(**environ))
    names = [c["name"] for c in worker["spec"].get("initContainers") or []]
    assert ("wait-gcs-ready" in names) is injected


@pytest.mark.parametrize(
    ("value", "injected"),
    [pytest.param(None, True, id="unset"), pytest.param("false", False, id="false")],
)
def test_probes_injection(value: str | None, injected: bool) -> None:
    environ = {} if value is None else {"ENABLE_PROBES_INJECTION": value}
    for pod in _pods(_options(**environ)):
        ray = pod["spec"]["containers"][0]
        assert all((probe in ray) is injected for probe in PROBES), pod["metadata"]["name"]


def test_probes_injection_off_keeps_the_users_probes() -> None:
    data = instance_dict()
    probe = {"exec": {"command": ["true"]}, "periodSeconds": 7}
    head_container(data)["readinessProbe"] = probe
    head = build_head_pod(cluster(data), HEAD_POD, _options(ENABLE_PROBES_INJECTION="false"))
    ray = head["spec"]["containers"][0]
    assert ray["readinessProbe"] == probe
    assert "livenessProbe" not in ray


def _redis_cluster() -> Any:
    data = instance_dict()
    data["spec"]["gcsFaultToleranceOptions"] = {"redisAddress": "redis:6379"}
    return cluster(data)


@pytest.mark.parametrize(
    ("value", "shell"),
    [pytest.param(None, "-c", id="unset"), pytest.param("true", "-cl", id="true")],
)
def test_login_shell_everywhere_a_command_is_generated(value: str | None, shell: str) -> None:
    environ = {} if value is None else {"ENABLE_LOGIN_SHELL": value}
    options = _options(**environ)
    expected = ["/bin/bash", shell, "--"]
    head, worker = _pods(options)
    assert head["spec"]["containers"][0]["command"] == expected
    assert worker["spec"]["containers"][0]["command"] == expected
    assert worker["spec"]["initContainers"][0]["command"] == expected
    cleanup = build_redis_cleanup_job(_redis_cluster(), options)
    assert cleanup["spec"]["template"]["spec"]["containers"][0]["command"] == expected
    submitter = build_submitter_job(
        rayjob(), job_cluster(), "train-x1", "train-abcde-head-svc.ns.svc:8266", 1, options
    )
    command = submitter["spec"]["template"]["spec"]["containers"][0]["command"]
    # The submitter script stops at its first failing step (`-e`), login or not.
    assert command == ["/bin/bash", "-cel" if shell == "-cl" else "-ce", "--"]


@pytest.mark.parametrize(
    ("value", "cluster_ip"),
    [pytest.param(None, "None", id="unset"), pytest.param("true", None, id="true")],
)
def test_head_cluster_ip_service(value: str | None, cluster_ip: str | None) -> None:
    environ = {} if value is None else {"ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE": value}
    options = _options(**environ)
    for service in (
        build_head_service(cluster(), options),
        build_rayjob_head_service(rayjob(), job_cluster(), options),
    ):
        assert service["spec"].get("clusterIP") == cluster_ip, service["metadata"]["name"]
        assert ("publishNotReadyAddresses" in service["spec"]) is (cluster_ip == "None")
