"""HTTP glue for resource URLs: query parameters in, JSON or Table or a watch stream out.

The verbs themselves live in `handler`; this module reads what kube-apiserver reads from a
request (selectors, `limit`/`continue`, `fieldValidation`, `dryRun`, DeleteOptions, the
Accept header asking for a Table) and shapes the answer the same way.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from multidict import CIMultiDict

from devcluster import decoding, selectors, statuses, tables
from devcluster.handler import Handler, WriteOptions, WriteResult
from devcluster.kinds import Kind
from devcluster.watching import WatchRequest, WatchStream

JsonObject = dict[str, Any]
# (request, pod, container) -> the log response; the kubelet serves follow/previous/tailLines
LogServer = Callable[[web.Request, JsonObject, str], Awaitable[web.StreamResponse]]
_SUBRESOURCE_METHODS = {"status": {"GET", "PUT", "PATCH"}, "log": {"GET"}, "finalize": {"PUT"}}
_DEFAULT_WATCH_TIMEOUT = 1800.0


@dataclass(frozen=True)
class Target:
    """The resource a request addresses."""

    kind: Kind
    namespace: str
    name: str
    subresource: str
    watch: bool = False


def flag(query: Any, name: str) -> bool:
    """Read a boolean query parameter as Go's strconv.ParseBool does."""
    return query.get(name, "") in ("1", "t", "T", "true", "True", "TRUE")


def request_verb(method: str, target: Target, query: Any) -> str:
    """Return the Kubernetes verb of a request, as RBAC and audit name it."""
    if method == "GET":
        if target.watch or flag(query, "watch"):
            return "watch"
        return "get" if target.name else "list"
    if method == "DELETE":
        return "delete" if target.name else "deletecollection"
    return {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method, method.lower())


def _write_options(request: web.Request) -> WriteOptions:
    query = request.query
    validation = query.get("fieldValidation", "Warn")
    if validation not in ("Strict", "Warn", "Ignore"):
        raise statuses.bad_request(
            f'fieldValidation parameter unsupported: "{validation}"; supported values: '
            '"Ignore", "Strict", "Warn"'
        )
    return WriteOptions(
        field_validation=validation,
        dry_run=query.get("dryRun") == "All",
        field_manager=query.get("fieldManager", ""),
        force=flag(query, "force"),
    )


def _encode_continue(rv: int, namespace: str, name: str) -> str:
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": [namespace, name]})
    return base64.urlsafe_b64encode(raw.encode()).decode()


def _decode_continue(token: str) -> tuple[int, tuple[str, str]]:
    try:
        data = json.loads(base64.urlsafe_b64decode(token.encode()))
        namespace, name = data["start"]
        return int(data["rv"]), (str(namespace), str(name))
    except (binascii.Error, ValueError, KeyError, TypeError) as err:
        raise statuses.bad_request(f"continue key is not valid: {err}") from err


