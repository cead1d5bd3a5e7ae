"""API discovery: `/version`, `/api`, `/apis` and per group/version resource lists.

Both forms kubectl understands are served: the legacy documents (one request per group
version) and the aggregated `apidiscovery.k8s.io/v2` lists, which kubectl 1.26+ asks for
first and which save it a request per group. Everything comes from the table of kinds, so a
CRD is discoverable as soon as its row exists.
"""

from __future__ import annotations

from typing import Any

from devcluster.kinds import Kind, KindTable

JsonObject = dict[str, Any]
AGGREGATED_TYPE = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
# Subresources whose handlers exist, with the verbs they serve.
_SUBRESOURCE_VERBS = {
    "status": ("get", "patch", "update"),
    "log": ("get",),
    "finalize": ("update",),
}


def version_info() -> JsonObject:
    """Return the `/version` document of a recent Kubernetes release."""
    return {
        "major": "1",
        "minor": "37",
        "emulationMajor": "1",
        "emulationMinor": "37",
        "minCompatibilityMajor": "1",
        "minCompatibilityMinor": "36",
        "gitVersion": "v1.37.0-devcluster",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.25.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    }


def core_versions(server_address: str) -> JsonObject:
    """Return `/api`."""
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
        ],
    }


def _group(name: str, versions: list[str]) -> JsonObject:
    entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": entries, "preferredVersion": entries[0]}


def group_list(kinds: KindTable) -> JsonObject:
    """Return `/apis`."""
    groups = [_group(g, vs) for g, vs in sorted(kinds.group_versions().items()) if g]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(kinds: KindTable, name: str) -> JsonObject | None:
    """Return `/apis/<group>`, or None for an unknown group."""
    versions = kinds.group_versions().get(name)
    if not versions:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(name, versions)}


def _served_subresources(kind: Kind) -> list[str]:
    return sorted(s for s in kind.subresources if s in _SUBRESOURCE_VERBS)


def resource_list(kinds: KindTable, group: str, version: str) -> JsonObject | None:
    """Return the APIResourceList of one group/version, or None if nothing is served there."""
    rows = kinds.in_group_version(group, version)
    if not rows:
        return None
    resources: list[JsonObject] = []
    for row in sorted(rows, key=lambda r: r.plural):
        entry: JsonObject = {
            "name": row.plural,
            "singularName": row.singular,
            "namespaced": row.namespaced,
            "kind": row.kind,
            "verbs": list(row.verbs),
        }
        if row.short_names:
            entry["shortNames"] = list(row.short_names)
        if row.categories:
            entry["categories"] = list(row.categories)
        resources.append(entry)
        for sub in _served_subresources(row):
            resources.append(
                {
                    "name": f"{row.plural}/{sub}",
                    "singularName": "",
                    "namespaced": row.namespaced,
                    "kind": row.kind,
                    "verbs": list(_SUBRESOURCE_VERBS[sub]),
                }
            )
    group_version = f"{group}/{version}" if group else version
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }


def _aggregated_resource(row: Kind) -> JsonObject:
    entry: JsonObject = {
        "resource": row.plural,
        "responseKind": {"group": row.group, "version": row.version, "kind": row.kind},
        "scope": "Namespaced" if row.namespaced else "Cluster",
        "singularResource": row.singular,
        "verbs": list(row.verbs),
    }
    if row.short_names:
        entry["shortNames"] = list(row.short_names)
    if row.categories:
        entry["categories"] = list(row.categories)
    subresources = [
        {
            "subresource": sub,
            "responseKind": {"group": row.group, "version": row.version, "kind": row.kind},
            "verbs": list(_SUBRESOURCE_VERBS[sub]),
        }
        for sub in _served_subresources(row)
    ]
    if subresources:
        entry["subresources"] = subresources
    return entry


def aggregated(kinds: KindTable, core: bool) -> JsonObject:
    """Return the aggregated discovery list of `/api` (core) or `/apis`."""
    items = []
    for group, versions in sorted(kinds.group_versions().items()):
        if bool(group) == core:
            continue
        entries = [
            {
                "version": v,
                "resources": [
                    _aggregated_resource(r)
                    for r in sorted(kinds.in_group_version(group, v), key=lambda r: r.plural)
                ],
                "freshness": "Current",
            }
            for v in versions
        ]
        items.append({"metadata": {"name": group}, "versions": entries})
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items,
    }
