"""CustomResourceDefinitions: checking them and turning each served version into a kind row.

An applied CRD becomes served at once (kube-apiserver takes a moment; clients wait for the
`Established` condition, which devcluster sets in the same write). Custom resources are stored
under their storage version and served at every served version without conversion, which is
what `conversion: None` means.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from devcluster import statuses
from devcluster.kinds import AGE_COLUMN, Column, Kind, KindTable, NameRule
from devcluster.statuses import Cause
from devcluster.validation import invalid_value, required

JsonObject = dict[str, Any]
CRD_GROUP = "apiextensions.k8s.io"
CRD_PLURAL = "customresourcedefinitions"
APPROVAL_ANNOTATION = "api-approved.kubernetes.io"


def protected_group(group: str) -> bool:
    """Whether a group is Kubernetes' own (`*.k8s.io`, `*.kubernetes.io`): a CRD needs approval."""
    return any(group == g or group.endswith("." + g) for g in ("k8s.io", "kubernetes.io"))


def crd_causes(crd: JsonObject) -> list[Cause]:
    """Return why a CRD is invalid, worded as kube-apiserver's CRD validation words it."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    causes: list[Cause] = []
    group, plural = spec.get("group", ""), names.get("plural", "")
    for field_name, value in (
        ("spec.group", group),
        ("spec.names.plural", plural),
        ("spec.names.kind", names.get("kind", "")),
    ):
        if not value:
            causes.append(required(field_name))
    name = crd.get("metadata", {}).get("name", "")
    if group and plural and name != f"{plural}.{group}":
        causes.append(
            invalid_value("metadata.name", name, 'must be spec.names.plural+"."+spec.group')
        )
    annotations = crd.get("metadata", {}).get("annotations") or {}
    if protected_group(group) and not annotations.get(APPROVAL_ANNOTATION):
        causes.append(
            required(
                f"metadata.annotations[{APPROVAL_ANNOTATION}]",
                f'protected groups must have approval annotation "{APPROVAL_ANNOTATION}", '
                "see https://github.com/kubernetes/enhancements/pull/1111",
            )
        )
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        causes.append(
            Cause(
                "FieldValueNotSupported",
                f'Unsupported value: "{spec.get("scope", "")}'
                '": supported values: "Cluster", "Namespaced"',
                "spec.scope",
            )
        )
    versions = spec.get("versions") or []
    if not versions:
        causes.append(
            invalid_value(
                "spec.versions", versions, "must have exactly one version marked as storage version"
            )
        )
    elif sum(1 for v in versions if v.get("storage")) != 1:
        causes.append(
            invalid_value(
                "spec.versions", "", "must have exactly one version marked as storage version"
            )
        )
    return causes


def kind_rows(crd: JsonObject) -> list[Kind]:
    """Return one kind row per served version of a CRD."""
    spec = crd["spec"]
    names = spec["names"]
    versions = spec.get("versions") or []
    storage = next((v["name"] for v in versions if v.get("storage")), "")
    rows = []
    for version in versions:
        if not version.get("served", True):
            continue
        subresources = version.get("subresources") or {}
        selectable = {
            f.get("jsonPath", "").lstrip(".") for f in version.get("selectableFields") or []
        }
        rows.append(
            Kind(
                group=spec["group"],
                version=version["name"],
                plural=names["plural"],
                kind=names["kind"],
                namespaced=spec.get("scope") == "Namespaced",
                short_names=tuple(names.get("shortNames") or ()),
                subresources=frozenset(subresources),
                categories=tuple(names.get("categories") or ()),
                name_rule=NameRule.SUBDOMAIN,
                columns=_columns(version),
                field_labels=frozenset(selectable),
                custom=True,
                schema=(version.get("schema") or {}).get("openAPIV3Schema") or {},
                storage_version=storage,
            )
        )
    return rows


def _columns(version: JsonObject) -> tuple[Column, ...]:
    columns = version.get("additionalPrinterColumns")
    if not columns:
        return (AGE_COLUMN,)
    return tuple(
        Column(
            c.get("name", ""),
            c.get("jsonPath", ""),
            c.get("type", "string"),
            c.get("description", ""),
            int(c.get("priority", 0)),
            c.get("format", ""),
        )
        for c in columns
    )


def established_status(crd: JsonObject) -> JsonObject:
    """Return the status kube-apiserver's CRD controllers converge a valid CRD to."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    names = dict(crd["spec"]["names"])
    names.setdefault("singular", names["kind"].lower())
    names.setdefault("listKind", names["kind"] + "List")
    conditions = [
        {
            "type": "NamesAccepted",
            "status": "True",
            "reason": "NoConflicts",
            "message": "no conflicts found",
            "lastTransitionTime": now,
        },
        {
            "type": "Established",
            "status": "True",
            "reason": "InitialNamesAccepted",
            "message": "the initial names have been accepted",
            "lastTransitionTime": now,
        },
    ]
    old = crd.get("status") or {}
    if old.get("conditions"):
        conditions = old["conditions"]
    stored = [v["name"] for v in crd["spec"].get("versions", []) if v.get("storage")]
    return {"conditions": conditions, "acceptedNames": names, "storedVersions": stored}


def names_conflict(crd: JsonObject, served: list[Kind]) -> statuses.ApiError | None:
    """Refuse a CRD whose group and plural a built-in kind already serves."""
    spec = crd.get("spec") or {}
    group, plural = spec.get("group"), (spec.get("names") or {}).get("plural")
    for row in served:
        if not row.custom and row.group == group and row.plural == plural:
            return statuses.invalid(
                CRD_GROUP,
                "CustomResourceDefinition",
                crd["metadata"].get("name", ""),
                [invalid_value("spec.group", group, "is a built-in group")],
            )
    return None


def serve_crd_change(kinds: KindTable, event_type: str, crd: JsonObject) -> None:
    """Keep the kind table in step with a CRD write: serve it, re-serve it, or stop."""
    spec = crd.get("spec") or {}
    group, plural = spec.get("group", ""), (spec.get("names") or {}).get("plural", "")
    kinds.remove_group_resource(group, plural)
    if event_type != "DELETED":
        for row in kind_rows(crd):
            kinds.add(row)
