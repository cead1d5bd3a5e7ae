"""Decode the API server's answers so that one object nested too deep never spoils the rest.

The API server keeps JSON nested up to 10,000 levels (Go's encoding/json limit), and the
parts of a CR that keep unknown fields take any shape. Python's `json` gives up near 1,000
levels, with `RecursionError`: its C scanner counts against the interpreter's recursion
limit. A list page, or a watch line, is one JSON text; so a single CR with a deep value in a
pod template used to fail the whole list it was in. The bridge lost every object of that kind
in every namespace (and on restart, listing again, it failed again), and a worker's read of
the CR raised an error no handler expected.

What happens instead, only when `json.loads` gives up on depth: one linear scan of the text
(string literals skipped whole, brackets counted) replaces every container that opens more
than `CUT_DEPTH` levels below the answer's root by a `NaN` literal, and the shortened text is
decoded with each `NaN` standing for `crds.nesting.TOO_DEEP`. Everything shallower survives:
every other item of the list, the list's resourceVersion, and the deep object's own metadata
and status. So that object can still be named in a log, its workflow signalled, its
finalizer removed; `crds.loading.parse_ray_object` refuses it with the path where it goes too
deep, and the marker serialises nowhere, so nothing passes the cut object on as if whole.

Not chosen: a higher recursion limit (moves the cliff onto the C stack, where overflowing
kills the process), smaller pages or bisecting a failed list (more requests, and the deep
object still fails its own page; the list's resourceVersion must come from one answer), and
skipping undecodable items (an object missing from a list reads as deleted). A Go server never
sends `NaN`; one in a non-standard answer is taken for a cut part (refused, never misread).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from typing import Any, Final

from activities.kube.errors import KubeUndecodable
from crds.constants import KINDS
from crds.nesting import MAX_NESTING, TOO_DEEP, TooDeep, shown_path
from crds.payloads import collector_paused

logger = logging.getLogger(__name__)

LARGE: Final = 64 * 1024
"""An answer this long is decoded with the garbage collector paused (`collector_paused`): a
1.5 MiB object of small lists took 190 ms to decode with it, 70 ms without, on the event loop."""

CUT_DEPTH: Final = MAX_NESTING + 2
"""Levels kept below an answer's root: a list item sits two levels down (the list, its
`items`), a watch event's object one; so no part an object may hold is ever cut."""

# A JSON string literal (escapes included), or one bracket.
_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)
_CUT: Final = "NaN"

Path = tuple[str | int, ...]


def decode(body: bytes | str) -> Any:
    """Decode an answer or a watch line, in part if it nests too deep for `json`.

    In part: its containers more than `CUT_DEPTH` levels down come back as `TOO_DEEP`, and
    each object that lost some is logged by kind and name. An empty answer is None.

    Raises:
        KubeUndecodable: If `body` is not JSON.
    """
    if not body or body.isspace():
        return None
    try:
        if len(body) < LARGE:
            return json.loads(body)
        with collector_paused():
            return json.loads(body)
    except RecursionError:
        pass
    except ValueError as err:
        raise KubeUndecodable(f"the API server's answer is not JSON: {err}") from err
    try:
        text = body.decode() if isinstance(body, bytes) else body
        answer = json.loads(_shortened(text), parse_constant=_constant)
    except (ValueError, RecursionError) as err:
        raise KubeUndecodable(f"the API server's answer is not JSON: {err}") from err
    _report(answer)
    return answer


def _shortened(text: str) -> str:
    """`text` with every container opening below `CUT_DEPTH` levels replaced by `_CUT`."""
    pieces: list[str] = []
    depth = 0
    kept = 0  # text[kept:] is still to be copied
    for token in _TOKENS.finditer(text):
        bracket = text[token.start()]
        if bracket == '"':
            continue
        if bracket in "[{":
            depth += 1
            if depth == CUT_DEPTH + 1:
                pieces.append(text[kept : token.start()])
        else:
            if depth == CUT_DEPTH + 1:
                pieces.append(_CUT)
                kept = token.end()
            depth -= 1
    if depth > CUT_DEPTH:
        raise ValueError("unbalanced brackets: the text ends inside a container")
    pieces.append(text[kept:])
    return "".join(pieces)


def _constant(name: str) -> TooDeep | float:
    return TOO_DEEP if name == _CUT else float(name)


def _report(answer: Any) -> None:
    """Log each object of an answer that had parts cut, by kind, namespace and name."""
    for obj, kind in _objects(answer):
        where = _first_cut(obj)
        if where is None:
            continue
        meta = obj.get("metadata") if isinstance(obj, dict) else None
        meta = meta if isinstance(meta, dict) else {}
        namespace, name = str(meta.get("namespace") or "-"), str(meta.get("name") or "?")
        identity = f"{kind.lower()}/{namespace}/{name}/{meta.get('uid')}"
        logger.warning(
            "%s %s/%s nests deeper than %d levels (at %s); decoded without its deeper parts",
            kind,
            namespace,
            name,
            MAX_NESTING,
            shown_path(where),
            # The CR's identity on JSON log lines (`runtime.logs`), as the bridge's lines carry.
            extra={"workflow_id": identity} if kind in KINDS and meta.get("uid") else None,
        )


def _objects(answer: Any) -> Iterator[tuple[Any, str]]:
    """The objects of an answer, with their kinds: a list's items, an event's object, or it."""
    own_kind = answer.get("kind") if isinstance(answer, dict) else None
    items = answer.get("items") if isinstance(answer, dict) else None
    if isinstance(items, list):
        list_kind = str(own_kind or "").removesuffix("List") or "object"
        for item in items:
            kind = item.get("kind") if isinstance(item, dict) else None
            yield item, str(kind or list_kind)
        return
    if isinstance(answer, dict) and "type" in answer and isinstance(answer.get("object"), dict):
        obj = answer["object"]
        yield obj, str(obj.get("kind") or "object")
        return
    yield answer, str(own_kind or "object")


def _first_cut(value: Any) -> Path | None:
    """The path of the first `TOO_DEEP` in `value`, if any (the depth is bounded by now)."""
    if not isinstance(value, dict | list):
        return None
    pending: list[tuple[Any, Path]] = [(value, ())]
    while pending:
        node, path = pending.pop()
        if node is TOO_DEEP:
            return path
        children = node.items() if isinstance(node, dict) else enumerate(node)
        pending += [
            (child, (*path, key))
            for key, child in children
            if child is TOO_DEEP or isinstance(child, dict | list)
        ]
    return None
