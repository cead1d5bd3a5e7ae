"""Inline secrets are redacted from the specs workflows keep, and nothing they decide changes."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from crds.loading import parse_ray_object
from crds.raycluster import RayCluster, RayClusterSpec
from crds.rayjob import RayJob, RayJobSpec
from crds.rayservice import RayService
from crds.redaction import (
    REDACTED,
    is_secret_env_name,
    redacted_cluster_spec,
    redacted_job_spec,
    redacted_url_passwords,
    strings_in,
    without_values,
)
from crds.validation import validate
from crds.violations import InvalidObjectError
from tests.reference import sample_files

SECRET = "s3cret-value"


def container(name: str, env: list[dict[str, Any]]) -> dict[str, Any]:
    return {"name": name, "image": "rayproject/ray", "env": env}


def template(*containers: dict[str, Any], init: list[dict[str, Any]] | None = None) -> Any:
    spec: dict[str, Any] = {"containers": list(containers)}
    if init:
        spec["initContainers"] = init
    return {"spec": spec}


def cluster_spec(**extra: Any) -> dict[str, Any]:
    head = {"rayStartParams": {}, "template": template(container("ray-head", []))}
    worker = {
        "groupName": "small",
        "rayStartParams": {},
        "template": template(container("ray-worker", [])),
    }
    return {"headGroupSpec": head, "workerGroupSpecs": [worker], **extra}


def env_var(name: str, value: str = SECRET) -> dict[str, Any]:
    return {"name": name, "value": value}


# Each case puts SECRET into one field a user could write it into.
def options_password(spec: dict[str, Any]) -> None:
    spec["gcsFaultToleranceOptions"] = {
        "redisAddress": "redis:6379",
        "redisPassword": {"value": SECRET},
    }


def options_username(spec: dict[str, Any]) -> None:
    spec["gcsFaultToleranceOptions"] = {
        "redisAddress": "redis:6379",
        "redisUsername": {"value": SECRET},
    }


def address_userinfo(spec: dict[str, Any]) -> None:
    spec["gcsFaultToleranceOptions"] = {"redisAddress": f"redis://default:{SECRET}@redis:6379"}


def head_start_param(spec: dict[str, Any]) -> None:
    spec["headGroupSpec"]["rayStartParams"]["redis-password"] = SECRET


def worker_start_param(spec: dict[str, Any]) -> None:
    spec["workerGroupSpecs"][0]["rayStartParams"]["redis-password"] = SECRET


def head_username_param(spec: dict[str, Any]) -> None:
    spec["headGroupSpec"]["rayStartParams"]["redis-username"] = SECRET


def head_env(spec: dict[str, Any]) -> None:
    spec["headGroupSpec"]["template"]["spec"]["containers"][0]["env"] = [env_var("REDIS_PASSWORD")]


def worker_env(spec: dict[str, Any]) -> None:
    worker = spec["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]
    worker["env"] = [env_var("RAY_REDIS_PASSWORD")]


def worker_token_env(spec: dict[str, Any]) -> None:
    worker = spec["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]
    worker["env"] = [env_var("RAY_AUTH_TOKEN")]


def sidecar_env(spec: dict[str, Any]) -> None:
    sidecar = container("sidecar", [env_var("OPENAI_API_KEY")])
    spec["headGroupSpec"]["template"]["spec"]["containers"].append(sidecar)


def init_container_env(spec: dict[str, Any]) -> None:
    init = [container("init", [env_var("DB_PASS")])]
    spec["workerGroupSpecs"][0]["template"]["spec"]["initContainers"] = init


def start_param_beside_options(spec: dict[str, Any]) -> None:
    # Invalid (KubeRay wants the password in the options block only): the violation the
    # workflow reports must be the same on the redacted spec.
    options_password(spec)
    head_start_param(spec)
    head_env(spec)


def url_in_other_env(spec: dict[str, Any]) -> None:
    url = f"postgresql://app:{SECRET}@db:5432/app"
    spec["headGroupSpec"]["template"]["spec"]["containers"][0]["env"] = [
        env_var("DATABASE_URL", url)
    ]


def autoscaler_env(spec: dict[str, Any]) -> None:
    spec["enableInTreeAutoscaling"] = True
    spec["autoscalerOptions"] = {"env": [env_var("AWS_SECRET_ACCESS_KEY")]}


def collector_env(spec: dict[str, Any]) -> None:
    env = [
        env_var("STORAGE_BACKEND", "AZUREBLOB"),
        env_var("AZURE_STORAGE_AUTH_MODE", "connection_string"),
        env_var("AZURE_STORAGE_CONNECTION_STRING", f"AccountKey={SECRET}"),
    ]
    spec["historyServerOptions"] = {"collectorOptions": {"image": "collector", "env": env}}


CLUSTER_CASES = [
    options_password,
    options_username,
    address_userinfo,
    head_start_param,
    worker_start_param,
    head_username_param,
    head_env,
    worker_env,
    worker_token_env,
    sidecar_env,
    init_container_env,
    url_in_other_env,
    autoscaler_env,
    collector_env,
    start_param_beside_options,
]


def with_secret(case: Any) -> dict[str, Any]:
    spec = cluster_spec()
    case(spec)
    return spec


@pytest.mark.parametrize("case", CLUSTER_CASES, ids=lambda case: case.__name__)
def test_a_cluster_spec_loses_each_kind_of_inline_secret(case: Any) -> None:
    spec = RayClusterSpec.model_validate(with_secret(case))
    redacted = redacted_cluster_spec(spec)
    assert SECRET not in redacted.model_dump_json()
    assert REDACTED in redacted.model_dump_json()
    # The CR's own model (which activities build pods from) keeps the value.
    assert SECRET in spec.model_dump_json()


@pytest.mark.parametrize("case", CLUSTER_CASES, ids=lambda case: case.__name__)
def test_job_and_service_specs_lose_the_secrets_of_their_cluster_spec(case: Any) -> None:
    job = RayJobSpec.model_validate(
        {"entrypoint": "python x.py", "rayClusterSpec": with_secret(case)}
    )
    assert SECRET not in redacted_job_spec(job).model_dump_json()
    service = RayService.model_validate(
        {"metadata": {"name": "svc"}, "spec": {"rayClusterConfig": with_secret(case)}}
    )
    cluster_config = redacted_cluster_spec(service.spec.ray_cluster_config)
    assert SECRET not in cluster_config.model_dump_json()


def test_a_job_spec_loses_the_secrets_of_its_submitter_template() -> None:
    submitter = template(
        container("ray-job-submitter", [env_var("HF_TOKEN"), env_var("PLAIN", "kept")]),
        init=[container("fetch", [env_var("GIT_PASSWORD")])],
    )
    job = RayJobSpec.model_validate(
        {"entrypoint": "python x.py", "submitterPodTemplate": submitter}
    )
    dumped = redacted_job_spec(job).model_dump_json()
    assert SECRET not in dumped and '"kept"' in dumped


def test_references_plain_values_and_empty_values_are_kept() -> None:
    spec = cluster_spec()
    spec["headGroupSpec"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "REDIS_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "r", "key": "p"}}},
        env_var("RAY_REDIS_PASSWORD", ""),
        env_var("TOKENIZERS_PARALLELISM", "false"),
        env_var("RAY_DASHBOARD_ADDRESS", "http://head:8265/api"),
    ]
    redacted = redacted_cluster_spec(RayClusterSpec.model_validate(spec))
    assert redacted == RayClusterSpec.model_validate(spec)


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("REDIS_PASSWORD", True),
        ("REDIS_USERNAME", True),
        ("RAY_AUTH_TOKEN", True),
        ("HUGGING_FACE_HUB_TOKEN", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("OPENAI_API_KEY", True),
        ("MYSQL_ROOT_PASSWD", True),
        ("DB_PASS", True),
        ("AZURE_STORAGE_CONNECTION_STRING", True),
        ("GOOGLE_APPLICATION_CREDENTIALS", True),
        ("redisPassword", True),
        ("TOKENIZERS_PARALLELISM", False),
        ("PWD", False),
        ("RAY_AUTH_MODE", False),
        ("AZURE_STORAGE_AUTH_MODE", False),
        ("KEYCLOAK_URL", False),
        ("BYPASS_CACHE", False),
        ("RAY_enable_autoscaler_v2", False),
    ],
)
def test_which_env_names_are_secrets(name: str, secret: bool) -> None:
    assert is_secret_env_name(name) is secret


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("redis://:pw@host:6379", f"redis://:{REDACTED}@host:6379"),
        ("rediss://user:p@ss@host", f"rediss://user:{REDACTED}@host"),
        (
            "a=http://u:x@h1/, b=http://v:y@h2/",
            f"a=http://u:{REDACTED}@h1/, b=http://v:{REDACTED}@h2/",
        ),
        ("redis://host:6379", "redis://host:6379"),
        ("http://host:8080/path@x", "http://host:8080/path@x"),
        ("redis://user@host", "redis://user@host"),
    ],
)
def test_url_passwords(text: str, expected: str) -> None:
    assert redacted_url_passwords(text) == expected


def test_a_malformed_secret_field_is_not_quoted_in_its_violation() -> None:
    spec = cluster_spec(gcsFaultToleranceOptions={"redisPassword": {"value": 86420}})
    spec["headGroupSpec"]["rayStartParams"]["redis-password"] = 97531
    spec["headGroupSpec"]["rayStartParams"]["num-cpus"] = 4
    doc = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "c"}}
    with pytest.raises(InvalidObjectError) as failure:
        parse_ray_object({**doc, "spec": spec})
    messages = {v.path.rsplit(".", 1)[-1]: v.message for v in failure.value.violations}
    assert set(messages) == {"value", "redis-password", "num-cpus"}
    assert "86420" not in str(failure.value) and "97531" not in str(failure.value)
    assert messages["value"].startswith("must be a string")
    # Other fields still say what they got.
    assert "4" in messages["num-cpus"]


def _ray_docs(path: Path) -> list[dict[str, Any]]:
    docs = [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]
    return [d for d in docs if d.get("kind") in ("RayCluster", "RayJob", "RayService")]


def _redacted(obj: Any) -> Any:
    if isinstance(obj, RayCluster):
        return obj.model_copy(update={"spec": redacted_cluster_spec(obj.spec)})
    if isinstance(obj, RayJob):
        return obj.model_copy(update={"spec": redacted_job_spec(obj.spec)})
    assert isinstance(obj, RayService)
    config = redacted_cluster_spec(obj.spec.ray_cluster_config)
    return obj.model_copy(
        update={"spec": obj.spec.model_copy(update={"ray_cluster_config": config})}
    )


SAMPLE_DOCS = [doc for path in sample_files() for doc in _ray_docs(path)]
SECRET_DOCS = [
    {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "c"}, "spec": spec}
    for spec in map(with_secret, CLUSTER_CASES)
]


@pytest.mark.parametrize("doc", SAMPLE_DOCS + SECRET_DOCS)
def test_validation_decides_the_same_on_the_redacted_spec(doc: dict[str, Any]) -> None:
    try:
        obj = parse_ray_object(copy.deepcopy(doc))
    except InvalidObjectError:
        pytest.skip("not loadable; the workflow then gets no spec at all")
    assert validate(_redacted(obj)) == validate(obj)


def test_an_error_quotes_none_of_the_objects_strings() -> None:
    manifest = {"spec": {"entrypoint": "python x.py --token=abcd1234", "env": [{"value": "ab"}]}}
    message = 'spec.entrypoint: Invalid value: "python x.py --token=abcd1234": too long; ab'
    assert list(strings_in(manifest)) == ["python x.py --token=abcd1234", "ab"]
    # Shorter than four characters: left, as it would match too much and hides little.
    assert without_values(message, strings_in(manifest)) == (
        'spec.entrypoint: Invalid value: "<redacted>": too long; ab'
    )
