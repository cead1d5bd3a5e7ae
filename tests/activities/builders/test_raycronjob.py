"""The RayJob of a RayCronJob firing: KubeRay's name, label, annotation, owner and spec."""

from __future__ import annotations

from datetime import UTC, datetime

from activities.builders.raycronjob import build_scheduled_rayjob, scheduled_rayjob_name

TICK = datetime(2026, 12, 5, 1, 30, tzinfo=UTC)
CRONJOB = {
    "apiVersion": "ray.io/v1",
    "kind": "RayCronJob",
    "metadata": {"name": "nightly", "namespace": "team-a", "uid": "u-1", "labels": {"x": "y"}},
    "spec": {
        "schedule": "30 1 * * *",
        "jobTemplate": {"entrypoint": "python run.py", "rayClusterSpec": {"headGroupSpec": {}}},
    },
}


def test_the_name_is_the_tick_in_unix_minutes() -> None:
    assert scheduled_rayjob_name("nightly", TICK) == f"nightly-{int(TICK.timestamp()) // 60}"
    assert scheduled_rayjob_name("nightly", TICK) == "nightly-29940570"
    # Seconds into the minute do not change it: one RayJob per minute at most, as in KubeRay.
    assert scheduled_rayjob_name("nightly", TICK.replace(second=59)) == "nightly-29940570"


def test_the_rayjob_is_the_template_owned_by_the_raycronjob() -> None:
    job = build_scheduled_rayjob(CRONJOB, TICK)
    assert job["apiVersion"] == "ray.io/v1" and job["kind"] == "RayJob"
    assert job["metadata"] == {
        "name": "nightly-29940570",
        "namespace": "team-a",
        # KubeRay's only label and annotation: the RayCronJob's own labels are not copied.
        "labels": {"ray.io/cronjob-name": "nightly"},
        "annotations": {"ray.io/cronjob-scheduled-timestamp": "2026-12-05T01:30:00Z"},
        "ownerReferences": [
            {
                "apiVersion": "ray.io/v1",
                "kind": "RayCronJob",
                "name": "nightly",
                "uid": "u-1",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
    assert job["spec"] == CRONJOB["spec"]["jobTemplate"]
    job["spec"]["entrypoint"] = "changed"
    assert CRONJOB["spec"]["jobTemplate"]["entrypoint"] == "python run.py", "a copy, not a view"
