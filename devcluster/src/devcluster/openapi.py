"""OpenAPI v3 documents: what `kubectl explain`, `apply` and field validation read.

kubectl looks up a kind's schema by the `x-kubernetes-group-version-kind` extension, decides
whether the server validates fields by the `fieldValidation` parameter of the kind's PATCH
operation, and picks the patch format by the content types that operation accepts. So each
group/version document carries those three things: schemas (a CRD's own schema; a thin
object schema for built-ins), the operations, and their parameters. Documents are cached
per revision of the kind table and addressed by a content hash, as kube-apiserver does.
"""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

from devcluster.kinds import Kind, KindTable

JsonObject = dict[str, Any]
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_META_REF = {
    "allOf": [{"$ref": f"#/components/schemas/{OBJECT_META}"}],
    "default": {},
    "description": "Standard object's metadata. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
}
_TYPE_META = {
    "apiVersion": {
        "type": "string",
        "description": "APIVersion defines the versioned schema of this representation of an "
        "object.",
    },
    "kind": {
        "type": "string",
        "description": "Kind is a string value representing the REST resource this object "
        "represents.",
    },
}
_OBJECT_META_SCHEMA: JsonObject = {
    "type": "object",
    "description": "ObjectMeta is metadata that all persisted resources must have.",
    "properties": {
        name: {"type": kind, "description": f"{name} of the object."}
        for name, kind in (
            ("name", "string"),
            ("generateName", "string"),
            ("namespace", "string"),
            ("uid", "string"),
            ("resourceVersion", "string"),
            ("generation", "integer"),
            ("creationTimestamp", "string"),
            ("deletionTimestamp", "string"),
            ("deletionGracePeriodSeconds", "integer"),
        )
    }
    | {
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
        "finalizers": {"type": "array", "items": {"type": "string"}},
        "ownerReferences": {"type": "array", "items": {"type": "object"}},
        "managedFields": {"type": "array", "items": {"type": "object"}},
    },
}
_PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
)


def schema_name(kind: Kind) -> str:
    """Return the component name kube-apiserver gives a kind's schema."""
    if kind.custom:
        reversed_group = ".".join(reversed(kind.group.split(".")))
        return f"{reversed_group}.{kind.version}.{kind.kind}"
    if kind.group == "apiextensions.k8s.io":
        return f"io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.{kind.version}.{kind.kind}"
    short = kind.group.split(".")[0] if kind.group else "core"
    return f"io.k8s.api.{short}.{kind.version}.{kind.kind}"


def _gvk(kind: Kind) -> list[JsonObject]:
    return [{"group": kind.group, "version": kind.version, "kind": kind.kind}]


def kind_schema(kind: Kind) -> JsonObject:
    """Return the schema published for a kind."""
    if kind.custom and kind.schema:
        schema = copy.deepcopy(kind.schema)
    else:
        schema = {
            "type": "object",
            "description": f"{kind.kind} is a built-in Kubernetes kind served by devcluster.",
            "properties": {
                f: {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                for f in sorted(kind.top_fields or ())
            },
        }
    properties = schema.setdefault("properties", {})
    properties.update(copy.deepcopy(_TYPE_META))
    properties["metadata"] = copy.deepcopy(_META_REF)
    if kind.custom:
        # Built-ins are published without their GVK: kubectl then builds strategic merge
        # patches from its compiled-in types instead of from these thin schemas.
        schema["x-kubernetes-group-version-kind"] = _gvk(kind)
    return schema


def _operation(kind: Kind, action: str, patch: bool) -> JsonObject:
    params = [
        {"name": "dryRun", "in": "query", "schema": {"type": "string", "uniqueItems": True}},
        {"name": "fieldManager", "in": "query", "schema": {"type": "string", "uniqueItems": True}},
        {
            "name": "fieldValidation",
            "in": "query",
            "schema": {"type": "string", "uniqueItems": True},
        },
    ]
    operation: JsonObject = {
        "operationId": f"{action}{kind.kind}",
        "parameters": params,
        "responses": {"200": {"description": "OK"}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": _gvk(kind)[0],
    }
    if patch:
        types = [t for t in _PATCH_TYPES if not (kind.custom and "strategic" in t)]
        params.append({"name": "force", "in": "query", "schema": {"type": "boolean"}})
        operation["requestBody"] = {
            "content": {
                t: {
                    "schema": {
                        "$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Patch"
                    }
                }
                for t in types
            },
            "required": True,
        }
    return operation


def _paths(kind: Kind) -> JsonObject:
    prefix = f"/apis/{kind.group}/{kind.version}" if kind.group else f"/api/{kind.version}"
    scope = "/namespaces/{namespace}" if kind.namespaced else ""
    item = {
        "get": _operation(kind, "get", False),
        "put": _operation(kind, "put", False),
        "patch": _operation(kind, "patch", True),
        "delete": _operation(kind, "delete", False),
    }
    collection = {"get": _operation(kind, "list", False), "post": _operation(kind, "post", False)}
    return {
        f"{prefix}{scope}/{kind.plural}/{{name}}": item,
        f"{prefix}{scope}/{kind.plural}": collection,
    }


class OpenApiDocuments:
    """The `/openapi/v3` index and per group/version documents, rebuilt when kinds change."""

    def __init__(self, kinds: KindTable) -> None:
        self._kinds = kinds
        self._revision = -1
        self._docs: dict[str, bytes] = {}
        self._hashes: dict[str, str] = {}

    def _refresh(self) -> None:
        if self._revision == self._kinds.revision:
            return
        self._docs.clear()
        self._hashes.clear()
        for group, versions in self._kinds.group_versions().items():
            for version in versions:
                path = f"apis/{group}/{version}" if group else f"api/{version}"
                body = json.dumps(self._document(group, version), separators=(",", ":")).encode()
                self._docs[path] = body
                self._hashes[path] = hashlib.sha512(body).hexdigest().upper()
        self._revision = self._kinds.revision

    def _document(self, group: str, version: str) -> JsonObject:
        schemas: JsonObject = {
            OBJECT_META: _OBJECT_META_SCHEMA,
            "io.k8s.apimachinery.pkg.apis.meta.v1.Patch": {"type": "object"},
        }
        paths: JsonObject = {}
        for kind in self._kinds.in_group_version(group, version):
            schemas[schema_name(kind)] = kind_schema(kind)
            paths.update(_paths(kind))
        return {
            "openapi": "3.0.0",
            "info": {"title": "Kubernetes", "version": "v1.37.0"},
            "paths": paths,
            "components": {"schemas": schemas},
        }

    def index(self) -> JsonObject:
        """Return `/openapi/v3`: each group/version with its content-addressed URL."""
        self._refresh()
        return {
            "paths": {
                path: {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest}"}
                for path, digest in sorted(self._hashes.items())
            }
        }

    def document(self, path: str) -> bytes | None:
        """Return one group/version document, or None."""
        self._refresh()
        return self._docs.get(path)
