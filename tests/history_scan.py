"""Read a workflow history the way someone with database access would, or decode it fully.

Used by the encryption and secret-scan tests: the raw bytes are what the Temporal server
stores; the decoded bytes are every payload (inputs, results, signals, queries' memos,
failure messages moved into payloads) after our codec, as the worker sees them.
"""

from __future__ import annotations

from collections.abc import Iterator

from google.protobuf.message import Message
from temporalio.api.common.v1 import Payload
from temporalio.client import Client
from temporalio.converter import PayloadCodec


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
