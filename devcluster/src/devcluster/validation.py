"""Object metadata validation, worded as kube-apiserver words it.

Names, generateName, labels and the 256 KiB annotation limit are checked for every kind.
The limit matters: it is why client-side `kubectl apply` of a ~1 MB CRD fails on a real
cluster, and tests rely on devcluster failing it the same way.
"""

from __future__ import annotations

import re
from typing import Any

from devcluster.kinds import NameRule
from devcluster.statuses import Cause

JsonObject = dict[str, Any]

_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_QUALIFIED = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_SUBDOMAIN_TEXT = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    r"for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
_LABEL_TEXT = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
_DNS1035_TEXT = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
_QUALIFIED_TEXT = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used "
    "for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
_VALUE_TEXT = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?"
    "[A-Za-z0-9])?')"
)
ANNOTATIONS_LIMIT = 262144


def invalid_value(field: str, value: Any, detail: str) -> Cause:
    """Return a FieldValueInvalid cause worded like `field.Invalid`."""
    return Cause("FieldValueInvalid", f"Invalid value: {_quote(value)}: {detail}", field)


def required(field: str, detail: str = "") -> Cause:
    """Return a FieldValueRequired cause."""
    return Cause("FieldValueRequired", "Required value" + (f": {detail}" if detail else ""), field)


def _quote(value: Any) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def name_problems(name: str, rule: NameRule, prefix: bool = False) -> list[str]:
    """Return why a name breaks the kind's rule (empty when it is fine)."""
    if rule is NameRule.PATH:
        return _path_problems(name)
    pattern, text, limit = {
        NameRule.SUBDOMAIN: (_SUBDOMAIN, _SUBDOMAIN_TEXT, 253),
        NameRule.LABEL: (_LABEL, _LABEL_TEXT, 63),
        NameRule.DNS1035: (_DNS1035, _DNS1035_TEXT, 63),
    }[rule]
    # generateName is checked as if a random suffix followed, so it may end with '-'.
    candidate = name + "a" if prefix else name
    problems = []
    if len(candidate) > limit:
        problems.append(f"must be no more than {limit} characters")
    if not pattern.fullmatch(candidate):
        problems.append(text)
    return problems


def _path_problems(name: str) -> list[str]:
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{c}'" for c in "/%" if c in name]


def validate_metadata(obj: JsonObject, rule: NameRule, namespaced: bool) -> list[Cause]:
    """Check the metadata every kind shares."""
    meta = obj.get("metadata") or {}
    causes: list[Cause] = []
    name = meta.get("name") or ""
    if not name:
        causes.append(required("metadata.name", "name or generateName is required"))
    for problem in name_problems(name, rule) if name else ():
        causes.append(invalid_value("metadata.name", name, problem))
    if namespaced and not meta.get("namespace"):
        causes.append(required("metadata.namespace"))
    if not namespaced and meta.get("namespace"):
        causes.append(
            Cause(
                "FieldValueForbidden", "Forbidden: not allowed on this type", "metadata.namespace"
            )
        )
    causes.extend(_label_causes(meta.get("labels") or {}))
    causes.extend(_annotation_causes(meta.get("annotations") or {}))
    return causes


def _label_causes(labels: dict[str, Any]) -> list[Cause]:
    causes = []
    for key, value in labels.items():
        causes.extend(_key_causes("metadata.labels", key))
        if (
            not isinstance(value, str)
            or len(value) > 63
            or (value and not _QUALIFIED.fullmatch(value))
        ):
            detail = "must be no more than 63 characters" if len(str(value)) > 63 else _VALUE_TEXT
            causes.append(invalid_value("metadata.labels", value, detail))
    return causes


def _key_causes(field: str, key: str) -> list[Cause]:
    prefix, _, name = key.rpartition("/")
    problems = []
    if prefix and (len(prefix) > 253 or not _SUBDOMAIN.fullmatch(prefix)):
        problems.append("prefix part " + _SUBDOMAIN_TEXT)
    if not name or len(name) > 63 or not _QUALIFIED.fullmatch(name):
        problems.append(_QUALIFIED_TEXT if name else "name part must be non-empty")
    return [invalid_value(field, key, p) for p in problems]


def _annotation_causes(annotations: dict[str, Any]) -> list[Cause]:
    causes = []
    total = 0
    for key, value in annotations.items():
        causes.extend(_key_causes("metadata.annotations", key))
        total += len(key) + len(str(value))
    if total > ANNOTATIONS_LIMIT:
        causes.append(
            Cause(
                "FieldValueTooLong",
                f"Too long: may not be more than {ANNOTATIONS_LIMIT} bytes",
                "metadata.annotations",
            )
        )
    return causes
