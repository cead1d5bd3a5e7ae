"""Label and field selectors, parsed once per request and matched per object.

The grammar is kube-apiserver's: labels take `=`, `==`, `!=`, `in`, `notin`, existence and
`!key`; fields take `=`, `==` and `!=` on the field labels a kind supports, and an unsupported
field label is a 400 as on a real server.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from devcluster import statuses

JsonObject = dict[str, Any]
Matcher = Callable[[JsonObject], bool]

_SET_TERM = re.compile(r"^\s*(!?)\s*([^\s=!(),]+)\s*(?:(in|notin)\s*\(([^)]*)\))?\s*$")
_OP_TERM = re.compile(r"^\s*([^\s=!(),]+)\s*(==|=|!=)\s*([^\s,]*)\s*$")


@dataclass(frozen=True)
class Requirement:
    """One term of a selector: key, operator and values."""

    key: str
    operator: str  # in, notin, exists, !exists
    values: frozenset[str] = frozenset()

    def matches(self, value: str | None) -> bool:
        """Return whether a looked-up value satisfies the term."""
        if self.operator == "exists":
            return value is not None
        if self.operator == "!exists":
            return value is None
        if self.operator == "in":
            return value is not None and value in self.values
        return value is None or value not in self.values


def _split_terms(text: str) -> list[str]:
    # Commas inside `in (a,b)` do not separate terms.
    terms, depth, current = [], 0, ""
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            terms.append(current)
            current = ""
        else:
            current += char
    terms.append(current)
    return [t for t in terms if t.strip()]


def parse_labels(text: str) -> list[Requirement]:
    """Parse a label selector, raising 400 on bad syntax."""
    out: list[Requirement] = []
    for term in _split_terms(text):
        if match := _OP_TERM.match(term):
            key, op, value = match.groups()
            out.append(Requirement(key, "notin" if op == "!=" else "in", frozenset({value})))
            continue
        match = _SET_TERM.match(term)
        if not match or (match.group(1) and match.group(3)):
            raise statuses.bad_request(f"unable to parse requirement: {term.strip()}")
        negate, key, op, values = match.groups()
        if op:
            items = frozenset(v.strip() for v in values.split(",") if v.strip())
            out.append(Requirement(key, op, items))
        else:
            out.append(Requirement(key, "!exists" if negate else "exists"))
    return out


def parse_fields(text: str, supported: frozenset[str]) -> list[Requirement]:
    """Parse a field selector over the kind's field labels, raising 400 on anything else."""
    out: list[Requirement] = []
    for term in _split_terms(text):
        match = _OP_TERM.match(term)
        if not match:
            raise statuses.bad_request(f"invalid selector: '{text}'; can't understand '{term}'")
        key, op, value = match.groups()
        if key not in supported and key not in ("metadata.name", "metadata.namespace"):
            raise statuses.bad_request(f'field label not supported: "{key}"')
        out.append(Requirement(key, "notin" if op == "!=" else "in", frozenset({value})))
    return out


def field_value(obj: JsonObject, path: str) -> str:
    """Return a dotted field of an object as a field selector compares it."""
    node: Any = obj
    for part in path.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    if node is None:
        return ""
    if isinstance(node, bool):
        return "true" if node else "false"
    return str(node)


def matcher(labels: list[Requirement], fields: list[Requirement]) -> Matcher:
    """Return a predicate for objects that satisfy both selectors."""

    def matches(obj: JsonObject) -> bool:
        obj_labels = obj.get("metadata", {}).get("labels") or {}
        if not all(r.matches(obj_labels.get(r.key)) for r in labels):
            return False
        return all(r.matches(field_value(obj, r.key)) for r in fields)

    return matches


def match_all(_obj: JsonObject) -> bool:
    """The predicate of an empty selector."""
    return True


def label_map_matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    """Return whether a map-form selector (as in a Service) selects these labels."""
    return all(labels.get(k) == v for k, v in selector.items())
