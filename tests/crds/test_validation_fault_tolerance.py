"""GCS fault-tolerance rules: one way to configure each setting, backend-specific fields."""

from __future__ import annotations

from typing import Any

import pytest

from tests.crds.test_validation_support import Edits, Expected, check, edited, raycluster

FT = "spec.gcsFaultToleranceOptions"
HEAD_PARAMS = "spec.headGroupSpec.rayStartParams"
HEAD_CONTAINER = "spec.headGroupSpec.template.spec.containers[0]"
REDIS: Edits = {f"{FT}.redisAddress": "redis:6379"}
ROCKSDB: Edits = {f"{FT}.backend": "rocksdb"}


def _annotation(key: str, value: str) -> Edits:
    return {f'metadata.annotations["{key}"]': value}


def _env(name: str, value: str = "x") -> Edits:
    return {f"{HEAD_CONTAINER}.env": [{"name": name, "value": value}]}


@pytest.mark.parametrize(
    ("edits", "expected", "phrase"),
    [
        pytest.param(REDIS, None, None, id="options-only-ok"),
        pytest.param(_annotation("ray.io/ft-enabled", "true"), None, None, id="annotation-ok"),
        pytest.param(
            {**REDIS, **_annotation("ray.io/ft-enabled", "false")},
            FT,
            "remove the annotation",
            id="annotation-and-options",
        ),
    ],
)
def test_annotation_and_options(edits: Edits, expected: Expected, phrase: str | None) -> None:
    check(edited(raycluster(), edits), expected, phrase)


@pytest.mark.parametrize(
    ("edits", "expected", "phrase"),
    [
        pytest.param(
            {**_annotation("ray.io/ft-enabled", "true"), **_env("RAY_REDIS_ADDRESS")},
            None,
            None,
            id="legacy-ft-ok",
        ),
        pytest.param(
            _env("RAY_REDIS_ADDRESS"),
            f"{HEAD_CONTAINER}.env[0]",
            "gcsFaultToleranceOptions is not set",
            id="address-without-ft",
        ),
    ],
)
def test_redis_address_without_ft(edits: Edits, expected: Expected, phrase: str | None) -> None:
    check(edited(raycluster(), edits), expected, phrase)


@pytest.mark.parametrize(
    ("edits", "expected", "phrase"),
    [
        pytest.param({**REDIS, f"{FT}.redisPassword.value": "pw"}, None, None, id="in-options-ok"),
        pytest.param(
            {**REDIS, f'{HEAD_PARAMS}["redis-password"]': "pw"},
            f"{HEAD_PARAMS}[redis-password]",
            "gcsFaultToleranceOptions.redisPassword",
            id="password-param",
        ),
        pytest.param(
            {**REDIS, **_env("REDIS_PASSWORD")},
            f"{HEAD_CONTAINER}.env[0]",
            "gcsFaultToleranceOptions.redisPassword",
            id="password-env",
        ),
        pytest.param(
            {**REDIS, **_env("RAY_REDIS_ADDRESS")},
            f"{HEAD_CONTAINER}.env[0]",
            "gcsFaultToleranceOptions.redisAddress",
            id="address-env",
        ),
        pytest.param(
            {**REDIS, **_annotation("ray.io/external-storage-namespace", "ns")},
            "metadata.annotations[ray.io/external-storage-namespace]",
            "externalStorageNamespace",
            id="namespace-annotation",
        ),
    ],
)
def test_settings_outside_options(edits: Edits, expected: Expected, phrase: str | None) -> None:
    check(edited(raycluster(), edits), expected, phrase)


@pytest.mark.parametrize(
    ("edits", "expected", "phrase"),
    [
        pytest.param({**REDIS, f"{FT}.redisUsername.value": "u"}, None, None, id="options-ok"),
        pytest.param(
            {f'{HEAD_PARAMS}["redis-username"]': "u"},
            f"{HEAD_PARAMS}[redis-username]",
            "redisUsername",
            id="param",
        ),
        pytest.param(_env("REDIS_USERNAME"), f"{HEAD_CONTAINER}.env[0]", "redisUsername", id="env"),
    ],
)
def test_redis_username(edits: Edits, expected: Expected, phrase: str | None) -> None:
    check(edited(raycluster(), edits), expected, phrase)


@pytest.mark.parametrize(
    ("edits", "expected", "phrase"),
    [
        pytest.param({**ROCKSDB, f"{FT}.storage.size": "2Gi"}, None, None, id="rocksdb-ok"),
        pytest.param(
            {**REDIS, f"{FT}.storage.size": "2Gi"},
            f"{FT}.storage",
            "only applies to the rocksdb backend",
            id="storage-on-redis",
        ),
        pytest.param(
            {**ROCKSDB, **REDIS, f"{FT}.externalStorageNamespace": "ns"},
            (f"{FT}.externalStorageNamespace", f"{FT}.redisAddress"),
            "Redis setting",
            id="redis-fields-on-rocksdb",
        ),
        pytest.param(
            {**ROCKSDB, f"{FT}.storage.claimName": "pvc", f"{FT}.storage.size": "1Gi"},
            f"{FT}.storage.claimName",
            "so size cannot be set",
            id="claim-and-size",
        ),
        pytest.param({**ROCKSDB, f"{FT}.storage.claimName": "pvc"}, None, None, id="claim-ok"),
    ],
)
def test_backend_fields(edits: Edits, expected: Expected, phrase: str | None) -> None:
    check(edited(raycluster(), edits), expected, phrase)


_GCS_MOUNT: dict[str, Any] = {"name": "data", "mountPath": "/data/gcs"}


@pytest.mark.parametrize(
    ("edits", "expected", "phrase"),
    [
        pytest.param({**REDIS, **_env("RAY_gcs_storage")}, None, None, id="redis-ignores"),
        pytest.param(
            {**ROCKSDB, **_env("RAY_gcs_storage_path")},
            f"{HEAD_CONTAINER}.env[0]",
            "managed by KubeRay",
            id="env",
        ),
        pytest.param(
            {**ROCKSDB, f"{HEAD_CONTAINER}.volumeMounts": [_GCS_MOUNT]},
            f"{HEAD_CONTAINER}.volumeMounts[0]",
            "managed by KubeRay",
            id="mount-path",
        ),
        pytest.param(
            {**ROCKSDB, "spec.headGroupSpec.template.spec.volumes": [{"name": "gcs-storage"}]},
            "spec.headGroupSpec.template.spec.volumes[0]",
            "managed by KubeRay",
            id="volume-name",
        ),
    ],
)
def test_rocksdb_reserved_names(edits: Edits, expected: Expected, phrase: str | None) -> None:
    check(edited(raycluster(), edits), expected, phrase)
