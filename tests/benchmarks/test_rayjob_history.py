"""A RayJob's history for a job of any length: bounded runs, each closed by a task of its own.

`benchmarks.rayjob_history` on the time-skipping test server, for a 10-second and a 10-hour
Ray job. No activity stays open while a job runs, so the workflow asks Ray on timers; past a
hundred-odd events it goes on in a new run. The workflow task that closes a run runs no local
activity: Temporal refuses a task that closes the run while a signal comes in (UnhandledCommand),
and with it the results of the calls it made, whose effects stand.
"""

from __future__ import annotations

import pytest

from benchmarks.rayjob_history import lifecycle
from tests.time_skipping import start_time_skipping

pytestmark = pytest.mark.timeout(300)

LONGEST_RUN = 130
"""Events a run may reach: the hundred after which it closes, and the pass that crossed it."""


@pytest.mark.parametrize("seconds", [10.0, 36_000.0], ids=["10s", "10h"])
async def test_every_run_is_bounded_and_closed_by_a_task_that_made_no_call(seconds: float) -> None:
    env = await start_time_skipping()
    try:
        counts, runs = await lifecycle(env, seconds)
    finally:
        await env.shutdown()
    assert counts["longest run"] <= LONGEST_RUN, counts
    assert (len(runs) > 1) == (seconds > 3600), counts
    for events in runs[:-1]:  # the last run was terminated, not continued
        kinds = [event.WhichOneof("attributes") for event in events]
        assert kinds[-1] == "workflow_execution_continued_as_new_event_attributes"
        last_task = max(
            i for i, kind in enumerate(kinds) if kind == "workflow_task_completed_event_attributes"
        )
        closing = kinds[last_task + 1 : -1]
        assert "marker_recorded_event_attributes" not in closing, closing
