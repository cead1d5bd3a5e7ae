"""Autoscaler rules: suspended groups, autoscaler v2 settings, idle timeouts, priorities."""

from __future__ import annotations

import pytest

from tests.crds.test_validation_support import Edits, Expected, check, edited, raycluster

W0 = "spec.workerGroupSpecs[0]"
HEAD_ENV = "spec.headGroupSpec.template.spec.containers[0].env"
ON: Edits = {"spec.enableInTreeAutoscaling": True}
V2: Edits = {**ON, "spec.autoscalerOptions.version": "v2"}


def _env(name: str, value: str) -> Edits:
    return {HEAD_ENV: [{"name": name, "value": value}]}


@pytest.mark.parametrize(
    ("edits", "expected", "phrase"),
    [
        pytest.param({f"{W0}.suspend": True}, None, None, id="no-autoscaler-ok"),
        pytest.param({**ON, f"{W0}.suspend": False}, None, None, id="not-suspended-ok"),
        pytest.param(
            {**ON, f"{W0}.suspend": True},
            f"{W0}.suspend",
            "cannot be suspended while enableInTreeAutoscaling is on",
            id="suspended-autoscaled",
        ),
    ],
)
def test_suspended_groups_without_autoscaler(
    edits: Edits, expected: Expected, phrase: str | None
) -> None:
    check(edited(raycluster(), edits), expected, phrase)


@pytest.mark.parametrize(
    ("edits", "expected", "phrase"),
    [
        pytest.param(_env("RAY_enable_autoscaler_v2", "false"), None, None, id="false-ok"),
        pytest.param({**ON, **_env("RAY_enable_autoscaler_v2", "1")}, None, None, id="legacy-ok"),
        pytest.param(
            _env("RAY_enable_autoscaler_v2", "true"),
            f"{HEAD_ENV}[0]",
            "needs the autoscaler",
            id="v2-env-without-autoscaler",
        ),
        pytest.param(
            {**V2, **_env("RAY_enable_autoscaler_v2", "0")},
            f"{HEAD_ENV}[0]",
            "both set",
            id="env-and-version",
        ),
    ],
)
def test_autoscaler_v2_env(edits: Edits, expected: Expected, phrase: str | None) -> None:
    check(edited(raycluster(), edits), expected, phrase)


_HEAD_POLICY = "spec.headGroupSpec.template.spec.restartPolicy"
_W0_POLICY = f"{W0}.template.spec.restartPolicy"


@pytest.mark.parametrize(
    ("edits", "expected", "phrase"),
    [
        pytest.param({**V2, _HEAD_POLICY: "Never", _W0_POLICY: "Never"}, None, None, id="never"),
        pytest.param({**ON, _HEAD_POLICY: "Always"}, None, None, id="v1-ok"),
        pytest.param(
            {**V2, _HEAD_POLICY: "Always"}, _HEAD_POLICY, "Never or unset", id="head-always"
        ),
        pytest.param(
            {**V2, _W0_POLICY: "OnFailure"},
            _W0_POLICY,
            "worker group 'workers'",
            id="worker-onfailure",
        ),
    ],
)
def test_v2_restart_policies(edits: Edits, expected: Expected, phrase: str | None) -> None:
    check(edited(raycluster(), edits), expected, phrase)


@pytest.mark.parametrize(
    ("edits", "expected", "phrase"),
    [
        pytest.param({**V2, f"{W0}.idleTimeoutSeconds": 30}, None, None, id="v2-ok"),
        pytest.param(
            {**ON, **_env("RAY_enable_autoscaler_v2", "true"), f"{W0}.idleTimeoutSeconds": 30},
            None,
            None,
            id="legacy-env-ok",
        ),
        pytest.param(
            {**ON, f"{W0}.idleTimeoutSeconds": 30},
            f"{W0}.idleTimeoutSeconds",
            "only used by autoscaler v2",
            id="v1",
        ),
        pytest.param(
            {**V2, f"{W0}.idleTimeoutSeconds": -1},
            f"{W0}.idleTimeoutSeconds",
            "must not be negative",
            id="negative",
        ),
    ],
)
def test_group_idle_timeouts(edits: Edits, expected: Expected, phrase: str | None) -> None:
    check(edited(raycluster(), edits), expected, phrase)


@pytest.mark.parametrize(
    ("edits", "expected", "phrase"),
    [
        pytest.param({f"{W0}.priority": 0}, None, None, id="zero-ok"),
        pytest.param(
            {**V2, "spec.rayVersion": "2.56.0", f"{W0}.priority": 5}, None, None, id="v2-2.56-ok"
        ),
        pytest.param(
            {**V2, f"{W0}.priority": 5}, "spec.rayVersion", "needs Ray 2.56.0", id="old-ray"
        ),
        pytest.param(
            {**V2, "spec.rayVersion": "nightly", f"{W0}.priority": 5},
            "spec.rayVersion",
            "not a version number",
            id="unparsable-ray",
        ),
        pytest.param(
            {**ON, "spec.rayVersion": "2.56", f"{W0}.priority": 5},
            f"{W0}.priority",
            "only used by autoscaler v2",
            id="v1",
        ),
    ],
)
def test_group_priorities(edits: Edits, expected: Expected, phrase: str | None) -> None:
    check(edited(raycluster(), edits), expected, phrase)


_GEN_CMD = [{"name": "KUBERAY_GEN_AUTOSCALER_START_CMD", "value": "x"}]


@pytest.mark.parametrize(
    ("edits", "expected", "phrase"),
    [
        pytest.param({**V2, "spec.autoscalerOptions.idleTimeoutSeconds": 0}, None, None, id="ok"),
        pytest.param(
            {**ON, "spec.autoscalerOptions.idleTimeoutSeconds": -5},
            "spec.autoscalerOptions.idleTimeoutSeconds",
            "must not be negative (got -5)",
            id="negative-idle",
        ),
        pytest.param(
            {**ON, "spec.autoscalerOptions.env": _GEN_CMD},
            "spec.autoscalerOptions.env[0]",
            "set by KubeRay",
            id="generated-command",
        ),
    ],
)
def test_autoscaler_options(edits: Edits, expected: Expected, phrase: str | None) -> None:
    check(edited(raycluster(), edits), expected, phrase)
