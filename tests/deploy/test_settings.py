"""Settings: the README table is generated from the model; TLS, mTLS and the API key."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from pydantic import ValidationError
from temporalio.service import TLSConfig

from kuberay_temporal.cli import build_parser
from runtime.flags import listener_overrides
from tests.deploy.tables import END, START, settings_table
from tests.reference import REPO_ROOT
from runtime.temporal_client import tls_config
from worker.command import settings_from
from runtime.settings import Settings, describe_invalid


def test_the_readme_settings_table_is_the_generated_one() -> None:
    readme = (REPO_ROOT / "README.md").read_text()
    committed = readme.split(START, 1)[1].split(END, 1)[0].strip()
    expected = settings_table()
    assert committed == expected, f"README settings table drifted; replace it with:\n{expected}"


def test_every_setting_has_a_variable_and_a_description() -> None:
    for name, field in Settings.model_fields.items():
        assert isinstance(field.validation_alias, str), name
        assert field.validation_alias.isupper(), name
        assert field.description, name


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        pytest.param({}, False, id="plaintext-by-default"),
        pytest.param({"TEMPORAL_TLS": "true"}, True, id="tls-with-system-roots"),
        pytest.param({"TEMPORAL_API_KEY": "k"}, True, id="api-key-implies-tls"),
        pytest.param({"TEMPORAL_API_KEY": "k", "TEMPORAL_TLS": "false"}, False, id="forced-off"),
    ],
)
def test_tls_switch(env: dict[str, str], expected: bool) -> None:
    assert tls_config(Settings.from_env(env)) is expected


def test_mtls_reads_the_certificate_files(tmp_path: Path) -> None:
    for name in ("tls.crt", "tls.key", "ca.crt"):
        (tmp_path / name).write_bytes(f"PEM {name}".encode())
    settings = Settings.from_env(
        {
            "TEMPORAL_TLS_CLIENT_CERT_PATH": str(tmp_path / "tls.crt"),
            "TEMPORAL_TLS_CLIENT_KEY_PATH": str(tmp_path / "tls.key"),
            "TEMPORAL_TLS_SERVER_CA_CERT_PATH": str(tmp_path / "ca.crt"),
            "TEMPORAL_TLS_SERVER_NAME": "temporal.example",
        }
    )
    config = tls_config(settings)
    assert isinstance(config, TLSConfig)
    assert config.client_cert == b"PEM tls.crt"
    assert config.client_private_key == b"PEM tls.key"
    assert config.server_root_ca_cert == b"PEM ca.crt"
    assert config.domain == "temporal.example"


def test_a_certificate_without_its_key_is_refused() -> None:
    with pytest.raises(ValidationError) as caught:
        Settings.from_env({"TEMPORAL_TLS_CLIENT_CERT_PATH": "/c.pem"})
    assert "TEMPORAL_TLS_CLIENT_KEY_PATH" in describe_invalid(caught.value)


def test_the_api_key_never_shows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEMPORAL_API_KEY", "sekrit-123")
    monkeypatch.setenv("TEMPORAL_TLS_CLIENT_CERT_PATH", "/only-the-cert.pem")
    with pytest.raises(ValidationError) as caught:
        settings_from(argparse.Namespace())
    assert "sekrit-123" not in describe_invalid(caught.value)
    monkeypatch.delenv("TEMPORAL_TLS_CLIENT_CERT_PATH")
    settings = settings_from(argparse.Namespace(health_port=9000))
    assert "sekrit-123" not in repr(settings) + str(settings)
    assert settings.temporal_api_key is not None
    assert settings.temporal_api_key.get_secret_value() == "sekrit-123"
    assert settings.health_port == 9000


def test_a_health_port_out_of_range_names_the_variable() -> None:
    with pytest.raises(ValidationError) as caught:
        Settings.from_env({"KUBERAY_TEMPORAL_HEALTH_PORT": "70000"})
    assert "KUBERAY_TEMPORAL_HEALTH_PORT='70000'" in describe_invalid(caught.value)


def test_the_health_and_metrics_ports_listen_on_loopback_unless_told() -> None:
    settings = Settings.from_env({})
    assert (settings.health_address, settings.metrics_address) == ("127.0.0.1", "127.0.0.1")


@pytest.mark.parametrize("address", ["localhost", "10.0.0.7:9090", "", "pod-ip"])
def test_a_listener_address_must_be_an_ip_address(address: str) -> None:
    with pytest.raises(ValidationError) as caught:
        Settings.from_env({"KUBERAY_TEMPORAL_METRICS_ADDRESS": address})
    assert describe_invalid(caught.value) == (
        f"KUBERAY_TEMPORAL_METRICS_ADDRESS={address!r}: "
        "not an IP address such as 127.0.0.1 or 0.0.0.0"
    )


@pytest.mark.parametrize("command", ["worker", "bridge"])
def test_the_listener_flags_override_their_variables(command: str) -> None:
    flags = ["--health-address", "0.0.0.0", "--metrics-address", "::", "--metrics-port", "9"]
    args = build_parser().parse_args([command, *flags])
    given = Settings.from_env({"KUBERAY_TEMPORAL_METRICS_ADDRESS": "10.0.0.7"}).model_dump()
    settings = Settings.model_validate(given | listener_overrides(args))
    assert (settings.health_address, settings.metrics_address) == ("0.0.0.0", "::")
    assert settings.metrics_port == 9 and settings.health_port is None
