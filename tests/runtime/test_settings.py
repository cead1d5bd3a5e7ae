"""Settings reads the documented environment variables and nothing else."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pydantic import ValidationError

from crds.feature_gates import Gate
from runtime.settings import Settings, describe_invalid


def test_defaults_without_environment() -> None:
    settings = Settings.from_env({})

    assert settings.temporal_address == "127.0.0.1:7233"
    assert settings.temporal_namespace == "default"
    assert settings.task_queue == "kuberay"
    assert settings.graceful_shutdown_timeout == timedelta(seconds=30)
    assert settings.max_cached_workflows >= 1000


def test_every_variable_is_read() -> None:
    settings = Settings.from_env(
        {
            "TEMPORAL_ADDRESS": "temporal.example:7233",
            "TEMPORAL_NAMESPACE": "ray",
            "KUBERAY_TEMPORAL_TASK_QUEUE": "kuberay-canary",
            "KUBERAY_TEMPORAL_MAX_CACHED_WORKFLOWS": "250",
            "KUBERAY_TEMPORAL_GRACEFUL_SHUTDOWN_TIMEOUT": "12.5",
        }
    )

    assert settings == Settings(
        temporal_address="temporal.example:7233",
        temporal_namespace="ray",
        task_queue="kuberay-canary",
        max_cached_workflows=250,
        graceful_shutdown_timeout=timedelta(seconds=12.5),
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("0", timedelta(), id="zero"),
        pytest.param("45", timedelta(seconds=45), id="seconds"),
        pytest.param("PT2M", timedelta(minutes=2), id="iso8601"),
    ],
)
def test_graceful_shutdown_timeout_formats(text: str, expected: timedelta) -> None:
    environ = {"KUBERAY_TEMPORAL_GRACEFUL_SHUTDOWN_TIMEOUT": text}

    assert Settings.from_env(environ).graceful_shutdown_timeout == expected


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        pytest.param("KUBERAY_TEMPORAL_MAX_CACHED_WORKFLOWS", "many", id="not-a-number"),
        pytest.param("KUBERAY_TEMPORAL_MAX_CACHED_WORKFLOWS", "-1", id="negative-cache"),
        pytest.param("KUBERAY_TEMPORAL_GRACEFUL_SHUTDOWN_TIMEOUT", "-5", id="negative-timeout"),
        pytest.param("KUBERAY_TEMPORAL_TASK_QUEUE", "", id="empty-queue"),
    ],
)
def test_invalid_value_names_the_variable(variable: str, value: str) -> None:
    with pytest.raises(ValidationError, match=variable):
        Settings.from_env({variable: value})


def test_variables_spelled_like_fields_are_ignored() -> None:
    settings = Settings.from_env({"task_queue": "other", "temporal_address": "x:1"})

    assert settings == Settings()


def test_settings_are_frozen() -> None:
    settings = Settings()

    with pytest.raises(ValidationError):
        settings.task_queue = "other"  # type: ignore[misc]


def test_invalid_settings_are_described_in_one_line() -> None:
    environ = {"KUBERAY_TEMPORAL_TASK_QUEUE": "", "KUBERAY_TEMPORAL_MAX_CACHED_WORKFLOWS": "-1"}

    with pytest.raises(ValidationError) as raised:
        Settings.from_env(environ)

    assert describe_invalid(raised.value) == (
        "KUBERAY_TEMPORAL_TASK_QUEUE='': String should have at least 1 character; "
        "KUBERAY_TEMPORAL_MAX_CACHED_WORKFLOWS='-1': Input should be greater than or equal to 0"
    )


def test_ignored_namespaces_are_a_set_of_trimmed_names() -> None:
    settings = Settings.from_env({"KUBERAY_TEMPORAL_IGNORE_NAMESPACES": " kuberay , other,,"})
    assert settings.ignored_namespaces == frozenset({"kuberay", "other"})
    assert Settings.from_env({}).ignored_namespaces == frozenset()


def test_feature_gates_are_read_in_kuberays_flag_syntax_over_its_defaults() -> None:
    settings = Settings.from_env({"KUBERAY_TEMPORAL_FEATURE_GATES": "RayCronJob=true"})

    assert Gate.RAY_CRON_JOB in settings.feature_gates
    assert Gate.RAY_CRON_JOB not in Settings.from_env({}).feature_gates
    assert settings.build_options().feature_gates == settings.feature_gates
    with pytest.raises(ValidationError) as raised:
        Settings.from_env({"KUBERAY_TEMPORAL_FEATURE_GATES": "RayCronJobs=true"})
    assert describe_invalid(raised.value) == (
        "KUBERAY_TEMPORAL_FEATURE_GATES='RayCronJobs=true': unrecognized feature gate: RayCronJobs"
    )
