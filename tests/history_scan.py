"""Read a workflow history the way someone with database access would, or decode it fully.

Used by the encryption and secret-scan tests: the raw bytes are what the Temporal server
stores; the decoded bytes are every payload (inputs, results, signals, queries' memos,
failure messages moved into payloads) after our codec, as the worker sees them. Tests that
look at which activities a workflow ran use `activity_calls`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator

from google.protobuf.message import Message
from temporalio.api.common.v1 import Payload
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client
from temporalio.converter import PayloadCodec

LOCAL_ACTIVITY_MARKER = "core_local_activity"
"""The marker the SDK records for a local activity."""
PATCH_MARKER = "core_patch"


def payloads_in(message: Message) -> Iterator[Payload]:
    """Every `Payload` anywhere inside `message`, including inside maps and nested failures."""
    for field, value in message.ListFields():
        if field.message_type is None:
            continue
        if isinstance(value, Message):
            items = [value]
        elif field.message_type.GetOptions().map_entry:
            items = list(value.values())
        else:  # a repeated field
            items = list(value)
        for item in items:
            if isinstance(item, Payload):
                yield item
            elif isinstance(item, Message):
                yield from payloads_in(item)


async def raw_history(client: Client, workflow_id: str, run_id: str | None = None) -> bytes:
    """The serialized events of one run's history (the latest by default), nothing decoded."""
    history = await client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()
    return b"".join(event.SerializeToString() for event in history.events)


async def decoded_history(client: Client, workflow_id: str, codec: PayloadCodec | None) -> bytes:
    """The serialized events with every payload decoded by `codec` (None: as stored)."""
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    chunks = []
    for event in history.events:
        if codec is not None:
            for payload in payloads_in(event):
                (decoded,) = await codec.decode([payload])
                payload.CopyFrom(decoded)
        chunks.append(event.SerializeToString())
    return b"".join(chunks)


def activity_calls(events: Iterable[HistoryEvent]) -> tuple[list[str], list[str]]:
    """The activity types a history ran: scheduled through the server, and run locally (read
    from each local activity's marker: the SDK's data, not a payload of ours)."""
    scheduled: list[str] = []
    local: list[str] = []
    for event in events:
        if event.HasField("activity_task_scheduled_event_attributes"):
            scheduled.append(event.activity_task_scheduled_event_attributes.activity_type.name)
        marker = event.marker_recorded_event_attributes
        if marker.marker_name == LOCAL_ACTIVITY_MARKER:
            local.append(json.loads(marker.details["data"].payloads[0].data)["activity_type"])
    return scheduled, local


def patch_markers(events: Iterable[HistoryEvent]) -> list[str]:
    """The patch ids a history recorded, in order."""
    return [
        json.loads(event.marker_recorded_event_attributes.details["patch-data"].payloads[0].data)[
            "id"
        ]
        for event in events
        if event.marker_recorded_event_attributes.marker_name == PATCH_MARKER
    ]
