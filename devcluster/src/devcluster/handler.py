"""The one request handler: create, read, update, patch and delete for every kind.

HTTP is handled in `routes`; this module works on parsed bodies and kind rows, so in-process
controllers (the garbage collector now, a kubelet later) call the same verbs the API serves
and go through the same validation, resourceVersion checks and finalizer rules.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from devcluster import applying, decoding, lifecycle, patching, schemas, statuses, validation
from devcluster.crds import CRD_GROUP, CRD_PLURAL, crd_causes, established_status, names_conflict
from devcluster.kinds import Kind, KindTable
from devcluster.store import Store, copied

JsonObject = dict[str, Any]
FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"
CRD_CLEANUP = "customresourcecleanup.apiextensions.k8s.io"
_PATCH_TYPES = {
    "application/json-patch+json": "json",
    "application/merge-patch+json": "merge",
    "application/strategic-merge-patch+json": "strategic",
    "application/apply-patch+yaml": "apply",
    "application/apply-patch+cbor": "apply",
}


@dataclass(frozen=True)
class WriteOptions:
    """Query parameters every write takes."""

    field_validation: str = "Warn"  # Strict, Warn or Ignore
    dry_run: bool = False
    field_manager: str = ""
    force: bool = False


@dataclass
class WriteResult:
    """The stored object, the HTTP code to answer with and any warnings."""

    obj: JsonObject
    code: int = 200
    warnings: list[str] = field(default_factory=list)


def _is_crd(kind: Kind) -> bool:
    return kind.group == CRD_GROUP and kind.plural == CRD_PLURAL


def _is_namespace(kind: Kind) -> bool:
    return not kind.group and kind.plural == "namespaces"


def still_finalizing(kind: Kind, obj: JsonObject) -> bool:
    """Return whether anything still holds an object that is being deleted."""
    if obj["metadata"].get("finalizers"):
        return True
    if not kind.group and kind.plural == "pods":  # its kubelet removes it once stopped
        return int(obj["metadata"].get("deletionGracePeriodSeconds") or 0) > 0
    return _is_namespace(kind) and bool(obj.get("spec", {}).get("finalizers"))


def pod_grace_period(kind: Kind, pod: JsonObject, options: JsonObject) -> int:
    """Return how long a deleted pod's kubelet may take to stop it (0: remove at once).

    As kube-apiserver's pod strategy: the DeleteOptions' gracePeriodSeconds, else the pod's
    terminationGracePeriodSeconds; 0 for a pod no kubelet runs (unscheduled) or that ended.
    """
    if kind.group or kind.plural != "pods" or not pod.get("spec", {}).get("nodeName"):
        return 0
    if pod.get("status", {}).get("phase") in ("Succeeded", "Failed"):
        return 0
    requested = options.get("gracePeriodSeconds")
    if requested is None:
        requested = pod["spec"].get("terminationGracePeriodSeconds", 30)
    return max(0, int(requested))


def _with_grace(pod: JsonObject, grace: int) -> JsonObject:
    # deletionTimestamp is when the grace period ends, as kube-apiserver sets it for pods.
    deadline = datetime.now(UTC) + timedelta(seconds=grace)
    pod["metadata"]["deletionTimestamp"] = deadline.strftime("%Y-%m-%dT%H:%M:%SZ")
    pod["metadata"]["deletionGracePeriodSeconds"] = grace
    return pod


class Handler:
    """Kubernetes API verbs over one store and the table of kinds."""

    def __init__(self, store: Store, kinds: KindTable) -> None:
        self.store = store
        self.kinds = kinds

    # Reads.

    def get(self, kind: Kind, namespace: str, name: str) -> JsonObject:
        """Return one object as served at the kind's version, or raise 404."""
        obj = self.store.get(kind.storage_key, namespace, name)
        if obj is None:
            raise statuses.not_found(kind.group, kind.plural, name)
        return self.served(kind, obj)

    @staticmethod
    def served(kind: Kind, obj: JsonObject) -> JsonObject:
        """Return an object labelled with the apiVersion it is served at."""
        if obj.get("apiVersion") == kind.api_version:
            return obj
        return {**obj, "apiVersion": kind.api_version}

    def list_served(self, kind: Kind, namespace: str) -> list[JsonObject]:
        """Return the objects of a kind, within a namespace or (with "") in all."""
        items = self.store.objects(kind.storage_key, namespace or None)
        return [self.served(kind, o) for o in items]

    # Writes.

    def create(
        self, kind: Kind, namespace: str, body: JsonObject, options: WriteOptions
    ) -> WriteResult:
        """Create an object, filling in the metadata the server owns."""
        meta = body.setdefault("metadata", {})
        if kind.namespaced:
            if meta.get("namespace") and namespace and meta["namespace"] != namespace:
                raise statuses.bad_request(
                    "the namespace of the provided object does not match the namespace sent on "
                    "the request"
                )
            meta["namespace"] = namespace or meta.get("namespace", "")
        warnings = self._field_problems(kind, body, options)
        obj = lifecycle.prepare_create(kind, body)
        self._name_object(kind, obj)
        self._check_namespace(kind, obj)
        if self.store.get(kind.storage_key, *self._key(obj)) is not None:
            raise statuses.already_exists(kind.group, kind.plural, obj["metadata"]["name"])
        if _is_crd(kind):
            obj.setdefault("metadata", {}).setdefault("finalizers", [CRD_CLEANUP])
        result = self._commit(kind, obj, None, options)
        result.code, result.warnings = 201, warnings + result.warnings
        return result

    def _name_object(self, kind: Kind, obj: JsonObject) -> None:
        meta = obj["metadata"]
        prefix = meta.get("generateName")
        if meta.get("name") or not prefix:
            return
        problems = validation.name_problems(prefix, kind.name_rule, prefix=True)
        if problems:
            causes = [
                validation.invalid_value("metadata.generateName", prefix, p) for p in problems
            ]
            raise statuses.invalid(kind.group, kind.kind, "", causes)
        for _ in range(8):
            meta["name"] = lifecycle.generated_name(prefix)
            if self.store.get(kind.storage_key, *self._key(obj)) is None:
                return

    @staticmethod
    def _key(obj: JsonObject) -> tuple[str, str]:
        meta = obj["metadata"]
        return meta.get("namespace", ""), meta.get("name", "")

    def _check_namespace(self, kind: Kind, obj: JsonObject) -> None:
        if not kind.namespaced:
            return
        namespace = obj["metadata"].get("namespace", "")
        if not namespace:
            return
        found = self.store.get("/namespaces", "", namespace)
        if found is None:
            raise statuses.not_found("", "namespaces", namespace)
        if found["metadata"].get("deletionTimestamp"):
            raise statuses.forbidden_terminating(
                kind.group, kind.plural, obj["metadata"].get("name", ""), namespace
            )

    def update(
        self,
        kind: Kind,
        namespace: str,
        name: str,
        subresource: str,
        body: JsonObject,
        options: WriteOptions,
    ) -> WriteResult:
        """Replace an object (or its status), refusing a stale resourceVersion."""
        meta = body.setdefault("metadata", {})
        if meta.get("name", name) != name:
            raise statuses.bad_request(
                f"the name of the object ({meta['name']}) does not match the name on the URL "
                f"({name})"
            )
        if kind.namespaced and meta.get("namespace", namespace) != namespace:
            raise statuses.bad_request(
                "the namespace of the provided object does not match the namespace sent on the "
                "request"
            )
        meta.setdefault("name", name)
        if kind.namespaced:
            meta["namespace"] = namespace
        old = self.store.get(kind.storage_key, namespace, name)
        if old is None:
            raise statuses.not_found(kind.group, kind.plural, name)
        rv = meta.get("resourceVersion")
        if not rv and kind.custom:
            cause = validation.invalid_value(
                "metadata.resourceVersion", "0x0", "must be specified for an update"
            )
            raise statuses.invalid(kind.group, kind.kind, name, [cause])
        if rv and rv != old["metadata"]["resourceVersion"]:
            raise statuses.conflict(kind.group, kind.plural, name)
        warnings = self._field_problems(kind, body, options)
        result = self._replace(kind, old, body, subresource, options)
        result.warnings = warnings + result.warnings
        return result

    def _replace(
        self, kind: Kind, old: JsonObject, new: JsonObject, subresource: str, options: WriteOptions
    ) -> WriteResult:
        if subresource == "status":
            obj = lifecycle.prepare_status_update(kind, old, new)
        else:
            obj = lifecycle.prepare_update(kind, old, new)
            self._check_finalizers(kind, old, obj)
        if _is_namespace(kind) and subresource == "finalize":
            obj = copied(old)
            obj.setdefault("spec", {})["finalizers"] = new.get("spec", {}).get("finalizers", [])
        if old["metadata"].get("deletionTimestamp") and not still_finalizing(kind, obj):
            if options.dry_run:
                return WriteResult(self.served(kind, obj))
            event = self.store.remove(kind.storage_key, *self._key(obj), last=obj)
            assert event is not None
            return WriteResult(self.served(kind, event.obj))
        return self._commit(kind, obj, old, options)

    def _check_finalizers(self, kind: Kind, old: JsonObject, new: JsonObject) -> None:
        if not old["metadata"].get("deletionTimestamp"):
            return
        added = set(new["metadata"].get("finalizers") or ()) - set(
            old["metadata"].get("finalizers") or ()
        )
        if added:
            cause = statuses.Cause(
                "FieldValueForbidden",
                "Forbidden: no new finalizers can be "
                "added if the object is being deleted, found new finalizers "
                + str(sorted(added)).replace("'", '"'),
                "metadata.finalizers",
            )
            raise statuses.invalid(kind.group, kind.kind, old["metadata"]["name"], [cause])

    def patch(
        self,
        kind: Kind,
        namespace: str,
        name: str,
        subresource: str,
        body: Any,
        content_type: str,
        options: WriteOptions,
    ) -> WriteResult:
        """Apply a JSON, merge, strategic-merge or server-side-apply patch."""
        patch_type = _PATCH_TYPES.get(content_type)
        accepted = [
            t
            for t, p in _PATCH_TYPES.items()
            if not (kind.custom and p == "strategic") and not t.endswith("cbor")
        ]
        if patch_type is None or (kind.custom and patch_type == "strategic"):
            raise statuses.unsupported_media_type(content_type, accepted)
        old = self.store.get(kind.storage_key, namespace, name)
        if patch_type == "apply":
            if old is None:
                return self.create(
                    kind,
                    namespace,
                    applying.as_created(kind, body, name, options.field_manager),
                    options,
                )
            patched = applying.apply(kind, old, body, options.field_manager)
        elif old is None:
            raise statuses.not_found(kind.group, kind.plural, name)
        elif patch_type == "json":
            patched = patching.json_patch(old, body)
        elif not isinstance(body, dict):
            raise statuses.bad_request(
                f"json: cannot unmarshal {type(body).__name__} into Go "
                "value of type map[string]interface {}"
            )
        elif patch_type == "merge":
            patched = patching.merge_patch(old, body)
        else:
            patched = patching.strategic_merge(old, body, kind.merge_keys)
        rv = (patched.get("metadata") or {}).get("resourceVersion")
        if rv and rv != old["metadata"]["resourceVersion"]:
            raise statuses.conflict(kind.group, kind.plural, name)
        meta = patched.setdefault("metadata", {})
        if meta.get("name") != name or (kind.namespaced and meta.get("namespace") != namespace):
            raise statuses.bad_request("metadata.name and metadata.namespace may not be patched")
        warnings = self._field_problems(kind, patched, options)
        result = self._replace(kind, old, patched, subresource, options)
        result.warnings = warnings + result.warnings
        return result

    def delete(
        self, kind: Kind, namespace: str, name: str, options: JsonObject, dry_run: bool = False
    ) -> WriteResult:
        """Delete an object now, or mark it deleting while finalizers hold it."""
        old = self.store.get(kind.storage_key, namespace, name)
        if old is None:
            raise statuses.not_found(kind.group, kind.plural, name)
        if _is_namespace(kind) and name in ("default", "kube-system", "kube-public"):
            raise statuses.ApiError(
                403,
                "Forbidden",
                f'namespaces "{name}" is forbidden: this namespace may not be deleted',
                {"name": name, "kind": "namespaces"},
            )
        self._check_preconditions(kind, old, options.get("preconditions") or {})
        extra = self._propagation_finalizer(kind, old, options)
        grace = pod_grace_period(kind, old, options)
        base = old
        if old["metadata"].get("deletionTimestamp") and extra is None:
            pending = old["metadata"].get("deletionGracePeriodSeconds") or 0
            if not grace < pending or dry_run:
                return WriteResult(self.served(kind, old))
            base = _with_grace(copied(old), grace)  # a shorter grace period wins
        obj = lifecycle.mark_deleting(base, extra)
        if grace > 0 and not old["metadata"].get("deletionTimestamp"):
            _with_grace(obj, grace)
        if _is_namespace(kind):
            obj.setdefault("status", {})["phase"] = "Terminating"
        if dry_run:
            return WriteResult(self.served(kind, obj))
        if still_finalizing(kind, obj):
            return WriteResult(self.served(kind, self.store.put(kind.storage_key, obj).obj))
        event = self.store.remove(kind.storage_key, namespace, name)
        assert event is not None
        if kind.custom or (not kind.group and kind.plural in ("pods", "services")):
            return WriteResult(self.served(kind, event.obj))
        # Most built-in registries answer an immediate delete with a Success Status.
        uid = event.obj["metadata"].get("uid", "")
        return WriteResult(statuses.success(kind.group, kind.plural, name, uid))

    def _check_preconditions(self, kind: Kind, old: JsonObject, preconditions: JsonObject) -> None:
        meta = old["metadata"]
        uid, rv = preconditions.get("uid"), preconditions.get("resourceVersion")
        if (uid and uid != meta.get("uid")) or (rv and rv != meta.get("resourceVersion")):
            raise statuses.conflict(kind.group, kind.plural, meta["name"])

    def _propagation_finalizer(
        self, kind: Kind, old: JsonObject, options: JsonObject
    ) -> str | None:
        policy = options.get("propagationPolicy")
        if policy is None and options.get("orphanDependents") is not None:
            policy = "Orphan" if options["orphanDependents"] else "Background"
        if policy is None and kind.group == "batch" and kind.plural == "jobs":
            policy = "Orphan"  # batch/v1 Jobs still default to orphaning their pods
        if policy not in (None, "Background", "Foreground", "Orphan"):
            cause = statuses.Cause(
                "FieldValueNotSupported",
                f'Unsupported value: "{policy}": '
                'supported values: "Foreground", "Background", "Orphan"',
                "propagationPolicy",
            )
            raise statuses.invalid("", "DeleteOptions", "", [cause])
        if policy == "Foreground" and self.store.dependents(old["metadata"].get("uid", "")):
            return FOREGROUND
        if policy == "Orphan" and self.store.dependents(old["metadata"].get("uid", "")):
            return ORPHAN
        return None

    # Shared write path.

    def _field_problems(self, kind: Kind, body: JsonObject, options: WriteOptions) -> list[str]:
        if options.field_validation == "Ignore":
            return []
        problems = decoding.unknown_fields(kind, body)
        if problems and options.field_validation == "Strict":
            raise decoding.strict_error(kind, problems)
        return problems

    def _commit(
        self, kind: Kind, obj: JsonObject, old: JsonObject | None, options: WriteOptions
    ) -> WriteResult:
        name = obj["metadata"].get("name", "")
        causes = validation.validate_metadata(obj, kind.name_rule, kind.namespaced)
        warnings: list[str] = []
        if kind.custom and kind.schema is not None:
            report = schemas.apply_schema(obj, kind.schema)
            causes.extend(report.causes)
            unknown = [f'unknown field "{u}"' for u in report.unknown]
            if unknown and options.field_validation == "Strict":
                raise decoding.strict_error(kind, unknown)
            if options.field_validation != "Ignore":
                warnings.extend(unknown)
        if _is_crd(kind):
            causes.extend(crd_causes(obj))
        if causes:
            raise statuses.invalid(kind.group, kind.kind, name, causes)
        if _is_crd(kind):
            if conflict := names_conflict(obj, list(self.kinds)):
                raise conflict
            obj["status"] = established_status(obj)
        taken: set[str] = set()
        if not kind.group and kind.plural == "services" and old is None:
            taken = {
                s.get("spec", {}).get("clusterIP", "") for s in self.store.objects("/services")
            }
        lifecycle.apply_defaults(kind, obj, taken)
        if old is not None:
            obj["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
            lifecycle.bump_generation(kind, old, obj)
        if old is not None and obj == old:
            return WriteResult(self.served(kind, old), warnings=warnings)
        if options.dry_run:
            return WriteResult(self.served(kind, obj), warnings=warnings)
        stored = self.store.put(kind.storage_key, obj).obj
        return WriteResult(self.served(kind, stored), warnings=warnings)
