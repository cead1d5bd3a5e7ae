"""The built-in kinds devcluster serves, one row each.

The values (short names, categories, strategic-merge keys, selectable fields) are those of
kube-apiserver, so kubectl's short names and `kubectl get all` behave as on a real cluster.
Strategic-merge keys are keyed by the trailing path of the list they govern, which lets one
entry cover a pod template wherever it is nested (pod, Deployment, Job, StatefulSet...).
"""

from __future__ import annotations

from devcluster.kinds import Column, Kind, NameRule
from devcluster.pod_table import POD_COLUMNS

_META_KEYS: dict[tuple[str, ...], str] = {
    # "" marks a list of scalars merged as a set (patchStrategy=merge without a key).
    ("metadata", "finalizers"): "",
    ("metadata", "ownerReferences"): "uid",
    ("status", "conditions"): "type",
}
_POD_KEYS: dict[tuple[str, ...], str] = {
    **_META_KEYS,
    ("containers",): "name",
    ("initContainers",): "name",
    ("ephemeralContainers",): "name",
    ("containers", "ports"): "containerPort",
    ("initContainers", "ports"): "containerPort",
    ("env",): "name",
    ("volumes",): "name",
    ("volumeMounts",): "mountPath",
    ("volumeDevices",): "devicePath",
    ("imagePullSecrets",): "name",
    ("hostAliases",): "ip",
    ("readinessGates",): "conditionType",
    ("schedulingGates",): "name",
    ("resourceClaims",): "name",
    ("topologySpreadConstraints",): "topologyKey",
}
_SERVICE_KEYS: dict[tuple[str, ...], str] = {**_META_KEYS, ("spec", "ports"): "port"}

_SPEC_STATUS = frozenset({"spec", "status"})
_POD_FIELDS = frozenset(
    {
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.nominatedNodeName",
    }
)
_EVENT_FIELDS = frozenset(
    {
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    }
)
_CORE_EVENT_TOP = frozenset(
    {
        "involvedObject",
        "reason",
        "message",
        "source",
        "firstTimestamp",
        "lastTimestamp",
        "count",
        "type",
        "eventTime",
        "series",
        "action",
        "related",
        "reportingComponent",
        "reportingInstance",
    }
)
_EVENTS_V1_TOP = frozenset(
    {
        "eventTime",
        "series",
        "reportingController",
        "reportingInstance",
        "action",
        "reason",
        "regarding",
        "related",
        "note",
        "type",
        "deprecatedSource",
        "deprecatedFirstTimestamp",
        "deprecatedLastTimestamp",
        "deprecatedCount",
    }
)


def _col(name: str, path: str, kind: str = "string", priority: int = 0) -> Column:
    return Column(name, path, kind, "", priority)


_AGE = Column("Age", ".metadata.creationTimestamp", "date", "CreationTimestamp of the object.")
_WORKLOAD = frozenset({"status", "scale"})


