"""docker-compose.yml, checked statically: no Docker engine runs where these tests run.

What can be checked without running it: the services and their pinned images, that every
port is published on localhost only, the health checks and start order, that the worker and
the bridge get exactly variables `Settings` reads (and valid values for them), and that
the files it mounts exist.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from tests.reference import REPO_ROOT
from runtime import telemetry as tracing
from runtime.settings import Settings

COMPOSE = yaml.safe_load((REPO_ROOT / "docker-compose.yml").read_text())
SERVICES: dict[str, Any] = COMPOSE["services"]
VARIABLES = {str(f.validation_alias) for f in Settings.model_fields.values()}
VARIABLES |= tracing.VARIABLES

EXPECTED_IMAGES = {
    "postgresql": "postgres",
    "temporal": "temporalio/auto-setup",
    "temporal-ui": "temporalio/ui",
    "k3s": "rancher/k3s",
    "crds": "rancher/k3s",
    "worker": "kuberay-temporal",
    "bridge": "kuberay-temporal",
    "otel-collector": "otel/opentelemetry-collector-contrib",
    "jaeger": "jaegertracing/all-in-one",
}


def test_the_stack_has_every_service_with_a_pinned_image() -> None:
    assert set(SERVICES) == set(EXPECTED_IMAGES)
    for name, repository in EXPECTED_IMAGES.items():
        image = SERVICES[name]["image"]
        repo, _, tag = image.partition(":")
        assert repo == repository, name
        assert re.fullmatch(r"v?\d+(\.\d+)+(-k3s\d+)?", tag), f"{name}: pin {image} by version"


def test_worker_and_bridge_are_built_from_the_dockerfile() -> None:
    for name in ("worker", "bridge"):
        assert SERVICES[name]["build"] == "."
        assert SERVICES[name]["command"] == [name]


def _published(service: dict[str, Any]) -> list[tuple[str, int, int]]:
    ports = []
    for spec in service.get("ports") or []:
        host, host_port, container_port = str(spec).split(":")
        ports.append((host, int(host_port), int(container_port)))
    return ports


def test_ports_are_on_localhost_and_do_not_collide() -> None:
    published = {name: _published(service) for name, service in SERVICES.items()}
    host_ports = [port for ports in published.values() for _, port, _ in ports]
    assert len(host_ports) == len(set(host_ports))
    assert all(host == "127.0.0.1" for ports in published.values() for host, _, _ in ports)
    assert (7233, 7233) in {(h, c) for _, h, c in published["temporal"]}
    assert (8233, 8080) in {(h, c) for _, h, c in published["temporal-ui"]}
    assert (6443, 6443) in {(h, c) for _, h, c in published["k3s"]}
    assert (16686, 16686) in {(h, c) for _, h, c in published["jaeger"]}
    assert {c for _, _, c in published["otel-collector"]} == {4317, 4318}


@pytest.mark.parametrize("name", ["postgresql", "temporal", "k3s", "worker", "bridge"])
def test_services_others_wait_for_have_health_checks(name: str) -> None:
    check = SERVICES[name]["healthcheck"]
    assert check["test"][0] in ("CMD", "CMD-SHELL")
    assert check["retries"] >= 3


def test_start_order_waits_for_health_and_for_the_crds() -> None:
    def waits_for(name: str) -> dict[str, str]:
        return {k: v["condition"] for k, v in SERVICES[name]["depends_on"].items()}

    assert waits_for("temporal") == {"postgresql": "service_healthy"}
    assert waits_for("crds") == {"k3s": "service_healthy"}
    for name in ("worker", "bridge"):
        assert waits_for(name) == {
            "temporal": "service_healthy",
            "crds": "service_completed_successfully",
        }


@pytest.mark.parametrize("name", ["worker", "bridge"])
def test_worker_and_bridge_get_only_variables_they_read(name: str) -> None:
    env = {k: str(v) for k, v in SERVICES[name]["environment"].items()}
    assert set(env) <= VARIABLES, set(env) - VARIABLES
    settings = Settings.from_env(env)  # every value valid
    assert settings.temporal_address == "temporal:7233"
    assert settings.kubeconfig == "/kube/config"
    assert settings.namespaces == [None]
    # The health check asks the port the process serves on.
    assert f":{settings.health_port}/readyz" in " ".join(SERVICES[name]["healthcheck"]["test"])
    assert settings.health_port in {c for _, _, c in _published(SERVICES[name])}
    assert settings.metrics_port in {c for _, _, c in _published(SERVICES[name])}
    # Docker forwards a published port to the container's address, not to its loopback.
    assert settings.health_address == settings.metrics_address == "0.0.0.0"
    # Traces go to the collector's OTLP/HTTP receiver (the only OTLP protocol built in).
    assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://otel-collector:4318"


def test_the_kubeconfig_reaches_k3s_by_service_name_and_the_crds_are_ours() -> None:
    crds = SERVICES["crds"]
    script = " ".join(crds["command"])
    assert "--server=https://k3s:6443" in script
    assert "apply --server-side -f /crds/" in script
    assert "./deploy/crds:/crds:ro" in crds["volumes"]
    assert "--tls-san=k3s" in SERVICES["k3s"]["command"]
    for name in ("worker", "bridge"):
        assert "kube:/kube:ro" in SERVICES[name]["volumes"]


def test_temporal_uses_postgresql_and_traces_to_the_collector() -> None:
    env = SERVICES["temporal"]["environment"]
    assert env["DB"] == "postgres12" and env["POSTGRES_SEEDS"] == "postgresql"
    assert env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] == "http://otel-collector:4317"
    assert SERVICES["temporal-ui"]["environment"]["TEMPORAL_ADDRESS"] == "temporal:7233"
    assert SERVICES["jaeger"]["environment"]["COLLECTOR_OTLP_ENABLED"] == "true"


def test_the_collector_config_exists_and_sends_traces_to_jaeger() -> None:
    (mount,) = SERVICES["otel-collector"]["volumes"]
    source, target, _ = mount.split(":")
    assert SERVICES["otel-collector"]["command"] == [f"--config={target}"]
    config = yaml.safe_load((REPO_ROOT / source).read_text())
    pipeline = config["service"]["pipelines"]["traces"]
    assert pipeline["receivers"] == ["otlp"]
    (exporter,) = pipeline["exporters"]
    assert config["exporters"][exporter]["endpoint"] == "jaeger:4317"
    assert set(config["receivers"]["otlp"]["protocols"]) == {"grpc", "http"}


def test_every_bind_mount_source_exists() -> None:
    for name, service in SERVICES.items():
        for volume in service.get("volumes") or []:
            source = volume.split(":")[0]
            if source.startswith("./"):
                assert (REPO_ROOT / source).exists(), f"{name}: {source}"


def _mounts(service: dict[str, Any]) -> dict[str, str]:
    """Container path -> source of a service's volumes."""
    return {v.split(":")[1]: v.split(":")[0] for v in service.get("volumes") or []}


