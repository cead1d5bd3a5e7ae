"""What the three workflow test harnesses share: one CR's workflow started, signalled, queried."""

from __future__ import annotations

import contextlib
import uuid
from typing import Any, ClassVar

from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHandle
from temporalio.service import RPCError, RPCStatusCode
from temporalio.testing import WorkflowEnvironment

from crds.refs import ObjectRef
from workflows import messages

_SIGNAL_ATTEMPTS = 5
_COMPLETED = "Completed workflow"


class EntityHarness:
    """One CR named `name` and its workflow on `queue`; subclasses name the workflow."""

    kind: ClassVar[str]
    run: ClassVar[Any]  # the workflow's run method
    input_type: ClassVar[Any]  # its input model, built from `ref` and the start parameters

    def __init__(self, env: WorkflowEnvironment, name: str, queue: str) -> None:
        self.env, self.queue = env, queue
        self.ref = ObjectRef(kind=self.kind, namespace="default", name=name, uid=str(uuid.uuid4()))
        self.handle: WorkflowHandle[Any, Any] | None = None

    async def start(self, **params: Any) -> WorkflowHandle[Any, Any]:
        self.handle = await self.env.client.start_workflow(
            type(self).run,
            self.input_type(ref=self.ref, **params),
            id=self.ref.workflow_id,
            task_queue=self.queue,
        )
        return self.handle

    async def signal(self, name: str, arg: Any) -> None:
        await self.send_as_typed(name, arg)

    async def send_as_typed(self, name: str, *inputs: Any) -> None:
        """Send a signal with these inputs, or none, as the Temporal UI and CLI can."""
        assert self.handle is not None
        await signal_current_run(self.handle, name, list(inputs))

    async def task_failures(self) -> int:
        """How many workflow tasks failed so far (a handler that raised, for one)."""
        assert self.handle is not None
        failed = EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED
        return len([e async for e in self.handle.fetch_history_events() if e.event_type == failed])

    async def progress(self) -> messages.Progress:
        assert self.handle is not None
        return await self.handle.query(messages.PROGRESS, result_type=messages.Progress)

    async def terminate(self) -> None:
        """End the workflow if it runs: entity workflows never end on their own, and a
        leftover one would hold the time-skipping clock back for the tests after this one."""
        if self.handle is not None:
            with contextlib.suppress(RPCError):
                await self.handle.terminate("test finished")


async def signal_current_run(handle: WorkflowHandle[Any, Any], name: str, args: list[Any]) -> None:
    """Signal the workflow's current run, again if it just continued as new.

    The time-skipping server answers "Completed workflow" to a signal that reaches a run in
    the moment it continues as new (a real server hands such a signal to the new run); the
    next attempt finds the new run.
    """
    for _ in range(_SIGNAL_ATTEMPTS - 1):
        try:
            await handle.signal(name, args=args)
            return
        except RPCError as err:
            if err.status != RPCStatusCode.NOT_FOUND or _COMPLETED not in err.message:
                raise
    await handle.signal(name, args=args)
