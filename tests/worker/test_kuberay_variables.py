"""KubeRay's own operator variables: read under KubeRay's names, with KubeRay's defaults.

A KubeRay operator's Deployment env should carry over as it is; a value the worker cannot
read must stop it at start with the variable's name, not be taken as the default.
"""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from activities.builders import BuildOptions
from activities.rayjob.contract import JobOperatorOptions
from runtime.settings import Settings, describe_invalid

KUBERAY_VARIABLES = {
    "CLUSTER_DOMAIN",
    "ENABLE_INIT_CONTAINER_INJECTION",
    "ENABLE_PROBES_INJECTION",
    "ENABLE_LOGIN_SHELL",
    "ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE",
    "ENABLE_GCS_FT_REDIS_CLEANUP",
    "ENABLE_ZERO_DOWNTIME",
    "ENABLE_DETERMINISTIC_HEAD_POD_NAME",
    "DELETE_RAYJOB_CR_AFTER_JOB_FINISHES",
    "RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS",
    "RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS",
}


def test_each_kuberay_variable_is_a_documented_setting() -> None:
    fields = {str(f.validation_alias): f for f in Settings.model_fields.values()}
    assert set(fields) >= KUBERAY_VARIABLES
    for name in KUBERAY_VARIABLES:
        assert (fields[name].description or "").startswith("KubeRay's variable"), name


def test_unset_means_kuberays_defaults() -> None:
    settings = Settings.from_env({})

    assert settings.build_options() == BuildOptions()
    assert settings.build_options() == BuildOptions(
        cluster_domain="cluster.local",
        init_container_injection=True,
        probes_injection=True,
        login_shell=False,
        head_cluster_ip_service=False,
        gcs_ft_redis_cleanup=True,
        zero_downtime=True,
        deterministic_head_pod_name=False,
    )
    assert settings.job_options() == JobOperatorOptions(
        delete_rayjob_cr_after_job_finishes=False,
        transition_grace_period_seconds=300,
        status_check_timeout_seconds=300,
    )


def test_every_kuberay_variable_reaches_the_activities() -> None:
    settings = Settings.from_env(
        {
            "CLUSTER_DOMAIN": "corp.internal",
            "ENABLE_INIT_CONTAINER_INJECTION": "false",
            "ENABLE_PROBES_INJECTION": "False",
            "ENABLE_LOGIN_SHELL": "true",
            "ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE": "TRUE",
            "ENABLE_GCS_FT_REDIS_CLEANUP": "false",
            "ENABLE_ZERO_DOWNTIME": "0",
            "ENABLE_DETERMINISTIC_HEAD_POD_NAME": "1",
            "DELETE_RAYJOB_CR_AFTER_JOB_FINISHES": "true",
            "RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS": "45",
            "RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS": "60",
        }
    )

    assert settings.build_options() == BuildOptions(
        cluster_domain="corp.internal",
        init_container_injection=False,
        probes_injection=False,
        login_shell=True,
        head_cluster_ip_service=True,
        gcs_ft_redis_cleanup=False,
        zero_downtime=False,
        deterministic_head_pod_name=True,
    )
    assert settings.job_options() == JobOperatorOptions(
        delete_rayjob_cr_after_job_finishes=True,
        transition_grace_period_seconds=45,
        status_check_timeout_seconds=60,
    )


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        pytest.param("ENABLE_PROBES_INJECTION", "maybe", id="bool-word"),
        pytest.param("DELETE_RAYJOB_CR_AFTER_JOB_FINISHES", "yes please", id="bool-phrase"),
        pytest.param("RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS", "5m", id="seconds-with-unit"),
        pytest.param("RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS", "0", id="seconds-zero"),
        pytest.param(
            "RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS", "-1", id="seconds-negative"
        ),
        pytest.param("CLUSTER_DOMAIN", "", id="empty-domain"),
    ],
)
def test_a_bad_value_names_the_variable(variable: str, value: str) -> None:
    with pytest.raises(ValidationError) as caught:
        Settings.from_env({variable: value})

    assert describe_invalid(caught.value).startswith(f"{variable}={value!r}: ")


def test_field_names_are_not_read_from_the_environment() -> None:
    settings = Settings.from_env({"login_shell": "true", "cluster_domain": "x.y"})

    assert settings.login_shell is False
    assert settings.cluster_domain == "cluster.local"
