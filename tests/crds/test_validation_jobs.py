"""RayJob rules: cluster source, suspend, submission modes, payloads, deadlines, clean-up."""

from __future__ import annotations

from typing import Any

import pytest

from crds.loading import parse_ray_object
from crds.violations import InvalidObjectError
from tests.alias_bombs import BOMB_398, BOMB_584
from tests.crds.test_validation_support import DELETE, Edits, Expected, check, edited, rayjob

SELECTOR: Edits = {"spec.rayClusterSpec": DELETE, "spec.clusterSelector": {"ray.io/cluster": "c"}}
SIDECAR: Edits = {"spec.submissionMode": "SidecarMode"}


@pytest.mark.parametrize(
    ("edits", "expected", "phrase"),
    [
        pytest.param({"spec.suspend": True}, None, None, id="suspend-ok"),
        pytest.param(
            {"spec.suspend": True, "spec.shutdownAfterJobFinishes": False},
            "spec.suspend",
            "only be suspended with shutdownAfterJobFinishes: true",
            id="suspend-without-shutdown",
        ),
        pytest.param(
            {**SELECTOR, "spec.suspend": True},
            "spec.suspend",
            "cannot be used with clusterSelector",
            id="suspend-with-selector",
        ),
    ],
)
def test_suspend(edits: Edits, expected: Expected, phrase: str | None) -> None:
    check(edited(rayjob(), edits), expected, phrase)


@pytest.mark.parametrize(
    ("edits", "expected", "phrase"),
    [
        pytest.param(SELECTOR, None, None, id="selector-ok"),
        pytest.param(
            {"spec.rayClusterSpec": DELETE},
            "spec.rayClusterSpec",
            "set rayClusterSpec, or clusterSelector",
            id="no-cluster",
        ),
        pytest.param(
            {**SELECTOR, "spec.clusterSelector": {"ray.io/cluster": ""}},
            "spec.clusterSelector[ray.io/cluster]",
            "RayCluster name",
            id="empty-name",
        ),
        pytest.param(
            {**SELECTOR, **SIDECAR},
            "spec.submissionMode",
            "SidecarMode cannot be used with clusterSelector",
            id="selector-sidecar",
        ),
        pytest.param(
            {**SELECTOR, "spec.backoffLimit": 1},
            "spec.backoffLimit",
            "must be 0 with clusterSelector",
            id="selector-retries",
        ),
    ],
)
def test_cluster_source(edits: Edits, expected: Expected, phrase: str | None) -> None:
    check(edited(rayjob(), edits), expected, phrase)


_HEAD_POLICY = "spec.rayClusterSpec.headGroupSpec.template.spec.restartPolicy"


@pytest.mark.parametrize(
    ("edits", "expected", "phrase"),
    [
        pytest.param({"spec.submissionMode": "InteractiveMode"}, None, None, id="interactive-ok"),
        pytest.param(
            {"spec.submissionMode": "InteractiveMode", "spec.backoffLimit": 2},
            "spec.backoffLimit",
            "must be 0 in InteractiveMode",
            id="interactive-retries",
        ),
        pytest.param({**SIDECAR, _HEAD_POLICY: "Never"}, None, None, id="sidecar-ok"),
        pytest.param(
            {**SIDECAR, "spec.submitterPodTemplate": {"spec": {"containers": []}}},
            "spec.submitterPodTemplate",
            "not supported in SidecarMode",
            id="sidecar-template",
        ),
        pytest.param(
            {**SIDECAR, "spec.submitterConfig.backoffLimit": 1},
            "spec.submitterConfig",
            "not supported in SidecarMode",
            id="sidecar-config",
        ),
        pytest.param(
            {**SIDECAR, _HEAD_POLICY: "OnFailure"}, _HEAD_POLICY, "Never or unset", id="sidecar-rp"
        ),
    ],
)
def test_submission_mode(edits: Edits, expected: Expected, phrase: str | None) -> None:
    check(edited(rayjob(), edits), expected, phrase)


def test_unknown_submission_mode_fails_at_load() -> None:
    with pytest.raises(InvalidObjectError) as err:
        parse_ray_object(edited(rayjob(), {"spec.submissionMode": "BatchMode"}))
    assert [v.path for v in err.value.violations] == ["spec.submissionMode"]
    assert "unsupported value 'BatchMode'" in err.value.violations[0].message


