"""What a RayCronJob's Schedule should say after each pass, and the Events that go with it."""

from __future__ import annotations

from datetime import UTC, datetime

from activities.raycronjob.contract import (
    CronJobSnapshot,
    ScheduleWanted,
    SyncScheduleAction,
    SyncScheduleResult,
)
from crds.refs import ObjectRef
from workflows.raycronjob.decisions import (
    INVALID,
    NOTE_INVALID,
    NOTE_SUSPENDED,
    SCHEDULED,
    SUSPENDED,
    plan_pass,
    skipped_message,
)
from workflows.raycronjob.state import RayCronJobState, Synced

REF = ObjectRef(kind="RayCronJob", namespace="ns", name="cron", uid="u")
CREATED = datetime(2026, 12, 5, 0, 0, 30, tzinfo=UTC)
LAST = datetime(2026, 12, 5, 0, 5, tzinfo=UTC)
EVERY_MINUTE = ScheduleWanted(cron="* * * * *")


def snap(**fields: object) -> CronJobSnapshot:
    base: dict[str, object] = {"generation": 1, "wanted": EVERY_MINUTE, "created_at": CREATED}
    return CronJobSnapshot.model_validate(base | fields)


def test_the_first_pass_creates_a_running_schedule_made_up_from_the_creation() -> None:
    step = plan_pass(REF, snap(), RayCronJobState())
    assert step.headline == SCHEDULED
    assert step.sync is not None
    assert (step.sync.wanted, step.sync.paused, step.sync.since) == (EVERY_MINUTE, False, CREATED)
    assert step.synced == Synced(wanted=EVERY_MINUTE, paused=False)
    assert (step.invalid_message, step.suspended_event) == (None, False)


def test_made_up_ticks_start_after_the_last_scheduled_one() -> None:
    step = plan_pass(REF, snap(last_schedule_time=LAST), RayCronJobState())
    assert step.sync is not None and step.sync.since == LAST


def test_nothing_is_written_when_the_schedule_already_says_it() -> None:
    state = RayCronJobState(synced=Synced(wanted=EVERY_MINUTE, paused=False), headline=SCHEDULED)
    assert plan_pass(REF, snap(generation=2), state).sync is None
    # A resync from the bridge writes it anyway (someone may have deleted it by hand).
    state.resync = True
    assert plan_pass(REF, snap(generation=2), state).sync is not None


def test_an_edit_of_the_times_rewrites_the_schedule() -> None:
    state = RayCronJobState(synced=Synced(wanted=EVERY_MINUTE, paused=False), headline=SCHEDULED)
    taipei = ScheduleWanted(cron="45 21 * * *", time_zone="Asia/Taipei")
    step = plan_pass(REF, snap(generation=2, wanted=taipei), state)
    assert step.sync is not None and step.sync.wanted == taipei and not step.sync.paused


def test_suspend_pauses_and_records_the_event_once() -> None:
    state = RayCronJobState(synced=Synced(wanted=EVERY_MINUTE, paused=False), headline=SCHEDULED)
    step = plan_pass(REF, snap(suspend=True), state)
    assert step.headline == SUSPENDED and step.suspended_event
    assert step.sync is not None and step.sync.paused and step.sync.note == NOTE_SUSPENDED
    state.synced, state.headline = step.synced, step.headline
    again = plan_pass(REF, snap(suspend=True), state)
    assert again.sync is None and not again.suspended_event


def test_a_raycronjob_created_suspended_gets_a_paused_schedule() -> None:
    step = plan_pass(REF, snap(suspend=True), RayCronJobState())
    assert step.sync is not None and step.sync.paused and step.suspended_event


def test_an_invalid_spec_pauses_the_old_times_and_warns_once_per_generation() -> None:
    state = RayCronJobState(synced=Synced(wanted=EVERY_MINUTE, paused=False), headline=SCHEDULED)
    bad = snap(generation=3, wanted=None, violations=["spec.schedule: not a cron schedule"])
    step = plan_pass(REF, bad, state)
    assert step.headline == INVALID
    assert step.sync is not None
    assert (step.sync.wanted, step.sync.paused, step.sync.note) == (None, True, NOTE_INVALID)
    assert step.synced == Synced(wanted=EVERY_MINUTE, paused=True, note=NOTE_INVALID)
    assert step.invalid_message == "ns/cron: spec.schedule: not a cron schedule"
    state.synced, state.headline, state.reported_generation = step.synced, INVALID, 3
    again = plan_pass(REF, bad, state)
    assert again.sync is None and again.invalid_message is None
    fixed = plan_pass(REF, snap(generation=4), state)
    assert fixed.sync is not None and not fixed.sync.paused and fixed.sync.wanted == EVERY_MINUTE


def test_skipped_ticks_are_told_with_where_the_made_up_ones_begin() -> None:
    made_up = datetime(2026, 12, 5, 0, 21, 30, 250000, tzinfo=UTC)
    result = SyncScheduleResult(action=SyncScheduleAction.UPDATED, made_up=made_up, skipped=80)
    assert skipped_message(REF, result) == (
        "ns/cron: 80 missed ticks before 2026-12-05T00:21:30Z were skipped; only those since "
        "are made up (the newest 100 at most, and none older than the "
        "kuberay-temporal.io/catchup-window annotation allows)"
    )
    counted_out = result.model_copy(update={"skipped": 1000})
    assert "ns/cron: 1,000 or more missed ticks before" in (skipped_message(REF, counted_out) or "")
    # Every missed tick made up, or nothing to make up: nothing to tell.
    assert skipped_message(REF, result.model_copy(update={"skipped": 0})) is None
    assert skipped_message(REF, SyncScheduleResult(action=SyncScheduleAction.CREATED)) is None
