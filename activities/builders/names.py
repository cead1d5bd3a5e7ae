"""Names, label sets and selectors of the objects a RayCluster owns.

Everything that finds Ray objects (kubectl ray, dashboards, Kueue, the RayJob and RayService
controllers, our own bridge) finds them by these names and labels, so they follow KubeRay's
`common/association.go` and `utils/util.go` exactly, including its truncation rules.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping

from crds import constants as k
from crds.common import JSONObject
from crds.enums import RayNodeType
from crds.raycluster import RayCluster, RayClusterSpec

DEFAULT_CLUSTER_DOMAIN = "cluster.local"
# KubeRay trims a pod name prefix so that "-worker-" plus a 5-character suffix still fits in 63.
MAX_POD_PREFIX_LENGTH = 50
# Longer names are clipped from the front, keeping the distinctive tail of the name.
MAX_CHECKED_NAME_LENGTH = 50

CREATOR_RAYCLUSTER = "RayCluster"
CREATOR_RAYJOB = "RayJob"
CREATOR_RAYSERVICE = "RayService"


def check_name(name: str) -> str:
    """Clip a name to 50 characters from the front and make it start with a letter.

    KubeRay passes generated object names (autoscaler ServiceAccount, Role, RoleBinding, auth
    Secret) through this so that they remain valid DNS labels.
    """
    if len(name) > MAX_CHECKED_NAME_LENGTH:
        name = name[len(name) - MAX_CHECKED_NAME_LENGTH :]
    if name and (name[0].isdigit() or _is_punctuation(name[0])):
        name = "r" + name[1:]
    return name


def check_label(value: str) -> str:
    """Clip a label value to 63 characters from the front; it must not start with punctuation."""
    if len(value) > k.MAX_DNS_LABEL_LENGTH:
        value = value[len(value) - k.MAX_DNS_LABEL_LENGTH :]
    if value and _is_punctuation(value[0]):
        value = "r" + value[1:]
    return value


def _is_punctuation(char: str) -> bool:
    # Go's unicode.IsPunct is the Unicode "P*" categories ("-" and "." but not "+" or "$").
    return unicodedata.category(char).startswith("P")


def head_pod_name_prefix(cluster: RayCluster) -> str:
    """`<cluster>-head-`, with the cluster part clipped to 50 characters, lower-cased."""
    return _pod_prefix(cluster.name, RayNodeType.HEAD)


def deterministic_head_pod_name(cluster: RayCluster) -> str:
    """`<cluster>-head`, clipped like the prefix (ENABLE_DETERMINISTIC_HEAD_POD_NAME)."""
    return head_pod_name_prefix(cluster).removesuffix("-")


def worker_pod_name_prefix(cluster: RayCluster, group_name: str) -> str:
    """`<cluster>-<group>-worker-`, with `<cluster>-<group>` clipped to 50 characters."""
    return _pod_prefix(f"{cluster.name}-{group_name}", RayNodeType.WORKER)


def _pod_prefix(base: str, node_type: RayNodeType) -> str:
    return f"{base[:MAX_POD_PREFIX_LENGTH]}-{node_type.value}-".lower()


def pod_name(prefix: str, suffix: str) -> str:
    """A full pod name from a prefix and the caller's (deterministic) random suffix."""
    return f"{prefix}{suffix}"


def identifier(cluster_name: str, node_type: RayNodeType) -> str:
    """The `ray.io/identifier` label value: `<cluster>-head` or `<cluster>-worker`."""
    return check_label(f"{cluster_name}-{node_type.value}")


def head_service_name(cluster_name: str, spec: RayClusterSpec | None = None) -> str:
    """`<cluster>-head-svc`, or `headGroupSpec.headService.metadata.name` when given."""
    if spec is not None:
        custom = ((spec.head_group_spec.head_service or {}).get("metadata") or {}).get("name")
        if custom:
            return str(custom)
    return f"{cluster_name}-head-svc"


def head_service_fqdn(cluster: RayCluster, cluster_domain: str = DEFAULT_CLUSTER_DOMAIN) -> str:
    """`<head-svc>.<namespace>.svc.<domain>`: how workers and drivers reach the GCS."""
    name = head_service_name(cluster.name, cluster.spec)
    return f"{name}.{cluster.namespace}.svc.{cluster_domain}"


def serve_service_name(owner_name: str) -> str:
    """`<owner>-serve-svc`."""
    return f"{owner_name}-serve-svc"


def serve_service_label(owner_name: str) -> str:
    """The `ray.io/serve` label value on a serve Service: `<owner>-serve`."""
    return f"{owner_name}-serve"


def headless_service_name(cluster_name: str) -> str:
    """`<cluster>-headless`: the worker Service of multi-host groups."""
    return f"{cluster_name}-headless"


def gcs_storage_pvc_name(cluster: RayCluster) -> str:
    """The PVC behind embedded GCS storage: `storage.claimName`, else `<cluster>-gcs-pvc`."""
    options = cluster.spec.gcs_fault_tolerance_options
    if options is not None and options.storage is not None and options.storage.claim_name:
        return options.storage.claim_name
    return cluster.name + k.GCS_STORAGE_PVC_SUFFIX


def autoscaler_service_account_name(cluster: RayCluster) -> str:
    """The head template's serviceAccountName, else the cluster name (not yet clipped)."""
    spec = cluster.spec.head_group_spec.template.get("spec") or {}
    return str(spec.get("serviceAccountName") or cluster.name)