@pytest.mark.parametrize(
    ("edits", "expected", "phrase"),
    [
        pytest.param({"spec.runtimeEnvYAML": "pip:\n  - requests\n"}, None, None, id="yaml-ok"),
        pytest.param(
            {"spec.runtimeEnvYAML": "pip: [requests"},
            "spec.runtimeEnvYAML",
            "not valid YAML",
            id="yaml-broken",
        ),
        pytest.param(
            {"spec.runtimeEnvYAML": "- requests"},
            "spec.runtimeEnvYAML",
            "must be a YAML mapping",
            id="yaml-list",
        ),
        pytest.param({"spec.entrypointResources": '{"r1": 1, "r2": 0.5}'}, None, None, id="json"),
        pytest.param(
            {"spec.entrypointResources": '{"r1": "one"}'},
            "spec.entrypointResources",
            "'r1' must be a number",
            id="json-string-value",
        ),
        pytest.param(
            {"spec.entrypointResources": "r1=1"},
            "spec.entrypointResources",
            "not valid JSON",
            id="json-broken",
        ),
        pytest.param(
            {"spec.runtimeEnvYAML": "env_vars: &e {A: '1'}\nconda: {env_vars: *e}\n"},
            None,
            None,
            id="yaml-alias-ok",
        ),
        pytest.param(
            {"spec.runtimeEnvYAML": BOMB_398},
            "spec.runtimeEnvYAML",
            "runtimeEnvYAML expands to more than 25,000 keys and values through its aliases "
            "(*name) (line 5)",
            id="yaml-alias-bomb-398",
        ),
        pytest.param(
            {"spec.runtimeEnvYAML": BOMB_584},
            "spec.runtimeEnvYAML",
            "runtimeEnvYAML expands to more than 25,000 keys and values through its aliases "
            "(*name) (line 5)",
            id="yaml-alias-bomb-584",
        ),
        pytest.param(
            {"spec.runtimeEnvYAML": "pip: [" + "[" * 2000},
            "spec.runtimeEnvYAML",
            "runtimeEnvYAML nests deeper than 64 levels",
            id="yaml-deep",
        ),
        pytest.param(
            {"spec.runtimeEnvYAML": "pip: [" + "x, " * 100_000 + "]"},
            "spec.runtimeEnvYAML",
            "runtimeEnvYAML is larger than 256 KiB (300,007 bytes)",
            id="yaml-too-large",
        ),
        pytest.param(
            {"spec.entrypointResources": "[" * 5000},
            "spec.entrypointResources",
            "entrypointResources nests deeper than 64 levels",
            id="json-deep",
        ),
        pytest.param(
            {"spec.entrypointResources": '{"r1": 1e400}'},
            "spec.entrypointResources",
            "'r1' is too large for a number",
            id="json-infinite",
        ),
    ],
)
def test_payloads(edits: Edits, expected: Expected, phrase: str | None) -> None:
    check(edited(rayjob(), edits), expected, phrase)


@pytest.mark.parametrize(
    ("field", "value", "ok"),
    [
        pytest.param("activeDeadlineSeconds", 1, True, id="active-ok"),
        pytest.param("activeDeadlineSeconds", 0, False, id="active-zero"),
        pytest.param("preRunningDeadlineSeconds", 60, True, id="pre-running-ok"),
        pytest.param("preRunningDeadlineSeconds", -1, False, id="pre-running-negative"),
        pytest.param("backoffLimit", 0, True, id="backoff-ok"),
        pytest.param("backoffLimit", -1, False, id="backoff-negative"),
        pytest.param("ttlSecondsAfterFinished", 10, True, id="ttl-ok"),
        pytest.param("ttlSecondsAfterFinished", -1, False, id="ttl-negative"),
    ],
)
def test_deadlines_and_retries(field: str, value: int, ok: bool) -> None:
    expected = None if ok else f"spec.{field}"
    check(edited(rayjob(), {f"spec.{field}": value}), expected, None)


@pytest.mark.parametrize(
    ("edits", "expected"),
    [
        pytest.param(
            {"spec.submissionMode": "InteractiveMode", "status.jobDeploymentStatus": "Waiting"},
            None,
            id="interactive-waiting-ok",
        ),
        pytest.param(
            {"status.jobDeploymentStatus": "Waiting"}, "status.jobDeploymentStatus", id="k8sjob"
        ),
    ],
)
def test_waiting_status(edits: Edits, expected: Expected) -> None:
    check(edited(rayjob(), edits), expected, None)


# --- clean-up: shutdownAfterJobFinishes, legacy policies, deletionRules ------------------------

RULES = "spec.deletionStrategy.deletionRules"
NO_SHUTDOWN: Edits = {"spec.shutdownAfterJobFinishes": False}


def _rule(policy: str, ttl: int, status: str = "SUCCEEDED", **extra: Any) -> dict[str, Any]:
    return {"policy": policy, "condition": {"jobStatus": status, "ttlSeconds": ttl, **extra}}


def _rules(*rules: dict[str, Any]) -> Edits:
    return {**NO_SHUTDOWN, RULES: list(rules)}


