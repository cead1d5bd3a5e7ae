"""The CustomResourceDefinitions of the ray.io/v1 kinds, generated from the models.

The pydantic models are the one description of the ray.io/v1 kinds; the CRDs the API server
enforces are derived from them here, so a field added to a model cannot be forgotten in the
CRD (`tests/crds/test_manifests.py` fails when `deploy/crds/` drifts from this module).

The schemas are *structural* (every node typed, no `$ref`, no free unions) because
apiextensions.k8s.io/v1 requires it for pruning, defaulting and CEL rules. Names, categories
and printer columns are KubeRay's, so `kubectl get rayjobs` reads the same under both
controllers.

Embedded Kubernetes objects (pod templates, Services, env vars, resource requirements…) are
`type: object` with `x-kubernetes-preserve-unknown-fields: true` instead of fully typed.
KubeRay inlines the whole PodTemplateSpec schema at every use, which makes each of its CRDs
0.9-1.4 MB: above the 256 KiB limit on the `last-applied-configuration` annotation, so plain
client-side `kubectl apply -f` fails on them. Our models keep those objects verbatim too, and
the API server still validates them in full when the controller creates the Pod or Service.
Only the defaults Kubernetes declares inside them are described (`crds.embedded`), so a
manifest is stored the same under our CRDs as under KubeRay's.

On top of the models' own shape, the schemas carry KubeRay's server-side rules for the fields
the models type: its `default:` values (applied by the API server, so the controller sees
e.g. `minReplicas: 0` however the user wrote the manifest), its minimums and narrowed enums,
and its CEL `x-kubernetes-validations` (managedBy and GCS backend immutability, deletion
strategy shape). A manifest KubeRay's API server rejects is rejected here too. A RayCronJob's
`jobTemplate` is a RayJobSpec, so it gets all of a RayJob spec's rules where it is embedded.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from crds import embedded
from crds.common import JSONObject, RayModel, RayObject
from crds.constants import GROUP, MANAGED_BY_ALLOWED, VERSION
from crds.enums import (
    JobDeploymentStatus,
    JobStatus,
    JobSubmissionMode,
    NetworkPolicyMode,
)
from crds.loading import KIND_MODELS
from crds.raycluster import (
    AutoscalerOptions,
    CollectorOptions,
    GcsFaultToleranceOptions,
    HeadGroupSpec,
    NetworkPolicyConfig,
    RayClusterSpec,
    RayClusterStatus,
    RedisCredential,
    WorkerGroupSpec,
)
from crds.raycronjob import RayCronJobSpec
from crds.rayjob import DeletionCondition, DeletionStrategy, RayJobSpec, RayJobStatus
from crds.rayservice import ClusterUpgradeOptions, RayServiceSpec, RayServiceStatuses
from crds.validation.versions import MAX_LENGTH as MAX_RAY_VERSION_LENGTH

INT32_MAX = 2**31 - 1


def _aliases(model: type[RayModel], *fields: str) -> list[str]:
    """The JSON names of some fields of a model (a typo fails here, not in a cluster)."""
    return [model.model_fields[field].alias or field for field in fields]


_IMMUTABLE = {"rule": "self == oldSelf"}

_MANAGED_BY_RULES = [
    {**_IMMUTABLE, "message": "the managedBy field is immutable"},
    {
        "rule": f"self in {list(MANAGED_BY_ALLOWED)!r}",
        "message": "the managedBy field value must be either "
        + " or ".join(repr(value) for value in MANAGED_BY_ALLOWED),
    },
]

_CONDITIONS_LIST = {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]}

# Schema keywords merged into one field of one model, wherever that model is embedded (a
# RayClusterSpec inside a RayJob gets the same defaults as a RayCluster's spec). Keyed by the
# model and the field's Python name; an unknown name fails generation.
_FIELD_RULES: dict[tuple[type[RayModel], str], JSONObject] = {
    (WorkerGroupSpec, "replicas"): {"default": 0},
    (WorkerGroupSpec, "min_replicas"): {"default": 0},
    (WorkerGroupSpec, "max_replicas"): {"default": INT32_MAX},
    (WorkerGroupSpec, "num_of_hosts"): {"default": 1},
    (WorkerGroupSpec, "priority"): {"default": 0},
    (NetworkPolicyConfig, "mode"): {"default": NetworkPolicyMode.DENY_ALL.value},
    (NetworkPolicyConfig, "worker_groups"): {
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["groupName"],
    },
    (GcsFaultToleranceOptions, "backend"): {
        "x-kubernetes-validations": [
            {**_IMMUTABLE, "message": "gcsFaultToleranceOptions.backend is immutable"}
        ]
    },
    (RayClusterSpec, "managed_by"): {"x-kubernetes-validations": _MANAGED_BY_RULES},
    # Ours: KubeRay sets no limit, but the version is parsed on every pass.
    (RayClusterSpec, "ray_version"): {"maxLength": MAX_RAY_VERSION_LENGTH},
    (RayClusterStatus, "conditions"): _CONDITIONS_LIST,
    (RayJobSpec, "managed_by"): {"x-kubernetes-validations": _MANAGED_BY_RULES},
    (RayJobSpec, "backoff_limit"): {"default": 0},
    (RayJobSpec, "submission_mode"): {"default": JobSubmissionMode.K8S_JOB.value},
    (RayJobSpec, "ttl_seconds_after_finished"): {"default": 0},
    (RayJobSpec, "pre_running_deadline_seconds"): {"minimum": 1},
    (RayJobStatus, "succeeded"): {"default": 0},
    (RayJobStatus, "failed"): {"default": 0},
    (DeletionStrategy, "deletion_rules"): {"minItems": 1, "x-kubernetes-list-type": "atomic"},
    # KubeRay accepts only these statuses in a deletion rule: the ones a job ends in.
    (DeletionCondition, "job_status"): {"enum": [JobStatus.SUCCEEDED, JobStatus.FAILED]},
    (DeletionCondition, "job_deployment_status"): {"enum": [JobDeploymentStatus.FAILED]},
    (DeletionCondition, "ttl_seconds"): {"default": 0, "minimum": 0},
    (RayServiceSpec, "managed_by"): {"x-kubernetes-validations": _MANAGED_BY_RULES},
    (RayServiceSpec, "ray_cluster_deletion_delay_seconds"): {"minimum": 0},
    (RayServiceStatuses, "conditions"): _CONDITIONS_LIST,
    (ClusterUpgradeOptions, "max_surge_percent"): {"default": 100},
    # An empty zone is refused (Go would read it as UTC): leaving the field out is how a
    # RayCronJob asks for the controller's local zone.
    (RayCronJobSpec, "time_zone"): {"minLength": 1},
    # The embedded Kubernetes objects, with the defaults their own types declare.
    (HeadGroupSpec, "template"): embedded.schema(embedded.POD_TEMPLATE),
    (HeadGroupSpec, "head_service"): embedded.schema(embedded.SERVICE),
    (WorkerGroupSpec, "template"): embedded.schema(embedded.POD_TEMPLATE),
    (AutoscalerOptions, "env"): embedded.schema([embedded.ENV_VAR]),
    (AutoscalerOptions, "env_from"): embedded.schema([embedded.ENV_FROM_SOURCE]),
    (RedisCredential, "value_from"): embedded.schema(embedded.ENV_VAR_SOURCE),
    (CollectorOptions, "env"): embedded.schema([embedded.ENV_VAR]),
    (RayJobSpec, "submitter_pod_template"): embedded.schema(embedded.POD_TEMPLATE),
    (RayServiceSpec, "serve_service"): embedded.schema(embedded.SERVICE),
}

# Schema keywords merged into a model's own object node.
_MODEL_RULES: dict[type[RayModel], JSONObject] = {
    # The model leaves these optional; KubeRay's API server requires them, and so does ours.
    ClusterUpgradeOptions: {
        "required": _aliases(
            ClusterUpgradeOptions, "gateway_class_name", "interval_seconds", "step_size_percent"
        )
    },
    DeletionStrategy: {
        "x-kubernetes-validations": [
            {
                "rule": "!((has(self.onSuccess) || has(self.onFailure))"
                " && has(self.deletionRules))",
                "message": "legacy policies (onSuccess/onFailure) and deletionRules cannot be "
                "used together within the same deletionStrategy",
            },
            {
                "rule": "(has(self.onSuccess) && has(self.onFailure)) || has(self.deletionRules)",
                "message": "deletionStrategy requires either BOTH onSuccess and onFailure, "
                "OR the deletionRules field (cannot be empty)",
            },
        ]
    },
    DeletionCondition: {
        "x-kubernetes-validations": [
            {
                "rule": "!(has(self.jobStatus) && has(self.jobDeploymentStatus))",
                "message": "JobStatus and JobDeploymentStatus cannot be used together within "
                "the same deletion condition.",
            },
            {
                "rule": "has(self.jobStatus) || has(self.jobDeploymentStatus)",
                "message": "the deletion condition requires either the JobStatus or the "
                "JobDeploymentStatus field.",
            },
        ]
    },
}

# Pydantic keywords with no meaning in a CRD. (Pydantic's field `default`s are dropped too,
# in `_merge_rules`: they are the models' "unset" marker, not values the API server should
# write; the CRD's defaults are KubeRay's, from the tables above.)
_DROPPED_KEYWORDS = frozenset({"title", "const", "additionalProperties"})


@dataclass(frozen=True)
class _Column:
    """One `additionalPrinterColumns` entry."""

    name: str
    json_path: str
    type: str = "string"
    priority: int = 0

    def to_json(self) -> JSONObject:
        out: JSONObject = {"name": self.name, "type": self.type, "jsonPath": self.json_path}
        if self.priority:
            out["priority"] = self.priority
        return out


_AGE = _Column("age", ".metadata.creationTimestamp", "date")

# KubeRay's columns, in KubeRay's order, so `kubectl get` output is the same.
_PRINTER_COLUMNS: dict[str, list[_Column]] = {
    "RayCluster": [
        _Column("desired workers", ".status.desiredWorkerReplicas", "integer"),
        _Column("available workers", ".status.availableWorkerReplicas", "integer"),
        _Column("cpus", ".status.desiredCPU"),
        _Column("memory", ".status.desiredMemory"),
        _Column("gpus", ".status.desiredGPU"),
        _Column("tpus", ".status.desiredTPU", priority=1),
        _Column("status", ".status.state"),
        _AGE,
        _Column("head pod IP", ".status.head.podIP", priority=1),
        _Column("head service IP", ".status.head.serviceIP", priority=1),
    ],
    "RayJob": [
        _Column("job status", ".status.jobStatus"),
        _Column("deployment status", ".status.jobDeploymentStatus"),
        _Column("ray cluster name", ".status.rayClusterName"),
        _Column("start time", ".status.startTime"),
        _Column("end time", ".status.endTime"),
        _AGE,
    ],
    "RayService": [
        _Column("service status", ".status.serviceStatus"),
        # KubeRay declares this integer field as a string column; kept for identical output.
        _Column("num serve endpoints", ".status.numServeEndpoints"),
    ],
    "RayCronJob": [
        _Column("schedule", ".spec.schedule"),
        _Column("timezone", ".spec.timeZone"),
        _Column("last schedule", ".status.lastScheduleTime", "date"),
        _AGE,
        _Column("suspend", ".spec.suspend", "boolean"),
    ],
}


def crd_manifests() -> list[JSONObject]:
    """Return the CustomResourceDefinitions of every ray.io kind (`crds.loading.KIND_MODELS`)."""
    return [crd_manifest(kind) for kind in KIND_MODELS]


def crd_manifest(kind: str) -> JSONObject:
    """Return the apiextensions.k8s.io/v1 CustomResourceDefinition of one ray.io kind.

    Args:
        kind: `RayCluster`, `RayJob`, `RayService` or `RayCronJob`.

    Returns:
        The CRD as a JSON object, ready to dump as YAML or send to the API server.
    """
    singular = kind.lower()
    plural = f"{singular}s"
    version: JSONObject = {
        "name": VERSION,
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": open_api_schema(KIND_MODELS[kind])},
        "subresources": {"status": {}},
        "additionalPrinterColumns": [column.to_json() for column in _PRINTER_COLUMNS[kind]],
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": singular,
                "categories": ["all"],
            },
            "scope": "Namespaced",
            "versions": [version],
        },
    }


def open_api_schema(model: type[RayObject]) -> JSONObject:
    """Return the structural openAPIV3Schema of a top-level ray.io model.

    Args:
        model: `RayCluster`, `RayJob`, `RayService` or `RayCronJob`.

    Returns:
        A schema with every `$ref` inlined, KubeRay's defaults and rules merged in, and
        `metadata` left to the API server (`type: object`), as in every CRD.
    """
    raw = model.model_json_schema(by_alias=True, mode="validation")
    defs: dict[str, JSONObject] = raw.pop("$defs", {})
    _merge_rules(raw, defs)
    schema = _structural(raw, defs)
    schema["properties"].update(
        {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
        }
    )
    return schema


def _merge_rules(root: JSONObject, defs: dict[str, JSONObject]) -> None:
    """Drop pydantic's field defaults, then merge KubeRay's rules into the definitions."""
    for definition in [root, *defs.values()]:
        for prop in definition.get("properties", {}).values():
            prop.pop("default", None)
    for model, rules in _MODEL_RULES.items():
        if model.__name__ in defs:
            defs[model.__name__].update(copy.deepcopy(rules))
    for (model, field), rules in _FIELD_RULES.items():
        [alias] = _aliases(model, field)
        if model.__name__ in defs:
            defs[model.__name__]["properties"][alias].update(copy.deepcopy(rules))


def _structural(node: JSONObject, defs: dict[str, JSONObject]) -> JSONObject:
    """Rewrite one pydantic JSON-schema node (and its children) into structural form."""
    if "$ref" in node:
        target = defs[node["$ref"].rsplit("/", 1)[-1]]
        siblings = {key: value for key, value in node.items() if key != "$ref"}
        return _structural({**target, **siblings}, defs)
    if "anyOf" in node:
        return _union(node, defs)
    out = {key: value for key, value in node.items() if key not in _DROPPED_KEYWORDS}
    if "properties" in out:
        out["properties"] = {
            name: _structural(child, defs) for name, child in out["properties"].items()
        }
    if "items" in out:
        out["items"] = _structural(out["items"], defs)
    extra = node.get("additionalProperties")
    if extra is True:
        # A JSONObject (dict[str, Any]): an embedded Kubernetes object kept verbatim.
        out["x-kubernetes-preserve-unknown-fields"] = True
    elif isinstance(extra, dict):
        out["additionalProperties"] = _structural(extra, defs)
    if "enum" in out:
        out["enum"] = [_plain(value) for value in out["enum"]]
    return out


def _union(node: JSONObject, defs: dict[str, JSONObject]) -> JSONObject:
    """Resolve `X | None`, int-or-string and int-or-float, the only unions the models use."""
    variants = [variant for variant in node["anyOf"] if variant != {"type": "null"}]
    rest = {key: value for key, value in node.items() if key != "anyOf"}
    if len(variants) == 1:
        # `X | None`: the API server drops nulls of non-nullable fields, so X alone says it.
        return _structural({**variants[0], **rest}, defs)
    kinds = {variant.get("type") for variant in variants}
    plain = {key: value for key, value in rest.items() if key not in _DROPPED_KEYWORDS}
    if kinds == {"integer", "string"}:
        return {**plain, "x-kubernetes-int-or-string": True}
    if kinds == {"integer", "number"}:
        return {**plain, "type": "number"}
    raise ValueError(f"no structural form for the union {variants!r}")


def _plain(value: Any) -> Any:
    """Turn StrEnum members (from the rule tables) into the plain strings YAML can dump."""
    return str(value) if isinstance(value, str) else value
