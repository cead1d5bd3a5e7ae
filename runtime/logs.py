"""Log lines of the worker and the bridge: text for people, or JSON for a log pipeline.

Every line about a CR names it. The workflow id is the CR's identity
(`<kind>/<namespace>/<name>/<uid>`), and a line logged about a CR knows its
workflow id in one of three ways: Temporal's `workflow.logger` and `activity.logger` put it in
the record's `temporal_workflow` / `temporal_activity` extra; any other logger called while
an activity runs can ask `activity.info()`; and the bridge passes `extra={"workflow_id": …}`.
`CRIdentity` turns that into a `cr` attribute on the record (`kind`, `namespace`, `name`,
`uid`, `workflow_id`; not attributes of their own, as `name` is the logger's), which the
JSON formatter writes as top-level fields and the text one ignores.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Literal, TextIO

from temporalio import activity, workflow

from crds.constants import KINDS

LogFormat = Literal["text", "json"]

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

_KINDS = {kind.lower(): kind for kind in KINDS}
IDENTITY_FIELDS = ("kind", "namespace", "name", "uid", "workflow_id")
"""The JSON fields of a line about a CR (the keys of the record's `cr` attribute)."""


def identity_of(workflow_id: str) -> dict[str, str] | None:
    """The CR a workflow id names, or None for a workflow that is not about one CR.

    Args:
        workflow_id: E.g. `rayjob/default/train/6f1c…`, or a child workflow's id under
            its CR's (`rayservice/default/serve/6f1c…/upgrade/1`).

    Returns:
        `kind` (KubeRay's spelling), `namespace`, `name`, `uid` and `workflow_id`.
    """
    parts = workflow_id.split("/")
    if len(parts) < 4 or parts[0] not in _KINDS or not all(parts[:4]):
        return None
    kind, namespace, name, uid = parts[:4]
    return {
        "kind": _KINDS[kind],
        "namespace": namespace,
        "name": name,
        "uid": uid,
        "workflow_id": workflow_id,
    }


def _workflow_id(record: logging.LogRecord) -> str | None:
    for key in ("temporal_workflow", "temporal_activity"):
        details = getattr(record, key, None)
        if isinstance(details, Mapping) and isinstance(details.get("workflow_id"), str):
            return str(details["workflow_id"])
    given = getattr(record, "workflow_id", None)
    if isinstance(given, str):
        return given
    if activity.in_activity():
        return activity.info().workflow_id
    return None


class CRIdentity(logging.Filter):
    """Adds the identity of the CR a line is about to the record; never drops a line."""

    def filter(self, record: logging.LogRecord) -> bool:
        """See base class."""
        workflow_id = _workflow_id(record)
        if workflow_id:
            record.cr = identity_of(workflow_id) or {"workflow_id": workflow_id}
        return True


class JSONFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, the CR and any error."""

    def format(self, record: logging.LogRecord) -> str:
        """See base class."""
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        identity = getattr(record, "cr", None)
        if isinstance(identity, Mapping):
            line.update({key: identity[key] for key in IDENTITY_FIELDS if key in identity})
        for key in ("temporal_workflow", "temporal_activity"):
            details = getattr(record, key, None)
            if isinstance(details, Mapping):
                line["temporal"] = dict(details)
        if record.exc_info:
            line["error"] = self.formatException(record.exc_info)
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        return json.dumps(line, default=str, ensure_ascii=False)


def build_handler(log_format: LogFormat, stream: TextIO | None = None) -> logging.Handler:
    """A handler writing `log_format` lines to `stream`, with the CR identity filter.

    Args:
        log_format: `text` or `json`.
        stream: Where to write; stderr by default.

    Returns:
        The handler, not yet attached to any logger.
    """
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.addFilter(CRIdentity())
    json_lines = log_format == "json"
    handler.setFormatter(JSONFormatter() if json_lines else logging.Formatter(TEXT_FORMAT))
    return handler


def configure_logging(log_format: LogFormat, level: int = logging.INFO) -> None:
    """Send the root logger's lines to stderr in `log_format` (replacing its handlers).

    Args:
        log_format: The `KUBERAY_TEMPORAL_LOG_FORMAT` setting.
        level: The root logger's level.
    """
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(build_handler(log_format))
    root.setLevel(level)
    # httpx logs every request at INFO: one line per dashboard poll of every running RayJob.
    # Our activities log what they decide and the requests are in traces; DEBUG shows them.
    logging.getLogger("httpx").setLevel(logging.WARNING if level > logging.DEBUG else level)
    # Temporal's loggers append their details to the message as a dict's repr; JSON lines
    # carry them as fields (`temporal`, and the CR's), so the message stays the message.
    json_lines = log_format == "json"
    activity.logger.activity_info_on_message = not json_lines
    workflow.logger.workflow_info_on_message = not json_lines
