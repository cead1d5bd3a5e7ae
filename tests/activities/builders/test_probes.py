"""Default probes, after KubeRay's TestInitLivenessAndReadinessProbe."""

from __future__ import annotations

from typing import Any

import pytest

from activities.builders.probes import add_default_probes, supports_unified_health_check
from crds.enums import RayNodeType

AGENT = "wget --tries 1 -T 2 -q -O- http://localhost:{port}/api/local_raylet_healthz | grep success"
GCS = "wget --tries 1 -T 10 -q -O- http://localhost:{port}/api/gcs_healthz | grep success"
PROXY = "wget --tries 1 -T 10 -q -O- http://localhost:{port}/-/healthz | grep success"


def _probes(
    node_type: RayNodeType,
    params: dict[str, str] | None = None,
    *,
    version: str | None = None,
    serve: bool = False,
    container: dict[str, Any] | None = None,
) -> dict[str, Any]:
    target = container if container is not None else {"name": "ray"}
    add_default_probes(target, node_type, params or {}, ray_version=version, serve_worker=serve)
    return target


def _command(probe: dict[str, Any]) -> str:
    return str(probe["exec"]["command"][2])


def test_user_probes_are_kept() -> None:
    user = {"httpGet": {"path": "/api/local_raylet_healthz", "port": 52365}}
    container = _probes(
        RayNodeType.HEAD, container={"livenessProbe": dict(user), "readinessProbe": dict(user)}
    )
    assert container["livenessProbe"] == user
    assert container["readinessProbe"] == user


@pytest.mark.parametrize(
    ("node_type", "params", "serve", "liveness", "readiness", "timeout", "ready_failures"),
    [
        pytest.param(
            RayNodeType.WORKER,
            {},
            True,
            AGENT.format(port=52365),
            AGENT.format(port=52365) + " && " + PROXY.format(port=8000),
            2,
            1,
            id="rayservice-worker",
        ),
        pytest.param(
            RayNodeType.HEAD,
            {},
            True,
            AGENT.format(port=52365) + " && " + GCS.format(port=8265),
            AGENT.format(port=52365) + " && " + GCS.format(port=8265),
            5,
            10,
            id="rayservice-head-has-no-proxy-check",
        ),
        pytest.param(
            RayNodeType.HEAD,
            {"dashboard-agent-listen-port": "8266", "dashboard-port": "8365"},
            False,
            AGENT.format(port=8266) + " && " + GCS.format(port=8365),
            AGENT.format(port=8266) + " && " + GCS.format(port=8365),
            5,
            10,
            id="head-custom-ports",
        ),
        pytest.param(
            RayNodeType.WORKER,
            {"dashboard-agent-listen-port": "9000"},
            False,
            AGENT.format(port=9000),
            AGENT.format(port=9000),
            2,
            10,
            id="worker-custom-port",
        ),
        pytest.param(
            RayNodeType.HEAD,
            {"dashboard-agent-listen-port": "invalid-port", "dashboard-port": "not-a-number"},
            False,
            AGENT.format(port=52365) + " && " + GCS.format(port=8265),
            AGENT.format(port=52365) + " && " + GCS.format(port=8265),
            5,
            10,
            id="invalid-ports-fall-back",
        ),
    ],
)
def test_exec_probes(
    node_type: RayNodeType,
    params: dict[str, str],
    serve: bool,
    liveness: str,
    readiness: str,
    timeout: int,
    ready_failures: int,
) -> None:
    container = _probes(node_type, params, serve=serve)
    live, ready = container["livenessProbe"], container["readinessProbe"]
    assert _command(live) == liveness
    assert _command(ready) == readiness
    assert live["exec"]["command"][:2] == ["bash", "-c"]
    assert (live["initialDelaySeconds"], live["periodSeconds"], live["failureThreshold"]) == (
        30,
        5,
        120,
    )
    assert (ready["initialDelaySeconds"], ready["periodSeconds"]) == (10, 5)
    assert live["timeoutSeconds"] == ready["timeoutSeconds"] == timeout
    assert ready["failureThreshold"] == ready_failures
    assert live["successThreshold"] == ready["successThreshold"] == 1


def test_serve_port_from_container() -> None:
    container = _probes(
        RayNodeType.WORKER,
        serve=True,
        container={"ports": [{"name": "serve", "containerPort": 9000}]},
    )
    assert PROXY.format(port=9000) in _command(container["readinessProbe"])


@pytest.mark.parametrize("node_type", [RayNodeType.HEAD, RayNodeType.WORKER])
def test_unified_http_probe(node_type: RayNodeType) -> None:
    container = _probes(node_type, version="2.53.0")
    for probe in (container["livenessProbe"], container["readinessProbe"]):
        assert probe["httpGet"] == {"path": "/api/healthz", "port": 52365}
        assert "exec" not in probe


def test_unified_rayservice_worker_readiness_still_execs() -> None:
    container = _probes(RayNodeType.WORKER, version="2.53.0", serve=True)
    assert "httpGet" in container["livenessProbe"]
    assert "httpGet" not in container["readinessProbe"]
    assert "-/healthz" in _command(container["readinessProbe"])


@pytest.mark.parametrize(
    ("version", "unified"),
    [
        pytest.param("2.53.0", True, id="2.53.0"),
        pytest.param("2.53", True, id="two-parts"),
        pytest.param("2.60.1", True, id="newer"),
        pytest.param("3.0.0", True, id="major"),
        pytest.param("2.52.0", False, id="older"),
        pytest.param("nightly", False, id="unparseable"),
        pytest.param(None, False, id="unset"),
        # As KubeRay's version.ParseGeneric reads them.
        pytest.param("02.53.0", False, id="leading-zero"),
        pytest.param("2.53.0\n", False, id="line-break"),
        pytest.param("9" * 5000 + ".53", False, id="past-the-int-digit-limit"),
        pytest.param("3." + "1" * 40_000 + "\n", False, id="long-digits-and-a-line-break"),
    ],
)
def test_version_switch(version: str | None, unified: bool) -> None:
    assert supports_unified_health_check(version) is unified
