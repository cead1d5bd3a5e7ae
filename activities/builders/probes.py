"""Default liveness and readiness probes of the Ray container.

KubeRay's health model depends on these probes (a crashed raylet is otherwise invisible to
Kubernetes), and RayService traffic routing depends on the worker readiness probe that checks
the Serve proxy. They are injected only when the user wrote none (`pod.go`
initLivenessAndReadinessProbe).
"""

from __future__ import annotations

import copy

from crds import constants as k
from crds.common import JSONObject
from crds.enums import RayNodeType
from crds.validation import versions

# Ray 2.53 serves one health endpoint on the dashboard agent; older Ray needs wget checks.
UNIFIED_HEALTH_CHECK_SINCE = (2, 53, 0)
NODE_HEALTH_PATH = "/api/healthz"
RAYLET_HEALTH_PATH = "api/local_raylet_healthz"
GCS_HEALTH_PATH = "api/gcs_healthz"
SERVE_PROXY_HEALTH_PATH = "-/healthz"

LIVENESS_INITIAL_DELAY_SECONDS = 30
LIVENESS_FAILURE_THRESHOLD = 120
READINESS_INITIAL_DELAY_SECONDS = 10
READINESS_FAILURE_THRESHOLD = 10
SERVE_READINESS_FAILURE_THRESHOLD = 1
PERIOD_SECONDS = 5
SUCCESS_THRESHOLD = 1
WORKER_TIMEOUT_SECONDS = 2
# The head checks two endpoints, so it gets more time.
HEAD_TIMEOUT_SECONDS = 5


def supports_unified_health_check(ray_version: str | None) -> bool:
    """Whether `spec.rayVersion` is at least 2.53.0 (an unparseable version is not).

    Read with the parser validation uses, as KubeRay reads it with the one its validation uses.
    """
    parsed = versions.parse_generic(ray_version or "")
    return not isinstance(parsed, str) and not versions.less_than(
        parsed, UNIFIED_HEALTH_CHECK_SINCE
    )


def wget_health_command(timeout_seconds: int, port: int, path: str) -> str:
    """One wget health check, passing when the endpoint answers "success"."""
    return (
        f"wget --tries 1 -T {timeout_seconds} -q -O- http://localhost:{port}/{path} | grep success"
    )


def _port(params: dict[str, str], key: str, default: int) -> int:
    try:
        value = int(params.get(key, ""), 10)
    except ValueError:
        return default
    return value if -(2**31) <= value < 2**31 else default


def _container_port(container: JSONObject, name: str, default: int) -> int:
    for port in container.get("ports") or []:
        if port.get("name") == name:
            return int(port.get("containerPort", default))
    return default


def add_default_probes(
    container: JSONObject,
    node_type: RayNodeType,
    params: dict[str, str],
    *,
    ray_version: str | None,
    serve_worker: bool,
) -> None:
    """Set the liveness and readiness probes the user left out, in place.

    Args:
        container: the Ray container (a copy owned by the caller).
        node_type: head or worker.
        params: the final rayStartParams (ports of the agent and dashboard).
        ray_version: `spec.rayVersion`, which picks HTTP or exec probes.
        serve_worker: whether this is a worker of a RayService cluster, whose readiness also
            requires a healthy Serve proxy.
    """
    agent_port = _port(params, "dashboard-agent-listen-port", k.PORT_DASHBOARD_AGENT)
    checks = [wget_health_command(WORKER_TIMEOUT_SECONDS, agent_port, RAYLET_HEALTH_PATH)]
    if node_type is RayNodeType.HEAD:
        dashboard_port = _port(params, "dashboard-port", k.PORT_DASHBOARD)
        # KubeRay passes the readiness failure threshold as this check's timeout.
        checks.append(
            wget_health_command(READINESS_FAILURE_THRESHOLD, dashboard_port, GCS_HEALTH_PATH)
        )
    if supports_unified_health_check(ray_version):
        handler: JSONObject = {"httpGet": {"path": NODE_HEALTH_PATH, "port": agent_port}}
    else:
        handler = {"exec": {"command": ["bash", "-c", " && ".join(checks)]}}
    timeout = HEAD_TIMEOUT_SECONDS if node_type is RayNodeType.HEAD else WORKER_TIMEOUT_SECONDS
    if container.get("livenessProbe") is None:
        container["livenessProbe"] = _probe(
            LIVENESS_INITIAL_DELAY_SECONDS, timeout, LIVENESS_FAILURE_THRESHOLD, handler
        )
    if container.get("readinessProbe") is None:
        readiness = _probe(
            READINESS_INITIAL_DELAY_SECONDS, timeout, READINESS_FAILURE_THRESHOLD, handler
        )
        if serve_worker and node_type is RayNodeType.WORKER:
            serve_port = _container_port(container, k.PORT_NAME_SERVING, k.PORT_SERVING)
            # KubeRay passes the readiness initial delay as this check's timeout.
            proxy = wget_health_command(
                READINESS_INITIAL_DELAY_SECONDS, serve_port, SERVE_PROXY_HEALTH_PATH
            )
            readiness.pop("httpGet", None)
            readiness["exec"] = {"command": ["bash", "-c", " && ".join([*checks, proxy])]}
            readiness["failureThreshold"] = SERVE_READINESS_FAILURE_THRESHOLD
        container["readinessProbe"] = readiness


def _probe(initial_delay: int, timeout: int, failures: int, handler: JSONObject) -> JSONObject:
    return {
        # Each probe gets its own handler, so editing one never changes the other.
        **copy.deepcopy(handler),
        "initialDelaySeconds": initial_delay,
        "timeoutSeconds": timeout,
        "periodSeconds": PERIOD_SECONDS,
        "successThreshold": SUCCESS_THRESHOLD,
        "failureThreshold": failures,
    }
