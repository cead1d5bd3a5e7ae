"""JSON log lines name the CR they are about, for workflows, activities and the bridge.

A workflow with a CR workflow id runs on the real dev server while the worker's log setup
(`configure_logging("json")`, writing to a captured stderr) receives the lines of Temporal's
workflow and activity loggers, of a plain module logger called inside an activity, and the
SDK's own warning about a failed activity attempt.
"""

from __future__ import annotations

import io
import json
import logging
import sys
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from temporalio import activity, workflow
from temporalio.common import RetryPolicy
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from runtime.logs import CRIdentity, JSONFormatter, build_handler, configure_logging, identity_of

plain_logger = logging.getLogger("tests.worker.plain")


@activity.defn(name="log_things")
async def log_things(fail_first: bool) -> None:
    activity.logger.info("activity says hello")
    plain_logger.info("a helper module logs inside the activity")
    if fail_first and activity.info().attempt == 1:
        raise RuntimeError("first attempt fails")


@workflow.defn(name="LogsThings")
class LogsThings:
    @workflow.run
    async def run(self) -> None:
        workflow.logger.info("workflow says hello")
        await workflow.execute_activity(
            log_things,
            True,
            start_to_close_timeout=timedelta(seconds=10),
            retry_policy=RetryPolicy(initial_interval=timedelta(milliseconds=10)),
        )


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> Iterator[io.StringIO]:
    """The root logger's lines in JSON, as `configure_logging("json")` sets them up."""
    stream = io.StringIO()
    root = logging.getLogger()
    # configure_logging replaces the root's handlers; pytest's capture handlers come back.
    monkeypatch.setattr(root, "handlers", list(root.handlers))
    monkeypatch.setattr(activity.logger, "activity_info_on_message", True)
    monkeypatch.setattr(workflow.logger, "workflow_info_on_message", True)
    level = root.level
    monkeypatch.setattr(sys, "stderr", stream)
    configure_logging("json")
    try:
        yield stream
    finally:
        root.setLevel(level)


async def test_every_line_is_json_and_cr_lines_carry_the_identity(
    local_env: WorkflowEnvironment, task_queue: str, captured: io.StringIO
) -> None:
    uid = str(uuid.uuid4())
    workflow_id = f"rayjob/default/train/{uid}"
    async with Worker(
        local_env.client,
        task_queue=task_queue,
        workflows=[LogsThings],
        activities=[log_things],
        workflow_runner=UnsandboxedWorkflowRunner(),
    ):
        await local_env.client.execute_workflow(
            LogsThings.run, id=workflow_id, task_queue=task_queue
        )
    logging.getLogger("tests.worker").info("a line about no CR")

    lines = [json.loads(line) for line in captured.getvalue().splitlines()]
    identity = {
        "kind": "RayJob",
        "namespace": "default",
        "name": "train",
        "uid": uid,
        "workflow_id": workflow_id,
    }
    about_the_cr = {line["message"]: line for line in lines if "kind" in line}
    for message in (
        "workflow says hello",
        "activity says hello",
        "a helper module logs inside the activity",
        "Completing activity as failed",
    ):
        assert message in about_the_cr, [line["message"] for line in lines]
        line = about_the_cr[message]
        assert {key: line[key] for key in identity} == identity
        assert {"time", "level", "logger"} <= set(line)
    assert about_the_cr["a helper module logs inside the activity"]["logger"] == plain_logger.name
    assert "error" in about_the_cr["Completing activity as failed"]
    assert about_the_cr["activity says hello"]["temporal"]["activity_type"] == "log_things"
    assert about_the_cr["workflow says hello"]["temporal"]["workflow_type"] == "LogsThings"
    (plain,) = [line for line in lines if line["message"] == "a line about no CR"]
    assert "kind" not in plain and "workflow_id" not in plain


def record(**extra: Any) -> logging.LogRecord:
    made = logging.LogRecord("bridge.queueing", logging.WARNING, __file__, 1, "m %s", ("a",), None)
    made.__dict__.update(extra)
    return made


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        pytest.param(
            {"workflow_id": "raycluster/ns/c/u1"},
            {"kind": "RayCluster", "namespace": "ns", "name": "c", "uid": "u1"},
            id="bridge-extra",
        ),
        pytest.param(
            {"temporal_workflow": {"workflow_id": "rayservice/ns/s/u2/upgrade/1"}},
            {"kind": "RayService", "namespace": "ns", "name": "s", "uid": "u2"},
            id="child-workflow-of-a-cr",
        ),
        pytest.param({"workflow_id": "ping-1"}, {}, id="not-a-cr"),
    ],
)
def test_identity_from_the_workflow_id(extra: dict[str, Any], expected: dict[str, str]) -> None:
    made = record(**extra)
    assert CRIdentity().filter(made)
    line = json.loads(JSONFormatter().format(made))
    assert line["logger"] == "bridge.queueing" and line["message"] == "m a"
    assert {key: line[key] for key in expected} == expected
    assert ("kind" in line) == bool(expected)
    assert line["workflow_id"] == identity_of_or(extra)


def identity_of_or(extra: dict[str, Any]) -> str:
    workflow_id = extra.get("workflow_id") or extra["temporal_workflow"]["workflow_id"]
    found = identity_of(workflow_id)
    return found["workflow_id"] if found else str(workflow_id)


def test_text_lines_keep_the_logger_name() -> None:
    stream = io.StringIO()
    handler = build_handler("text", stream)
    handler.handle(record(workflow_id="rayjob/default/j/u"))
    assert " WARNING bridge.queueing: m a" in stream.getvalue()


def test_request_lines_of_httpx_are_left_out_at_info() -> None:
    """One line per dashboard poll of every running RayJob drowned the log at scale."""
    root, httpx_logger = logging.getLogger(), logging.getLogger("httpx")
    saved = (list(root.handlers), root.level, httpx_logger.level)
    try:
        configure_logging("text", logging.INFO)
        assert not httpx_logger.isEnabledFor(logging.INFO)
        assert httpx_logger.isEnabledFor(logging.WARNING)
        configure_logging("text", logging.DEBUG)
        assert httpx_logger.isEnabledFor(logging.DEBUG)
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
        httpx_logger.setLevel(saved[2])