def _legacy(success: str, failure: str | None) -> Edits:
    edits: Edits = {"spec.deletionStrategy.onSuccess.policy": success}
    if failure is not None:
        edits["spec.deletionStrategy.onFailure.policy"] = failure
    return edits


@pytest.mark.parametrize(
    ("edits", "expected", "phrase"),
    [
        pytest.param({"spec.ttlSecondsAfterFinished": 60}, None, None, id="ttl-with-shutdown-ok"),
        pytest.param(
            {**NO_SHUTDOWN, "spec.ttlSecondsAfterFinished": 60},
            "spec.ttlSecondsAfterFinished",
            "only applies with shutdownAfterJobFinishes: true",
            id="ttl-without-shutdown",
        ),
        pytest.param(_legacy("DeleteCluster", "DeleteSelf"), None, None, id="legacy-ok"),
        pytest.param(
            _legacy("DeleteCluster", None),
            "spec.deletionStrategy.onFailure",
            "both onSuccess and onFailure",
            id="legacy-half",
        ),
        pytest.param(
            _legacy("DeleteNone", "DeleteCluster"),
            "spec.deletionStrategy.onSuccess.policy",
            "contradicts shutdownAfterJobFinishes",
            id="legacy-none-with-shutdown",
        ),
        pytest.param(
            {**SELECTOR, **_legacy("DeleteNone", "DeleteWorkers"), **NO_SHUTDOWN},
            "spec.deletionStrategy.onFailure.policy",
            "not allowed with clusterSelector",
            id="legacy-selector",
        ),
        pytest.param(
            {**_rules(_rule("DeleteCluster", 10)), **_legacy("DeleteSelf", "DeleteSelf")},
            "spec.deletionStrategy",
            "cannot be used together",
            id="legacy-and-rules",
        ),
        pytest.param(
            {RULES: [_rule("DeleteCluster", 10)]},
            "spec.shutdownAfterJobFinishes",
            "cannot be combined with deletionRules",
            id="rules-and-shutdown",
        ),
        pytest.param(
            {**NO_SHUTDOWN, "spec.deletionStrategy": {}},
            "spec.deletionStrategy",
            "needs either both onSuccess and onFailure",
            id="empty-strategy",
        ),
        pytest.param(_rules(), RULES, "at least one rule", id="empty-rules"),
    ],
)
def test_deletion_configuration(edits: Edits, expected: Expected, phrase: str | None) -> None:
    check(edited(rayjob(), edits), expected, phrase)


@pytest.mark.parametrize(
    ("edits", "expected", "phrase"),
    [
        pytest.param(
            _rules(
                _rule("DeleteWorkers", 30),
                _rule("DeleteCluster", 60),
                _rule("DeleteSelf", 90),
                _rule("DeleteCluster", 0, "FAILED"),
            ),
            None,
            None,
            id="ordered-ok",
        ),
        pytest.param(
            _rules(_rule("DeleteCluster", 60), _rule("DeleteSelf", 30)),
            f"{RULES}[1].condition.ttlSeconds",
            "the DeleteSelf TTL (30) must be at least the DeleteCluster TTL (60)",
            id="ttls-out-of-order",
        ),
        pytest.param(
            _rules(_rule("DeleteCluster", 10), _rule("DeleteCluster", 20)),
            f"{RULES}[1]",
            "duplicates deletionRules[0]",
            id="duplicate",
        ),
        pytest.param(
            _rules(_rule("DeleteCluster", 10, jobDeploymentStatus="Failed")),
            f"{RULES}[0].condition",
            "only one of",
            id="both-conditions",
        ),
        pytest.param(
            _rules({"policy": "DeleteSelf", "condition": {"ttlSeconds": 1}}),
            f"{RULES}[0].condition",
            "set one of",
            id="no-condition",
        ),
        pytest.param(
            _rules(_rule("DeleteSelf", -1)),
            f"{RULES}[0].condition.ttlSeconds",
            "must not be negative",
            id="negative-ttl",
        ),
        pytest.param(
            _rules(_rule("DeleteSelf", 1, "RUNNING")),
            f"{RULES}[0].condition.jobStatus",
            "SUCCEEDED or FAILED",
            id="non-terminal-status",
        ),
        pytest.param(
            {**SELECTOR, **_rules(_rule("DeleteWorkers", 1))},
            f"{RULES}[0].policy",
            "not allowed with clusterSelector",
            id="selector-delete-workers",
        ),
        pytest.param(
            {
                "spec.rayClusterSpec.enableInTreeAutoscaling": True,
                **_rules(_rule("DeleteWorkers", 1)),
            },
            f"{RULES}[0].policy",
            "enableInTreeAutoscaling",
            id="autoscaling-delete-workers",
        ),
    ],
)
def test_deletion_rules(edits: Edits, expected: Expected, phrase: str | None) -> None:
    check(edited(rayjob(), edits), expected, phrase)
