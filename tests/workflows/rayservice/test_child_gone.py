"""Signalling an upgrade child that has just ended does not fail the RayService workflow.

Found by the fault suite: with slow activities the child can end while the parent is busy,
and the parent's next forward (a nudge, a goal change, an abort) was then answered "external
workflow not found", which failed the whole RayService workflow. The race cannot be timed
from a workflow test, so the parent's signalling step is driven directly, with a stand-in for
the child's handle (a test double: only its `signal` is used).
"""

from __future__ import annotations

from typing import Any

import pytest
from temporalio.exceptions import ApplicationError

from workflows.rayservice.upgrade_parent import UpgradingMixin


class _EndedChild:
    def __init__(self, error: ApplicationError) -> None:
        self.error = error
        self.sent: list[str] = []

    async def signal(self, name: str, _arg: Any) -> None:
        self.sent.append(name)
        raise self.error


async def test_a_child_that_ended_is_signalled_without_failing() -> None:
    parent = UpgradingMixin()
    child = _EndedChild(ApplicationError("not found", type="ExternalWorkflowExecutionNotFound"))
    parent._child = child  # type: ignore[assignment]
    await parent._signal_child("owned_changed", None)
    assert child.sent == ["owned_changed"]


async def test_other_signal_failures_still_fail() -> None:
    parent = UpgradingMixin()
    parent._child = _EndedChild(ApplicationError("boom", type="Other"))  # type: ignore[assignment]
    with pytest.raises(ApplicationError, match="boom"):
        await parent._signal_child("abort", None)
