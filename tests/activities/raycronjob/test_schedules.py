"""What a RayCronJob's Schedule is made of (the Schedule itself runs in the workflow tests)."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from temporalio.client import (
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleOverlapPolicy,
    ScheduleSpec,
    ScheduleState,
)
from temporalio.testing import WorkflowEnvironment

from activities.raycronjob.contract import ScheduleWanted
from activities.raycronjob.schedules import build_schedule, catchup_window, temporal_cron
from crds.refs import ObjectRef

ROBFIG_ONLY = ["0 0 ? * MON", "?/10 * * * *", "*-5 * * * *", "0 0 ?-3 * *", "1,,2 * * * *"]


@pytest.mark.parametrize(
    ("kuberay", "temporal"),
    [
        ("*/15 * * * *", "*/15 * * * *"),
        ("0 3 * jan-mar mon-fri", "0 3 * jan-mar mon-fri"),
        ("@every 1h30m", "@every 1h30m"),
        ("@daily", "@daily"),
        # robfig/cron's own spellings, which Temporal's parser refuses as they are.
        ("0 0 ? * MON", "0 0 * * MON"),
        ("?/10 * * * *", "*/10 * * * *"),
        ("*-5 * * * *", "0-5 * * * *"),
        ("0 0 ?-3 * *", "0 0 1-3 * *"),
        ("1,,2 * * * *", "1,2 * * * *"),
    ],
)
def test_kuberay_schedules_are_written_the_way_temporal_reads_them(
    kuberay: str, temporal: str
) -> None:
    assert temporal_cron(kuberay) == temporal


async def test_the_temporal_server_takes_them(local_env: WorkflowEnvironment) -> None:
    for schedule in ROBFIG_ONLY:
        action = ScheduleActionStartWorkflow("W", id=f"w-{uuid.uuid4()}", task_queue="none")
        spec = ScheduleSpec(cron_expressions=[temporal_cron(schedule)])
        handle = await local_env.client.create_schedule(
            f"s-{uuid.uuid4()}", Schedule(action=action, spec=spec)
        )
        try:
            found = await handle.describe()
            assert found.info.next_action_times, schedule
        finally:
            await handle.delete()


def test_the_schedule_holds_the_times_as_temporal_reads_them() -> None:
    ref = ObjectRef(kind="RayCronJob", namespace="ns", name="nightly", uid="u")
    wanted = ScheduleWanted(cron="0 3 ? * MON", time_zone="Asia/Taipei", catchup_seconds=600)
    schedule = build_schedule(ref, wanted, ScheduleState(paused=True), "kuberay")
    assert schedule.spec.cron_expressions == ["0 3 * * MON"]
    assert schedule.spec.time_zone_name == "Asia/Taipei"
    assert schedule.policy.catchup_window == timedelta(minutes=10)
    assert schedule.policy.overlap == ScheduleOverlapPolicy.ALLOW_ALL
    assert schedule.state.paused
    action = schedule.action
    assert isinstance(action, ScheduleActionStartWorkflow)
    assert (action.workflow, action.id, action.task_queue) == (
        "RayCronJobFiring",
        "raycronjob-firing/ns/nightly/u",
        "kuberay",
    )


@pytest.mark.parametrize(
    ("cron", "annotation", "window"),
    [
        # 100 ticks at most, both ends of the window counted: 99 gaps.
        pytest.param("* * * * *", None, timedelta(minutes=99), id="every-minute"),
        pytest.param("@every 90s", None, timedelta(seconds=99 * 90), id="every-90s"),
        pytest.param("0 3 * * *", None, timedelta(hours=99 * 23), id="daily"),
        pytest.param("* * * * *", 600, timedelta(minutes=10), id="the-annotation-narrows"),
        pytest.param("* * * * *", 86_400, timedelta(minutes=99), id="but-never-widens"),
    ],
)
def test_missed_ticks_are_made_up_a_hundred_at_most(
    cron: str, annotation: int | None, window: timedelta
) -> None:
    wanted = ScheduleWanted(cron=cron, catchup_seconds=annotation)
    assert catchup_window(wanted) == window
    # Temporal's own catch-up after an outage is held to the same window.
    ref = ObjectRef(kind="RayCronJob", namespace="ns", name="c", uid="u")
    schedule = build_schedule(ref, wanted, ScheduleState(), "kuberay")
    assert schedule.policy.catchup_window == window
