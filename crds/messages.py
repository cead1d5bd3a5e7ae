"""How much of a CR's own text a message about it may carry.

Violation messages quote what the user wrote, so that it can be found in the manifest, and they
travel far: into the workflow's history, the CR's status and a Kubernetes Event, each of which
has a size limit. A CR's strings are bounded only by the size of the object (a schedule of a
megabyte is a valid string), so every value a message quotes is clipped (`quoted`), and every
message written to a status or an Event is clipped as a whole (`clipped`), however many
violations it lists.
"""

from __future__ import annotations

QUOTE_LIMIT = 80
"""Characters of a CR value quoted in a message: enough to recognise it."""

EVENT_MESSAGE_LIMIT = 1024
"""Bytes of an Event's message: the `note` limit of events.k8s.io/v1, the API KubeRay v1.7's
recorder writes through (the API server refuses a longer one there)."""

STATUS_MESSAGE_LIMIT = 32768
"""Bytes of a message in a CR's status: `maxLength` of metav1.Condition's message in KubeRay's
CRDs, so a status written here would be accepted under theirs."""

_ELLIPSIS = "…"
_ELLIPSIS_BYTES = len(_ELLIPSIS.encode())


def quoted(value: object, limit: int = QUOTE_LIMIT) -> str:
    """`repr(value)` for a message, clipped to `limit` characters and marked with "…".

    A string is clipped before it is quoted, so the quotes stay balanced.
    """
    if isinstance(value, str):
        shown = repr(value[:limit])
        return shown + _ELLIPSIS if len(value) > limit else shown
    try:
        shown = repr(value)
    except ValueError:
        # An integer of more than 4,300 digits has no repr (Python's guard against slow
        # conversions); a YAML file can hold one.
        return "an integer too long to show"
    return shown[:limit] + _ELLIPSIS if len(shown) > limit else shown


def clipped(text: str, limit: int) -> str:
    """`text` cut to at most `limit` bytes of UTF-8, ending in "…" when it was cut.

    Cut between characters, never inside one; a text that fits is returned unchanged, so
    clipping twice gives what clipping once gave.
    """
    if len(text) * 4 <= limit:  # no character takes more than 4 bytes
        return text
    data = text.encode()
    if len(data) <= limit:
        return text
    kept = data[: max(limit - _ELLIPSIS_BYTES, 0)].decode(errors="ignore")
    return kept + _ELLIPSIS
