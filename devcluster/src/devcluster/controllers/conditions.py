"""Status conditions as controllers keep them: one per type, times moved only on change.

A controller that stamped `lastUpdateTime` on every pass would write a new status each time,
and its own status event would wake it again, forever. Kubernetes keeps a condition's times
unless its status, reason or message changes; `merged` does the same.
"""

from __future__ import annotations

from typing import Any

JsonObject = dict[str, Any]
_SAME = ("status", "reason", "message")


def condition(kind: str, status: bool, reason: str, message: str, stamp: str) -> JsonObject:
    """Return a condition with both time fields set to `stamp`."""
    return {
        "type": kind,
        "status": "True" if status else "False",
        "lastUpdateTime": stamp,
        "lastTransitionTime": stamp,
        "reason": reason,
        "message": message,
    }


def merged(old: list[JsonObject], new: list[JsonObject]) -> list[JsonObject]:
    """Return `new`, keeping an old condition where nothing but its times would change."""
    by_type = {c.get("type"): c for c in old}
    out = []
    for cond in new:
        previous = by_type.get(cond["type"])
        if previous is not None and all(previous.get(k) == cond.get(k) for k in _SAME):
            out.append(previous)
        elif previous is not None and previous.get("status") == cond["status"]:
            out.append({**cond, "lastTransitionTime": previous.get("lastTransitionTime")})
        else:
            out.append(cond)
    return out
