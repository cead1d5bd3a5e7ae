"""RayService rules: initializing timeout, head Service name, upgrade options, serveConfigV2."""

from __future__ import annotations

import pytest

from tests.alias_bombs import BOMB_398, BOMB_584
from tests.crds.test_validation_support import Edits, Expected, check, edited, rayservice

TIMEOUT = 'metadata.annotations["ray.io/initializing-timeout"]'
TIMEOUT_PATH = "metadata.annotations[ray.io/initializing-timeout]"
OPTIONS = "spec.upgradeStrategy.clusterUpgradeOptions"
INCREMENTAL: Edits = {
    "spec.upgradeStrategy.type": "NewClusterWithIncrementalUpgrade",
    "spec.rayClusterConfig.enableInTreeAutoscaling": True,
    f"{OPTIONS}.stepSizePercent": 10,
    f"{OPTIONS}.intervalSeconds": 30,
    f"{OPTIONS}.gatewayClassName": "istio",
}


@pytest.mark.parametrize(
    ("value", "phrase"),
    [
        pytest.param("5m", None, id="duration-ok"),
        pytest.param("1h30m", None, id="compound-ok"),
        pytest.param("300", None, id="seconds-ok"),
        pytest.param("0", "must be positive", id="zero"),
        pytest.param("-100", "must be positive", id="negative-seconds"),
        pytest.param("-5m", "must be positive", id="negative-duration"),
        pytest.param("invalid", "neither a duration", id="garbage"),
        pytest.param("5 m", "neither a duration", id="space"),
        pytest.param("9223372036", None, id="longest-go-duration-in-seconds"),
        pytest.param("9223372037", "at most 9223372036", id="seconds-past-a-go-duration"),
        pytest.param("9" * 5000, "neither a duration", id="past-the-int-digit-limit"),
        pytest.param("1s" * 131_072, "neither a duration", id="a-quarter-megabyte"),
        pytest.param("²", "neither a duration", id="superscript-digit"),
    ],
)
def test_initializing_timeout(value: str, phrase: str | None) -> None:
    check(edited(rayservice(), {TIMEOUT: value}), None if phrase is None else TIMEOUT_PATH, phrase)


_HEAD_SERVICE = "spec.rayClusterConfig.headGroupSpec.headService"


@pytest.mark.parametrize(
    ("edits", "expected"),
    [
        pytest.param({f"{_HEAD_SERVICE}.metadata.labels": {"a": "b"}}, None, id="labels-ok"),
        pytest.param(
            {f"{_HEAD_SERVICE}.metadata.name": "mine"},
            f"{_HEAD_SERVICE}.metadata.name",
            id="custom-name",
        ),
    ],
)
def test_head_service_name(edits: Edits, expected: Expected) -> None:
    check(edited(rayservice(), edits), expected, None)


@pytest.mark.parametrize(
    ("edits", "expected", "phrase"),
    [
        pytest.param({"spec.rayClusterDeletionDelaySeconds": 0}, None, None, id="zero-ok"),
        pytest.param(
            {"spec.rayClusterDeletionDelaySeconds": -1},
            "spec.rayClusterDeletionDelaySeconds",
            "must not be negative",
            id="negative",
        ),
    ],
)
def test_deletion_delay(edits: Edits, expected: Expected, phrase: str | None) -> None:
    check(edited(rayservice(), edits), expected, phrase)


@pytest.mark.parametrize(
    ("edits", "expected", "phrase"),
    [
        pytest.param(INCREMENTAL, None, None, id="incremental-ok"),
        pytest.param({"spec.upgradeStrategy.type": "None"}, None, None, id="none-ok"),
        pytest.param(
            {**INCREMENTAL, "spec.rayClusterConfig.enableInTreeAutoscaling": False},
            "spec.rayClusterConfig.enableInTreeAutoscaling",
            "needs the autoscaler",
            id="no-autoscaler",
        ),
        pytest.param(
            {
                "spec.upgradeStrategy.type": "NewClusterWithIncrementalUpgrade",
                "spec.rayClusterConfig.enableInTreeAutoscaling": True,
            },
            OPTIONS,
            "required",
            id="no-options",
        ),
        pytest.param(
            {**INCREMENTAL, f"{OPTIONS}.maxSurgePercent": 120},
            f"{OPTIONS}.maxSurgePercent",
            "between 0 and 100",
            id="surge-too-high",
        ),
        pytest.param(
            {**INCREMENTAL, f"{OPTIONS}.maxSurgePercent": 5},
            f"{OPTIONS}.stepSizePercent",
            "must not exceed maxSurgePercent (5)",
            id="step-above-surge",
        ),
        pytest.param(
            {**INCREMENTAL, f"{OPTIONS}.intervalSeconds": 0},
            f"{OPTIONS}.intervalSeconds",
            "greater than 0",
            id="zero-interval",
        ),
        pytest.param(
            {**INCREMENTAL, f"{OPTIONS}.gatewayClassName": ""},
            f"{OPTIONS}.gatewayClassName",
            "is required",
            id="no-gateway-class",
        ),
        pytest.param(
            {"spec.upgradeStrategy.type": "NewCluster", f"{OPTIONS}.stepSizePercent": 10},
            (f"{OPTIONS}.gatewayClassName", f"{OPTIONS}.intervalSeconds"),
            "is required in clusterUpgradeOptions",
            id="schema-required",
        ),
    ],
)
def test_upgrade_options(edits: Edits, expected: Expected, phrase: str | None) -> None:
    check(edited(rayservice(), edits), expected, phrase)


@pytest.mark.parametrize(
    ("value", "phrase"),
    [
        pytest.param("applications: []\n", None, id="mapping-ok"),
        pytest.param("applications: [", "not valid YAML", id="broken"),
        pytest.param("just text", "must be a YAML mapping", id="scalar"),
        pytest.param("a: &x {b: 1}\nc: *x\n", None, id="alias-ok"),
        pytest.param(
            BOMB_398,
            "serveConfigV2 expands to more than 25,000 keys and values",
            id="alias-bomb-398",
        ),
        pytest.param(
            BOMB_584,
            "serveConfigV2 expands to more than 25,000 keys and values",
            id="alias-bomb-584",
        ),
        pytest.param("a: &x [*x]", "serveConfigV2 uses the alias *x inside", id="self-alias"),
    ],
)
def test_serve_config(value: str, phrase: str | None) -> None:
    expected = None if phrase is None else "spec.serveConfigV2"
    check(edited(rayservice(), {"spec.serveConfigV2": value}), expected, phrase)
