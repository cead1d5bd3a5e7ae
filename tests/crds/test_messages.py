"""Messages about a CR quote its values clipped, and whole messages stay within their limits."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from crds.common import Condition
from crds.enums import ConditionStatus
from crds.loading import parse_ray_object
from crds.messages import QUOTE_LIMIT, STATUS_MESSAGE_LIMIT, clipped, quoted
from crds.validation import validate
from crds.violations import (
    MAX_REPORTED,
    REPORTED_LENGTH,
    InvalidObjectError,
    Violation,
    reported,
)
from tests.crds.test_validation_support import (
    edited,
    raycluster,
    raycronjob,
    rayjob,
    rayservice,
)

HUGE = "x" * 1_000_000
# Far more than any message needs, far less than the megabyte each case quotes.
MESSAGE_BOUND = 600


def test_a_short_value_is_quoted_whole() -> None:
    assert quoted("2.52.0") == "'2.52.0'"
    assert quoted(5) == "5"


def test_a_long_string_is_clipped_inside_its_quotes() -> None:
    shown = quoted("ab" * 1000)
    assert shown == repr("ab" * (QUOTE_LIMIT // 2)) + "…"


def test_a_long_structure_is_clipped_after_its_repr() -> None:
    shown = quoted({"key": HUGE})
    assert len(shown) == QUOTE_LIMIT + 1
    assert shown.endswith("…")


def test_an_integer_without_a_repr_is_described() -> None:
    assert quoted(10**5000) == "an integer too long to show"


def test_clipped_keeps_a_text_that_fits() -> None:
    assert clipped("ünïcode", 1024) == "ünïcode"


@pytest.mark.parametrize("text", ["x" * 5000, "é" * 5000, "😀" * 5000, "a" + "é" * 700])
def test_clipped_cuts_between_characters_within_the_byte_limit(text: str) -> None:
    once = clipped(text, 1024)
    assert len(once.encode()) <= 1024
    assert once.endswith("…")
    assert text.startswith(once[:-1])
    assert clipped(once, 1024) == once


def _cases() -> list[Any]:
    return [
        pytest.param(raycronjob(), {"spec.schedule": HUGE}, id="cron-schedule"),
        pytest.param(raycronjob(), {"spec.schedule": "@every " + HUGE}, id="every-duration"),
        pytest.param(raycronjob(), {"spec.timeZone": "Zone/" + HUGE}, id="time-zone"),
        pytest.param(
            raycronjob(),
            {'metadata.annotations["kuberay-temporal.io/catchup-window"]': HUGE},
            id="catchup-window",
        ),
        pytest.param(raycluster(), {"spec.workerGroupSpecs[0].groupName": HUGE}, id="group-name"),
        pytest.param(
            raycluster(),
            {"spec.workerGroupSpecs[1]": {**raycluster()["spec"]["workerGroupSpecs"][0]}}
            | {
                "spec.workerGroupSpecs[0].groupName": "g" + HUGE,
                "spec.workerGroupSpecs[1].groupName": "g" + HUGE,
            },
            id="duplicate-group-names",
        ),
        pytest.param(
            raycluster(), {f'spec.headGroupSpec.labels["{HUGE}"]': HUGE}, id="group-label"
        ),
        pytest.param(raycluster(), {"spec.managedBy": HUGE}, id="managed-by"),
        pytest.param(
            raycluster(), {"spec.headGroupSpec.headService.metadata.name": HUGE}, id="service"
        ),
        pytest.param(rayjob(), {f'spec.clusterSelector["{HUGE}"]': HUGE}, id="selector"),
        pytest.param(
            rayjob(),
            {"spec.submissionMode": "SidecarMode"}
            | {"spec.rayClusterSpec.headGroupSpec.template.spec.restartPolicy": HUGE},
            id="sidecar-restart-policy",
        ),
        pytest.param(
            rayservice(),
            {'metadata.annotations["ray.io/initializing-timeout"]': HUGE},
            id="initializing-timeout",
        ),
        pytest.param(raycluster(), {"metadata.name": HUGE}, id="object-name"),
    ]


@pytest.mark.parametrize(("doc", "edits"), _cases())
def test_no_violation_repeats_a_huge_value(doc: dict[str, Any], edits: dict[str, Any]) -> None:
    found = validate(parse_ray_object(edited(doc, edits)))
    assert found
    assert all(len(str(violation)) < MESSAGE_BOUND for violation in found), found


@pytest.mark.parametrize(
    "edits",
    [
        pytest.param({"spec.suspend": HUGE}, id="wrong-type"),
        pytest.param({"spec.autoscalerOptions.upscalingMode": HUGE}, id="enum"),
        pytest.param({"kind": HUGE}, id="kind"),
    ],
)
def test_no_schema_error_repeats_a_huge_value(edits: dict[str, Any]) -> None:
    with pytest.raises(InvalidObjectError) as raised:
        parse_ray_object(edited(raycluster(), edits))
    found: list[Violation] = raised.value.violations
    assert found
    assert all(len(str(violation)) < MESSAGE_BOUND for violation in found), found


def test_reported_keeps_the_first_violations_and_counts_the_rest() -> None:
    violations = [Violation(f"spec.workerGroupSpecs[{i}].groupName", "bad") for i in range(25)]
    shown = reported(violations)
    assert len(shown) == MAX_REPORTED
    assert shown[0] == "spec.workerGroupSpecs[0].groupName: bad"
    assert shown[-1] == "spec.workerGroupSpecs[19].groupName: bad (and 5 more violations)"


def test_reported_clips_each_violation() -> None:
    [shown] = reported([Violation("spec.x", "y" * 100_000)])
    assert len(shown.encode()) <= REPORTED_LENGTH


def test_a_few_violations_are_reported_as_they_are() -> None:
    violations = [Violation("spec.a", "one"), Violation("spec.b", "two")]
    assert reported(violations) == ["spec.a: one", "spec.b: two"]


def test_a_condition_message_is_clipped_to_the_crd_limit() -> None:
    condition = Condition(
        type="Ready",
        status=ConditionStatus.FALSE,
        reason="ValidationFailed",
        message="é" * STATUS_MESSAGE_LIMIT,
        last_transition_time=datetime(2026, 1, 1, tzinfo=UTC),
    )
    assert len(condition.message.encode()) <= STATUS_MESSAGE_LIMIT
    assert condition.message.endswith("…")
