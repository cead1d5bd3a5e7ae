"""Watch streams: initial state or resume from a resourceVersion, then live events.

The stream follows kube-apiserver's contract: `resourceVersion` unset or "0" starts with an
ADDED event per existing object; a resourceVersion resumes after it from the store's kept
history (also across restarts), and one older than that history gets a single ERROR event
carrying a 410 Expired Status. Selector changes turn MODIFIED into ADDED or DELETED as seen
through the selector. Bookmarks are sent while the stream is idle, only when every event up
to the bookmarked resourceVersion has been considered for this stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from devcluster import statuses, tables
from devcluster.kinds import Kind
from devcluster.selectors import Matcher
from devcluster.store import Event, Store

JsonObject = dict[str, Any]
INITIAL_EVENTS_END = "k8s.io/initial-events-end"


@dataclass(frozen=True)
class WatchRequest:
    """What one watch asks for."""

    kind: Kind
    namespace: str
    matches: Matcher
    since: int | None  # None: start with the current state
    bookmarks: bool
    timeout: float
    send_initial_bookmark: bool = False
    table_include: str | None = None  # set when the client asked for Table rows
    cut_after: float | None = None  # fault injection: end the stream early


def _through_selector(event: Event, request: WatchRequest) -> str | None:
    """Return the event type this stream should see, or None to skip the event."""
    if event.resource != request.kind.storage_key:
        return None
    namespace = request.namespace
    if namespace and event.obj["metadata"].get("namespace") != namespace:
        return None
    now = request.matches(event.obj)
    if event.type != "MODIFIED" or event.old is None:
        return event.type if now else None
    before = request.matches(event.old)
    if now and before:
        return "MODIFIED"
    if now:
        return "ADDED"
    return "DELETED" if before else None


def encode(request: WatchRequest, event_type: str, event: Event) -> bytes:
    """Return one line of the stream for an event."""
    kind = request.kind
    if request.table_include is not None:
        served = {**event.obj, "apiVersion": kind.api_version}
        body = json.dumps(
            tables.table(kind, [served], {"resourceVersion": str(event.rv)}, request.table_include),
            separators=(",", ":"),
        )
    elif event.obj.get("apiVersion") == kind.api_version:
        body = event.encoded_object()
    else:
        served = {**event.obj, "apiVersion": kind.api_version}
        body = json.dumps(served, separators=(",", ":"))
    return f'{{"type":"{event_type}","object":{body}}}\n'.encode()


def bookmark(kind: Kind, rv: int, initial_end: bool = False) -> bytes:
    """Return a BOOKMARK line carrying only a resourceVersion."""
    meta: JsonObject = {"resourceVersion": str(rv)}
    if initial_end:
        meta["annotations"] = {INITIAL_EVENTS_END: "true"}
    obj = {"kind": kind.kind, "apiVersion": kind.api_version, "metadata": meta}
    return (json.dumps({"type": "BOOKMARK", "object": obj}, separators=(",", ":")) + "\n").encode()


def expired_line(since: int, oldest: int) -> bytes:
    """Return the ERROR line a watch from a compacted resourceVersion gets."""
    status = statuses.gone(f"too old resource version: {since} ({oldest + 1})").body()
    return (json.dumps({"type": "ERROR", "object": status}) + "\n").encode()


class WatchStream:
    """One client's watch: subscribes to the store, then writes events until it ends."""

    def __init__(self, store: Store, request: WatchRequest, bookmark_interval: float) -> None:
        self._store = store
        self._request = request
        self._interval = bookmark_interval
        self._queue: asyncio.Queue[Event] = asyncio.Queue()

    def _listen(self, event: Event) -> None:
        self._queue.put_nowait(event)

    def _backlog(self) -> list[Event] | None:
        request = self._request
        if request.since is None:
            items = self._store.objects(request.kind.storage_key, request.namespace or None)
            return [
                Event("ADDED", int(o["metadata"]["resourceVersion"]), request.kind.storage_key, o)
                for o in items
            ]
        return self._store.history_since(request.since)

    async def serve(self, http: web.Request) -> web.StreamResponse:
        """Write the stream to an HTTP response until timeout, cut or disconnect."""
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.enable_chunked_encoding()
        # Subscribe and take the backlog in one step: no event can fall between them.
        backlog = self._backlog()
        start_rv = self._store.rv
        self._store.add_listener(self._listen)
        try:
            await response.prepare(http)
            if backlog is None:
                assert self._request.since is not None
                await response.write(expired_line(self._request.since, self._store.compacted_rv))
                return response
            await self._send_backlog(response, backlog, start_rv)
            await self._follow(response)
        except ConnectionResetError:
            return response
        finally:
            self._store.remove_listener(self._listen)
        with contextlib.suppress(ConnectionResetError):
            await response.write_eof()
        return response

    async def _send_backlog(
        self, response: web.StreamResponse, backlog: list[Event], start_rv: int
    ) -> None:
        request = self._request
        chunk = bytearray()
        for event in backlog:
            event_type = _through_selector(event, request)
            if event_type is not None:
                chunk += encode(request, event_type, event)
            if len(chunk) > 1 << 16:
                await response.write(bytes(chunk))
                chunk.clear()
        if request.send_initial_bookmark and request.bookmarks:
            chunk += bookmark(request.kind, start_rv, initial_end=True)
        if chunk:
            await response.write(bytes(chunk))

    async def _follow(self, response: web.StreamResponse) -> None:
        request = self._request
        loop = asyncio.get_running_loop()
        deadline = loop.time() + request.timeout
        if request.cut_after is not None:
            deadline = min(deadline, loop.time() + request.cut_after)
        while (remaining := deadline - loop.time()) > 0:
            wait = min(remaining, self._interval) if request.bookmarks else remaining
            try:
                event = await asyncio.wait_for(self._queue.get(), timeout=wait)
            except TimeoutError:
                if request.bookmarks and self._queue.empty():
                    await response.write(bookmark(request.kind, self._store.rv))
                continue
            chunk = bytearray()
            for item in [event, *self._drain()]:
                event_type = _through_selector(item, request)
                if event_type is not None:
                    chunk += encode(request, event_type, item)
            if chunk:
                await response.write(bytes(chunk))

    def _drain(self) -> list[Event]:
        items = []
        while not self._queue.empty():
            items.append(self._queue.get_nowait())
        return items
