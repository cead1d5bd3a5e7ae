"""The table of kinds devcluster serves: built-in rows plus rows added by CRDs.

Everything kind-specific (scope, short names, subresources, strategic-merge keys, printer
columns, name rules, selectable fields, CRD schema) is data in a `Kind` row, so one store and
one request handler serve every kind alike. CRDs add and remove rows while the server runs.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

JsonObject = dict[str, Any]


class NameRule(StrEnum):
    """Which of kube-apiserver's object-name validations a kind uses."""

    SUBDOMAIN = "subdomain"  # DNS-1123 subdomain: most kinds
    LABEL = "label"  # DNS-1123 label: namespaces
    DNS1035 = "dns1035"  # DNS-1035 label: services
    PATH = "path"  # any path segment: RBAC kinds


@dataclass(frozen=True)
class Column:
    """A printer column: how `kubectl get` renders one cell of a row."""

    name: str
    json_path: str
    type: str = "string"
    description: str = ""
    priority: int = 0
    format: str = ""

    def definition(self) -> JsonObject:
        """Return the `TableColumnDefinition` wire form."""
        return {
            "name": self.name,
            "type": self.type,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        }


NAME_COLUMN = Column("Name", "", "string", "Name must be unique within a namespace.", 0, "name")
AGE_COLUMN = Column(
    "Age", ".metadata.creationTimestamp", "date", "CreationTimestamp of the object."
)
ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True, eq=False)
class Kind:
    """One served resource: a row of the table."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    subresources: frozenset[str] = frozenset()
    categories: tuple[str, ...] = ()
    name_rule: NameRule = NameRule.SUBDOMAIN
    merge_keys: Mapping[tuple[str, ...], str] = field(default_factory=dict)
    columns: tuple[Column, ...] = ()
    field_labels: frozenset[str] = frozenset()
    top_fields: frozenset[str] | None = None
    custom: bool = False
    schema: JsonObject | None = None
    storage_version: str = ""
    verbs: tuple[str, ...] = ALL_VERBS

    @property
    def api_version(self) -> str:
        """The `apiVersion` objects of this kind carry."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_version(self) -> str:
        """The group/version path segment, `v1` for the core group."""
        return self.api_version

    @property
    def singular(self) -> str:
        """The singular resource name discovery reports."""
        return self.kind.lower()

    @property
    def storage_key(self) -> str:
        """The version-independent key objects of this resource are stored under."""
        return f"{self.group}/{self.plural}"

    @property
    def tracks_generation(self) -> bool:
        """Whether metadata.generation counts spec changes (kinds with a spec, and CRs)."""
        return self.custom or "spec" in (self.top_fields or ())

    @property
    def has_status(self) -> bool:
        """Whether status is written only through the status subresource."""
        return "status" in self.subresources

    @property
    def printer_columns(self) -> tuple[Column, ...]:
        """The columns of `kubectl get`, always led by Name."""
        if self.columns:
            return (NAME_COLUMN, *self.columns)
        return (NAME_COLUMN, AGE_COLUMN)


class KindTable:
    """The kinds currently served, looked up by URL or by apiVersion and kind."""

    def __init__(self, rows: list[Kind]) -> None:
        self._rows: dict[tuple[str, str, str], Kind] = {}
        # Bumped on every change so derived documents (OpenAPI) know when to rebuild.
        self.revision = 0
        for row in rows:
            self.add(row)

    def add(self, row: Kind) -> None:
        """Serve a row, replacing any row at the same group, version and plural."""
        self._rows[(row.group, row.version, row.plural)] = row
        self.revision += 1

    def remove_group_resource(self, group: str, plural: str) -> None:
        """Stop serving every version of a resource (its CRD went away)."""
        for key in [k for k in self._rows if k[0] == group and k[2] == plural]:
            del self._rows[key]
            self.revision += 1

    def get(self, group: str, version: str, plural: str) -> Kind | None:
        """Return the row at a URL's group, version and plural."""
        return self._rows.get((group, version, plural))

    def by_kind(self, api_version: str, kind: str) -> Kind | None:
        """Return the row for an object's `apiVersion` and `kind`."""
        group, _, version = api_version.rpartition("/")
        for row in self._rows.values():
            if row.group == group and row.version == version and row.kind == kind:
                return row
        return None

    def by_storage_key(self, storage_key: str) -> Kind | None:
        """Return the storage-version row of a stored resource."""
        found: Kind | None = None
        for row in self._rows.values():
            if row.storage_key == storage_key:
                if not row.storage_version or row.storage_version == row.version:
                    return row
                found = row
        return found

    def __iter__(self) -> Iterator[Kind]:
        return iter(list(self._rows.values()))

    def group_versions(self) -> dict[str, list[str]]:
        """Map each group to its served versions, preferred version first."""
        out: dict[str, list[str]] = {}
        for row in self._rows.values():
            versions = out.setdefault(row.group, [])
            if row.version not in versions:
                versions.append(row.version)
        for group, versions in out.items():
            versions.sort(key=version_priority, reverse=True)
            out[group] = versions
        return out

    def in_group_version(self, group: str, version: str) -> list[Kind]:
        """Return the rows served at one group/version."""
        return [r for r in self._rows.values() if r.group == group and r.version == version]


def version_priority(version: str) -> tuple[int, int, int]:
    """Order versions the way Kubernetes does: GA over beta over alpha, then by number."""
    match = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if not match:
        return (-1, 0, 0)
    stage = {"alpha": 1, "beta": 2, None: 3}[match.group(2)]
    return (stage, int(match.group(1)), int(match.group(3) or 0))