# The rows read best as a table, one kind per row; the formatter would stretch them over
# several hundred lines.
# fmt: off
def builtin_kinds() -> list[Kind]:
    """Return the rows of every built-in kind."""
    return [
        Kind("", "v1", "namespaces", "Namespace", False, ("ns",), frozenset({"status", "finalize"}),
             name_rule=NameRule.LABEL, columns=(_col("Status", ".status.phase"), _AGE),
             field_labels=frozenset({"status.phase"}), top_fields=_SPEC_STATUS,
             merge_keys=_META_KEYS),
        Kind("", "v1", "pods", "Pod", True, ("po",), frozenset({"status", "log"}), ("all",),
             merge_keys=_POD_KEYS, field_labels=_POD_FIELDS, top_fields=_SPEC_STATUS,
             columns=POD_COLUMNS),
        Kind("", "v1", "services", "Service", True, ("svc",), frozenset({"status"}), ("all",),
             name_rule=NameRule.DNS1035, merge_keys=_SERVICE_KEYS, top_fields=_SPEC_STATUS,
             columns=(_col("Type", ".spec.type"), _col("Cluster-IP", ".spec.clusterIP"), _AGE,
                      _col("Selector", ".spec.selector", priority=1))),
        Kind("", "v1", "endpoints", "Endpoints", True, ("ep",), merge_keys=_META_KEYS,
             top_fields=frozenset({"subsets"})),
        Kind("", "v1", "configmaps", "ConfigMap", True, ("cm",), merge_keys=_META_KEYS,
             top_fields=frozenset({"data", "binaryData", "immutable"})),
        Kind("", "v1", "secrets", "Secret", True, merge_keys=_META_KEYS,
             field_labels=frozenset({"type"}),
             top_fields=frozenset({"data", "stringData", "type", "immutable"}),
             columns=(_col("Type", ".type"), _AGE)),
        Kind("", "v1", "serviceaccounts", "ServiceAccount", True, ("sa",), merge_keys=_META_KEYS,
             top_fields=frozenset({"secrets", "imagePullSecrets", "automountServiceAccountToken"})),
        Kind("", "v1", "events", "Event", True, ("ev",), merge_keys=_META_KEYS,
             field_labels=_EVENT_FIELDS, top_fields=_CORE_EVENT_TOP,
             columns=(_col("Last Seen", ".lastTimestamp", "date"), _col("Type", ".type"),
                      _col("Reason", ".reason"), _col("Message", ".message"))),
        Kind("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True, ("pvc",),
             frozenset({"status"}), merge_keys=_META_KEYS, top_fields=_SPEC_STATUS,
             columns=(_col("Status", ".status.phase"), _AGE)),
        Kind("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", True,
             merge_keys=_META_KEYS, top_fields=frozenset({"addressType", "endpoints", "ports"})),
        Kind("batch", "v1", "jobs", "Job", True, (), frozenset({"status"}), ("all",),
             merge_keys=_POD_KEYS, top_fields=_SPEC_STATUS,
             field_labels=frozenset({"status.successful"}),
             columns=(_col("Completions", ".status.succeeded", "integer"), _AGE)),
        Kind("apps", "v1", "deployments", "Deployment", True, ("deploy",), _WORKLOAD, ("all",),
             merge_keys=_POD_KEYS, top_fields=_SPEC_STATUS,
             columns=(_col("Ready", ".status.readyReplicas", "integer"),
                      _col("Up-to-date", ".status.updatedReplicas", "integer"),
                      _col("Available", ".status.availableReplicas", "integer"), _AGE)),
        Kind("apps", "v1", "replicasets", "ReplicaSet", True, ("rs",), _WORKLOAD, ("all",),
             merge_keys=_POD_KEYS, top_fields=_SPEC_STATUS,
             columns=(_col("Desired", ".spec.replicas", "integer"),
                      _col("Ready", ".status.readyReplicas", "integer"), _AGE)),
        Kind("apps", "v1", "statefulsets", "StatefulSet", True, ("sts",), _WORKLOAD, ("all",),
             merge_keys=_POD_KEYS, top_fields=_SPEC_STATUS,
             columns=(_col("Ready", ".status.readyReplicas", "integer"), _AGE)),
        Kind("coordination.k8s.io", "v1", "leases", "Lease", True, merge_keys=_META_KEYS,
             top_fields=frozenset({"spec"})),
        *_rbac_kinds(),
        Kind("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", True, ("netpol",),
             merge_keys=_META_KEYS, top_fields=_SPEC_STATUS),
        # cert-manager's kinds, stored for mTLS clusters; nothing here issues certificates.
        Kind("cert-manager.io", "v1", "issuers", "Issuer", True, merge_keys=_META_KEYS,
             top_fields=_SPEC_STATUS),
        Kind("cert-manager.io", "v1", "certificates", "Certificate", True, ("cert", "certs"),
             frozenset({"status"}), merge_keys=_META_KEYS, top_fields=_SPEC_STATUS),
        # The gang schedulers' PodGroups, stored for their batch scheduler; none runs here.
        Kind("scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup", True, ("pg",),
             frozenset({"status"}), merge_keys=_META_KEYS, top_fields=_SPEC_STATUS),
        Kind("scheduling.x-k8s.io", "v1alpha1", "podgroups", "PodGroup", True, (),
             frozenset({"status"}), merge_keys=_META_KEYS, top_fields=_SPEC_STATUS),
        Kind("networking.k8s.io", "v1", "ingresses", "Ingress", True, ("ing",),
             frozenset({"status"}), merge_keys=_META_KEYS, top_fields=_SPEC_STATUS,
             columns=(_col("Class", ".spec.ingressClassName"), _AGE)),
        Kind("events.k8s.io", "v1", "events", "Event", True, ("ev",), merge_keys=_META_KEYS,
             top_fields=_EVENTS_V1_TOP),
        Kind("apiextensions.k8s.io", "v1", "customresourcedefinitions",
             "CustomResourceDefinition", False, ("crd", "crds"), frozenset({"status"}),
             ("api-extensions",), merge_keys=_META_KEYS, top_fields=_SPEC_STATUS,
             columns=(Column("Created At", ".metadata.creationTimestamp"),)),
    ]


def _rbac_kinds() -> list[Kind]:
    group = "rbac.authorization.k8s.io"
    role_fields = frozenset({"rules", "aggregationRule"})
    binding_fields = frozenset({"subjects", "roleRef"})
    return [
        Kind(group, "v1", "roles", "Role", True, name_rule=NameRule.PATH, merge_keys=_META_KEYS,
             top_fields=role_fields),
        Kind(group, "v1", "rolebindings", "RoleBinding", True, name_rule=NameRule.PATH,
             merge_keys=_META_KEYS, top_fields=binding_fields,
             columns=(_col("Role", ".roleRef.name"), _AGE)),
        Kind(group, "v1", "clusterroles", "ClusterRole", False, name_rule=NameRule.PATH,
             merge_keys=_META_KEYS, top_fields=role_fields),
        Kind(group, "v1", "clusterrolebindings", "ClusterRoleBinding", False,
             name_rule=NameRule.PATH, merge_keys=_META_KEYS, top_fields=binding_fields,
             columns=(_col("Role", ".roleRef.name"), _AGE)),
    ]
# fmt: on
