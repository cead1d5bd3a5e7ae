"""Recorded histories replay against the current workflow code (determinism guard).

A failure here means a change would break runs recorded before it. Until a first release no
run outside the tests exists to keep, so a change to a workflow re-records its histories
(`python -m tests.workflows.record_histories <name>`) instead of adding a `workflow.patched()`.

Each replays in the runner the worker uses (no sandbox) and in the strict sandbox the workflow
tests run. The replayer carries the worker's tracing interceptor, as a worker with OTEL_* variables
does: tracing must neither change the commands nor record a span while replaying. (A history
recorded with tracing headers is replayed in `tests/worker/test_tracing_stack.py`.)
"""

from __future__ import annotations

from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from runtime.telemetry import tracing_to
from worker.running import build_workflow_runner, strict_sandbox_runner
from workflows.registry import WORKFLOWS

HISTORIES = sorted((Path(__file__).parent / "histories").glob("*.json"))
TEXTS = {path.stem: path.read_text() for path in HISTORIES}


def test_there_are_histories_to_replay() -> None:
    assert HISTORIES, "no recorded histories: run python -m tests.workflows.record_histories"


@pytest.mark.parametrize("strict", [True, False], ids=["strict-sandbox", "worker-runner"])
@pytest.mark.parametrize("name", sorted(TEXTS))
async def test_history_replays(name: str, strict: bool) -> None:
    history = WorkflowHistory.from_json(name, TEXTS[name])
    spans = InMemorySpanExporter()
    replayer = Replayer(
        workflows=WORKFLOWS,
        data_converter=pydantic_data_converter,
        workflow_runner=strict_sandbox_runner() if strict else build_workflow_runner(),
        interceptors=tracing_to(spans, "replayer").interceptors(),
    )
    await replayer.replay_workflow(history)
    assert spans.get_finished_spans() == ()


@pytest.mark.parametrize("name", sorted(TEXTS))
def test_a_history_names_no_path_of_the_machine_that_recorded_it(name: str) -> None:
    """A failure's stack trace is kept relative to the checkout or the installed packages."""
    assert 'File \\"/' not in TEXTS[name]