class Endpoints:
    """Per-verb HTTP handling for every kind."""

    def __init__(self, handler: Handler, bookmark_interval: float = 60.0) -> None:
        self.handler = handler
        self.bookmark_interval = bookmark_interval
        self.logs: LogServer | None = None
        self._watches: set[asyncio.Task[Any]] = set()

    async def close_watches(self) -> None:
        """End every open watch stream, as a server shutting down does."""
        for task in list(self._watches):
            task.cancel()
        for task in list(self._watches):
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def dispatch(
        self, request: web.Request, target: Target, cut_watch_after: float | None = None
    ) -> web.StreamResponse:
        """Serve one request on a resource URL."""
        kind, method = target.kind, request.method
        if target.subresource:
            allowed = _SUBRESOURCE_METHODS.get(target.subresource, set())
            if target.subresource not in kind.subresources or not allowed:
                raise statuses.not_found_path()
            if method not in allowed:
                raise statuses.method_not_allowed()
        if kind.namespaced and target.namespace == "" and (target.name or method == "POST"):
            raise statuses.not_found_path()
        verb = request_verb(method, target, request.query)
        if verb in ("watch", "list"):
            return await self._list_or_watch(request, target, verb, cut_watch_after)
        if verb == "get" and target.subresource == "log":
            return await self._log(request, target)
        if verb == "get":
            return self._get(request, target)
        if verb == "create":
            body = await self._body(request, kind)
            result = self.handler.create(
                kind,
                target.namespace,
                decoding.check_type_meta(kind, body),
                _write_options(request),
            )
            return self._render(request, kind, result)
        if verb == "update":
            body = decoding.check_type_meta(kind, await self._body(request, kind))
            result = self.handler.update(
                kind,
                target.namespace,
                target.name,
                target.subresource,
                body,
                _write_options(request),
            )
            return self._render(request, kind, result)
        if verb == "patch":
            return await self._patch(request, target)
        if verb == "delete":
            return await self._delete(request, target)
        if verb == "deletecollection":
            return await self._delete_collection(request, target)
        raise statuses.method_not_allowed()

    async def _body(self, request: web.Request, kind: Kind) -> Any:
        raw = await request.read()
        content_type = request.headers.get("Content-Type", "application/json").split(";")[0]
        return decoding.parse_body(raw, content_type.strip(), kind.kind)

    def _render(self, request: web.Request, kind: Kind, result: WriteResult) -> web.Response:
        body = self._shape(request, kind, result.obj)
        headers: CIMultiDict[str] = CIMultiDict({"Content-Type": "application/json"})
        for problem in result.warnings:
            headers.add("Warning", '299 - "' + problem.replace('"', '\\"') + '"')
        return web.Response(
            body=json.dumps(body, separators=(",", ":")).encode(),
            status=result.code,
            headers=headers,
        )

    @staticmethod
    def _shape(request: web.Request, kind: Kind, obj: JsonObject) -> JsonObject:
        accept = request.headers.get("Accept", "")
        if obj.get("kind") == "Status":
            return obj
        if "as=Table" in accept:
            include = request.query.get("includeObject", "Metadata")
            meta = {"resourceVersion": obj["metadata"].get("resourceVersion", "")}
            return tables.table(kind, [obj], meta, include)
        if "as=PartialObjectMetadata" in accept:
            return tables.partial_metadata(obj)
        return obj

    def _get(self, request: web.Request, target: Target) -> web.StreamResponse:
        obj = self.handler.get(target.kind, target.namespace, target.name)
        return self._render(request, target.kind, WriteResult(obj))

    async def _log(self, request: web.Request, target: Target) -> web.StreamResponse:
        pod = self.handler.get(target.kind, target.namespace, target.name)
        spec = pod.get("spec", {})
        containers = [c.get("name", "") for c in spec.get("containers") or []]
        container = request.query.get("container", "")
        name = container or (containers[0] if len(containers) == 1 else "")
        pod_name = pod["metadata"]["name"]
        if not name:
            raise statuses.bad_request(
                f"a container name must be specified for pod {pod_name}, choose one of: "
                f"[{' '.join(containers)}]"
            )
        known = containers + [c.get("name", "") for c in spec.get("initContainers") or []]
        if name not in known:
            raise statuses.bad_request(f"container {name} is not valid for pod {pod_name}")
        if self.logs is not None:
            return await self.logs(request, pod, name)
        if pod.get("status", {}).get("phase", "Pending") == "Pending":
            raise statuses.bad_request(
                f'container "{name}" in pod "{pod["metadata"]["name"]}" is waiting to start: '
                "ContainerCreating"
            )
        return web.Response(text="")

    def _matcher(self, request: web.Request, kind: Kind) -> selectors.Matcher:
        labels = selectors.parse_labels(request.query.get("labelSelector", ""))
        fields = selectors.parse_fields(request.query.get("fieldSelector", ""), kind.field_labels)
        return selectors.matcher(labels, fields) if labels or fields else selectors.match_all

    async def _list_or_watch(
        self, request: web.Request, target: Target, verb: str, cut_after: float | None
    ) -> web.StreamResponse:
        kind, query = target.kind, request.query
        matches = self._matcher(request, kind)
        if target.name:  # the legacy /watch/<plural>/<name> form
            name, inner = target.name, matches
            matches = lambda o: o["metadata"]["name"] == name and inner(o)  # noqa: E731
        if verb == "list":
            return self._list(request, kind, target.namespace, matches)
        rv = query.get("resourceVersion", "")
        initial = flag(query, "sendInitialEvents")
        since = None if rv in ("", "0") or initial else self._parse_rv(rv)
        timeout = float(query.get("timeoutSeconds") or _DEFAULT_WATCH_TIMEOUT)
        accept = request.headers.get("Accept", "")
        watch = WatchRequest(
            kind=kind,
            namespace=target.namespace,
            matches=matches,
            since=since,
            bookmarks=flag(query, "allowWatchBookmarks"),
            timeout=timeout,
            send_initial_bookmark=initial,
            table_include=query.get("includeObject", "Metadata") if "as=Table" in accept else None,
            cut_after=cut_after,
        )
        task = asyncio.current_task()
        assert task is not None
        self._watches.add(task)
        try:
            stream = WatchStream(self.handler.store, watch, self.bookmark_interval)
            return await stream.serve(request)
        finally:
            self._watches.discard(task)

    @staticmethod
    def _parse_rv(rv: str) -> int:
        if not rv.isdigit():
            raise statuses.bad_request(f'invalid resource version "{rv}"')
        return int(rv)

    def _list(
        self, request: web.Request, kind: Kind, namespace: str, matches: selectors.Matcher
    ) -> web.Response:
        query, store = request.query, self.handler.store
        items = [o for o in self.handler.list_served(kind, namespace) if matches(o)]
        list_rv = store.rv
        if token := query.get("continue"):
            list_rv, start = _decode_continue(token)
            if list_rv < store.compacted_rv:
                raise statuses.ApiError(
                    410,
                    "Expired",
                    "The provided continue parameter is too "
                    "old to display a consistent list result. You can start "
                    "a new list without the continue parameter.",
                )
            items = [o for o in items if _list_key(o) > start]
        meta: JsonObject = {"resourceVersion": str(list_rv)}
        limit = int(query.get("limit") or 0)
        if 0 < limit < len(items):
            last = items[limit - 1]["metadata"]
            meta["continue"] = _encode_continue(list_rv, last.get("namespace", ""), last["name"])
            meta["remainingItemCount"] = len(items) - limit
            items = items[:limit]
        accept = request.headers.get("Accept", "")
        if "as=Table" in accept:
            include = query.get("includeObject", "Metadata")
            return _json(tables.table(kind, items, meta, include))
        if "as=PartialObjectMetadataList" in accept:
            return _json(
                {
                    "kind": "PartialObjectMetadataList",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": meta,
                    "items": [tables.partial_metadata(o) for o in items],
                }
            )
        if not kind.custom:
            items = [{k: v for k, v in o.items() if k not in ("apiVersion", "kind")} for o in items]
        return _json(
            {
                "kind": f"{kind.kind}List",
                "apiVersion": kind.api_version,
                "metadata": meta,
                "items": items,
            }
        )

    async def _patch(self, request: web.Request, target: Target) -> web.Response:
        kind = target.kind
        content_type = request.headers.get("Content-Type", "").split(";")[0].strip()
        body = decoding.parse_body(await request.read(), content_type, kind.kind)
        result = self.handler.patch(
            kind,
            target.namespace,
            target.name,
            target.subresource,
            body,
            content_type,
            _write_options(request),
        )
        return self._render(request, kind, result)

    async def _delete_options(self, request: web.Request) -> JsonObject:
        raw = await request.read()
        options: JsonObject = {}
        if raw.strip():
            parsed = decoding.parse_body(raw, "application/json", "DeleteOptions")
            if not isinstance(parsed, dict):
                raise statuses.bad_request("the DeleteOptions body must be an object")
            options.update(parsed)
        for key in ("propagationPolicy", "gracePeriodSeconds"):
            if key in request.query:
                options[key] = request.query[key]
        if "orphanDependents" in request.query:
            options["orphanDependents"] = flag(request.query, "orphanDependents")
        return options

    async def _delete(self, request: web.Request, target: Target) -> web.Response:
        options = await self._delete_options(request)
        dry_run = request.query.get("dryRun") == "All" or options.get("dryRun") == ["All"]
        result = self.handler.delete(target.kind, target.namespace, target.name, options, dry_run)
        return self._render(request, target.kind, result)

    async def _delete_collection(self, request: web.Request, target: Target) -> web.Response:
        kind = target.kind
        options = await self._delete_options(request)
        matches = self._matcher(request, kind)
        deleted = []
        for obj in [o for o in self.handler.list_served(kind, target.namespace) if matches(o)]:
            meta = obj["metadata"]
            try:
                result = self.handler.delete(kind, meta.get("namespace", ""), meta["name"], options)
            except statuses.ApiError as err:
                if err.code != 404:
                    raise
                continue
            deleted.append(result.obj)
        return _json(
            {
                "kind": f"{kind.kind}List",
                "apiVersion": kind.api_version,
                "metadata": {"resourceVersion": str(self.handler.store.rv)},
                "items": deleted,
            }
        )


def _list_key(obj: JsonObject) -> tuple[str, str]:
    meta = obj["metadata"]
    return meta.get("namespace", ""), meta["name"]


def _json(body: JsonObject) -> web.Response:
    return web.Response(
        body=json.dumps(body, separators=(",", ":")).encode(),
        headers={"Content-Type": "application/json"},
    )
