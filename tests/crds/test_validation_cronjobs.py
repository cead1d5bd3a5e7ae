"""RayCronJob rules: schedule, time zone, and the job template checked as a RayJob's spec."""

from __future__ import annotations

import pytest

from crds.loading import parse_ray_object
from crds.raycronjob import RayCronJob
from crds.validation.cronjobs import catchup_seconds
from crds.violations import InvalidObjectError
from tests.crds.test_validation_support import (
    DELETE,
    Edits,
    Expected,
    check,
    edited,
    raycronjob,
    rayjob,
    violations_of,
)

JOB_CLUSTER = "spec.rayClusterSpec"
CRON_CLUSTER = "spec.jobTemplate.rayClusterSpec"


@pytest.mark.parametrize(
    ("edits", "expected", "phrase"),
    [
        pytest.param({}, None, None, id="valid"),
        pytest.param({"spec.timeZone": DELETE}, None, None, id="no-time-zone-ok"),
        pytest.param({"spec.suspend": True}, None, None, id="suspended-ok"),
        pytest.param({"spec.schedule": "@every 1h30m"}, None, None, id="every-ok"),
        pytest.param({"spec.schedule": "@every 1m"}, None, None, id="every-minute-ok"),
        pytest.param(
            {"spec.schedule": "@every 1s"},
            "spec.schedule",
            "invalid cron schedule '@every 1s': it fires every 1s, more often than once a "
            "minute (the shortest interval is 1m: each tick's RayJob is named for its minute)",
            id="every-second",
        ),
        pytest.param(
            {"spec.schedule": "30 2 * * 7"},
            "spec.schedule",
            "invalid cron schedule '30 2 * * 7': in the day-of-week field, '7' goes above 6",
            id="schedule",
        ),
        pytest.param(
            {"spec.schedule": "CRON_TZ=UTC 30 2 * * *"},
            "spec.schedule",
            "it contains 'TZ', and a time zone (TZ=, CRON_TZ=) belongs in timeZone instead",
            id="schedule-with-a-zone",
        ),
        pytest.param({"spec.schedule": ""}, "spec.schedule", "it is empty", id="empty-schedule"),
        pytest.param(
            {"spec.timeZone": ""},
            "spec.timeZone",
            "timeZone must not be empty: leave it out to use the controller's local time zone",
            id="empty-time-zone",
        ),
        pytest.param(
            {"spec.timeZone": "Asia/Tapei"},
            "spec.timeZone",
            "timeZone must name a zone of the IANA database, such as Asia/Taipei or UTC "
            "(names are case-sensitive), got 'Asia/Tapei'",
            id="unknown-time-zone",
        ),
        pytest.param(
            {"spec.schedule": "61 * * * *", "spec.timeZone": "Nowhere"},
            ("spec.schedule", "spec.timeZone"),
            None,
            id="every-problem-at-once",
        ),
    ],
)
def test_schedule_and_time_zone(edits: Edits, expected: Expected, phrase: str | None) -> None:
    check(edited(raycronjob(), edits), expected, phrase)


WINDOW = "kuberay-temporal.io/catchup-window"


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("10m", 600), ("1h30m", 5400), ("90", 90), ("1.5s", 1), (None, None)],
)
def test_the_catchup_window_is_a_duration_or_seconds(
    value: str | None, seconds: int | None
) -> None:
    annotations = {} if value is None else {WINDOW: value}
    assert catchup_seconds(annotations) == seconds
    doc = raycronjob()
    doc["metadata"]["annotations"] = annotations
    assert violations_of(doc) == []


@pytest.mark.parametrize(
    "value",
    ["soon", "0", "-5m", "", "10 minutes", "1" * 5000, "9223372037", "1s" * 131_072, "٣"],
)
def test_a_catchup_window_that_is_not_one_is_refused(value: str) -> None:
    doc = raycronjob()
    doc["metadata"]["annotations"] = {WINDOW: value}
    assert catchup_seconds(doc["metadata"]["annotations"]) is None
    check(doc, f"metadata.annotations[{WINDOW}]", "is not a positive duration")


@pytest.mark.parametrize(
    ("edits", "expected", "phrase"),
    [
        pytest.param(
            {"spec.jobTemplate.suspend": True, "spec.jobTemplate.shutdownAfterJobFinishes": False},
            "spec.jobTemplate.suspend",
            "only be suspended with shutdownAfterJobFinishes: true",
            id="template-suspend",
        ),
        pytest.param(
            {"spec.jobTemplate.rayClusterSpec": DELETE},
            "spec.jobTemplate.rayClusterSpec",
            "set rayClusterSpec, or clusterSelector",
            id="template-without-cluster",
        ),
        pytest.param(
            {"spec.jobTemplate.rayClusterSpec.workerGroupSpecs[0].minReplicas": 5},
            "spec.jobTemplate.rayClusterSpec.workerGroupSpecs[0].minReplicas",
            None,
            id="template-cluster-spec",
        ),
        pytest.param(
            {"spec.jobTemplate.runtimeEnvYAML": "[not: a mapping"},
            "spec.jobTemplate.runtimeEnvYAML",
            "runtimeEnvYAML is not valid YAML",
            id="template-payload",
        ),
        pytest.param(
            {"spec.jobTemplate.managedBy": "someone-else"},
            "spec.jobTemplate.managedBy",
            "managedBy must be",
            id="template-managed-by",
        ),
    ],
)
def test_job_template_is_checked_as_a_rayjob_spec(
    edits: Edits, expected: Expected, phrase: str | None
) -> None:
    check(edited(raycronjob(), edits), expected, phrase)


def test_the_cronjob_annotations_do_not_reach_the_template() -> None:
    """Each tick's RayJob gets none of them, so the rules read none (as KubeRay's do)."""
    ft_enabled = 'metadata.annotations["ray.io/ft-enabled"]'
    options = {"redisAddress": "redis:6379"}
    job = edited(rayjob(), {ft_enabled: "true", f"{JOB_CLUSTER}.gcsFaultToleranceOptions": options})
    assert [v.path for v in violations_of(job)] == [f"{JOB_CLUSTER}.gcsFaultToleranceOptions"]
    cron = edited(
        raycronjob(), {ft_enabled: "true", f"{CRON_CLUSTER}.gcsFaultToleranceOptions": options}
    )
    assert violations_of(cron) == []


@pytest.mark.parametrize(
    ("edits", "path"),
    [
        pytest.param({"spec.schedule": DELETE}, "spec.schedule", id="schedule-required"),
        pytest.param({"spec.jobTemplate": DELETE}, "spec.jobTemplate", id="template-required"),
        pytest.param({"spec.suspend": "yes"}, "spec.suspend", id="suspend-is-a-boolean"),
        pytest.param(
            {"spec.jobTemplate.backoffLimit": "3"},
            "spec.jobTemplate.backoffLimit",
            id="template-schema",
        ),
        pytest.param(
            {"status.lastScheduleTime": "yesterday"}, "status.lastScheduleTime", id="time"
        ),
    ],
)
def test_schema_errors_point_into_the_cronjob(edits: Edits, path: str) -> None:
    with pytest.raises(InvalidObjectError) as err:
        parse_ray_object(edited(raycronjob(), edits))
    assert [v.path for v in err.value.violations] == [path]


def test_status_round_trips_as_metav1_time() -> None:
    doc = edited(raycronjob(), {"status.lastScheduleTime": "2026-01-02T03:04:00Z"})
    cronjob = parse_ray_object(doc)
    assert isinstance(cronjob, RayCronJob)
    assert cronjob.to_json_dict() == doc