def test_the_admin_kubeconfig_is_readable_only_by_its_owner() -> None:
    k3s = SERVICES["k3s"]
    mode = int(k3s["environment"]["K3S_KUBECONFIG_MODE"], 8)
    assert mode & 0o077 == 0, oct(mode)
    # Written into a named volume, not onto the host where another account could read it.
    output = _mounts(k3s)["/output"]
    assert not output.startswith(("./", "/")) and output in COMPOSE["volumes"]
    assert _mounts(SERVICES["crds"])["/output"] == output


def test_the_worker_and_the_bridge_own_their_copy_of_the_kubeconfig() -> None:
    """The crds job runs as root to read k3s's copy and hands one to the image's user."""
    dockerfile = (REPO_ROOT / "Dockerfile").read_text()
    (user,) = re.findall(r"^USER (\S+)$", dockerfile, re.MULTILINE)
    crds = SERVICES["crds"]
    assert str(crds.get("user", "0")).split(":")[0] == "0"
    script = " ".join(crds["command"])
    assert f"chown {user} /kube/config" in script
    (mode,) = re.findall(r"chmod (\d+) /kube/config", script)
    assert int(mode, 8) & 0o077 == 0, mode
    # Only after kubectl has rewritten the server address: the chmod is the file's last change.
    assert script.index("set-cluster") < script.index("chmod")
    for name in ("worker", "bridge"):
        assert "user" not in SERVICES[name]  # the image's USER, the one the copy belongs to