def creator_kind(cluster: RayCluster) -> str:
    """Which CRD created the cluster, from `ray.io/originated-from-crd` (RayCluster if unset)."""
    value = cluster.labels.get(k.LABEL_ORIGINATED_FROM_CRD, "")
    return value if value in (CREATOR_RAYJOB, CREATOR_RAYSERVICE) else CREATOR_RAYCLUSTER


def controller_reference(kind: str, name: str, uid: str | None) -> JSONObject:
    """The controller ownerReference to a ray.io object (garbage collection, bridge routing)."""
    return {
        "apiVersion": k.API_VERSION,
        "kind": kind,
        "name": name,
        "uid": uid or "",
        "controller": True,
        "blockOwnerDeletion": True,
    }


def owner_reference(cluster: RayCluster) -> JSONObject:
    """The controller ownerReference every child of the cluster carries."""
    return controller_reference("RayCluster", cluster.name, cluster.metadata.uid)


def is_controlled_by(obj: JSONObject, cluster: RayCluster) -> bool:
    """Whether the object's controller ownerReference is this cluster (by UID)."""
    return any(
        ref.get("controller") and ref.get("uid") == cluster.metadata.uid
        for ref in (obj.get("metadata") or {}).get("ownerReferences") or []
    )


def without_last_applied(annotations: Mapping[str, str] | None) -> dict[str, str]:
    """A CR's annotations less kubectl's copy of its manifest (`ANNOTATION_LAST_APPLIED`)."""
    return {
        key: value for key, value in (annotations or {}).items() if key != k.ANNOTATION_LAST_APPLIED
    }


# --- label sets -------------------------------------------------------------------------------


def pod_labels(
    cluster_name: str, node_type: RayNodeType, group_name: str, extra: dict[str, str]
) -> dict[str, str]:
    """KubeRay's labels for a Ray pod; `extra` may not override cluster, node-type or group."""
    labels = {
        k.LABEL_IS_RAY_NODE: "yes",
        k.LABEL_CLUSTER: cluster_name,
        k.LABEL_NODE_TYPE: node_type.value,
        k.LABEL_GROUP: group_name,
        k.LABEL_IDENTIFIER: identifier(cluster_name, node_type),
        k.LABEL_APP_NAME: k.APP_NAME_VALUE,
        k.LABEL_CREATED_BY: k.CREATED_BY_VALUE,
    }
    protected = {k.LABEL_CLUSTER, k.LABEL_NODE_TYPE, k.LABEL_GROUP}
    labels.update({key: value for key, value in extra.items() if key not in protected})
    return labels


def head_service_labels(cluster_name: str) -> dict[str, str]:
    """The five labels of the head Service; its selector uses the same keys."""
    return {
        k.LABEL_CLUSTER: cluster_name,
        k.LABEL_NODE_TYPE: RayNodeType.HEAD.value,
        k.LABEL_IDENTIFIER: identifier(cluster_name, RayNodeType.HEAD),
        k.LABEL_APP_NAME: k.APP_NAME_VALUE,
        k.LABEL_CREATED_BY: k.CREATED_BY_VALUE,
    }


def rbac_labels(cluster_name: str) -> dict[str, str]:
    """Labels of the autoscaler ServiceAccount, Role and RoleBinding."""
    return {
        k.LABEL_CLUSTER: cluster_name,
        k.LABEL_APP_NAME: k.APP_NAME_VALUE,
        k.LABEL_CREATED_BY: k.CREATED_BY_VALUE,
    }


# --- selectors (label queries) ----------------------------------------------------------------


def all_pods_selector(cluster_name: str) -> dict[str, str]:
    """Every pod of the cluster."""
    return {k.LABEL_CLUSTER: cluster_name}


def head_pods_selector(cluster_name: str) -> dict[str, str]:
    """The head pod(s) of the cluster."""
    return {k.LABEL_CLUSTER: cluster_name, k.LABEL_NODE_TYPE: RayNodeType.HEAD.value}


def worker_pods_selector(cluster_name: str) -> dict[str, str]:
    """Every worker pod of the cluster."""
    return {k.LABEL_CLUSTER: cluster_name, k.LABEL_NODE_TYPE: RayNodeType.WORKER.value}


def group_pods_selector(cluster_name: str, group_name: str) -> dict[str, str]:
    """The pods of one group (`headgroup` or a worker group name)."""
    return {k.LABEL_CLUSTER: cluster_name, k.LABEL_GROUP: group_name}


def redis_cleanup_selector(cluster_name: str) -> dict[str, str]:
    """The Redis cleanup Job of the cluster."""
    return {k.LABEL_CLUSTER: cluster_name, k.LABEL_NODE_TYPE: RayNodeType.REDIS_CLEANUP.value}


def head_service_selector(cluster_name: str) -> dict[str, str]:
    """How KubeRay lists the head Service of a cluster."""
    return {
        k.LABEL_CLUSTER: cluster_name,
        k.LABEL_NODE_TYPE: RayNodeType.HEAD.value,
        k.LABEL_IDENTIFIER: identifier(cluster_name, RayNodeType.HEAD),
    }


def headless_service_selector(cluster_name: str) -> dict[str, str]:
    """How KubeRay lists the headless worker Service of a cluster."""
    return {k.LABEL_HEADLESS_WORKER_SVC: cluster_name}


def label_selector_string(selector: dict[str, str]) -> str:
    """A selector as the `labelSelector` query parameter (`k=v,k2=v2`, sorted)."""
    return ",".join(f"{key}={value}" for key, value in sorted(selector.items()))
