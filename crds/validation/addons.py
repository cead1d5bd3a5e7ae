"""Rules for the optional add-ons: the generated NetworkPolicy and the history-server collector.

Both add objects or containers that KubeRay builds from the spec. The NetworkPolicy rules
must make sense for the chosen deny mode and point at existing worker groups (whose names go
into NetworkPolicy names, so they must be DNS labels). The history-server collector needs an
image and a storage backend with its settings, and KubeRay owns its pod-identity env vars and
its container name.
"""

from __future__ import annotations

from crds.common import JSONObject
from crds.enums import NetworkPolicyMode
from crds.raycluster import CollectorOptions, NetworkPolicyRules
from crds.validation import templates
from crds.validation.names import dns1123_label_problem
from crds.validation.scope import ClusterScope
from crds.violations import Violation, join_path

_COLLECTOR_CONTAINER = "ray-history-collector"
_COLLECTOR_MANAGED_ENV = (
    "POD_IP",
    "FQ_RAY_IP",
    "RAY_CLUSTER_NAME",
    "RAY_CLUSTER_NAMESPACE",
    "RAY_ROLE",
    "OWNER_KIND",
    "OWNER_NAME",
    "EVENTS_PORT",
)
_STORAGE_BACKEND = "STORAGE_BACKEND"
_AZURE_AUTH_MODE = "AZURE_STORAGE_AUTH_MODE"
_AZURE_CONNECTION = "AZURE_STORAGE_CONNECTION_STRING"
_AZURE_ACCOUNT_URL = "AZURE_STORAGE_ACCOUNT_URL"
# Settings each storage backend cannot work without; unknown backends are not checked.
_BACKEND_REQUIRED_ENV = {
    "GCS": ("GCS_BUCKET",),
    "S3": ("S3_REGION",),
    "ALIYUNOSS": ("OSS_BUCKET", "OSS_ENDPOINT", "OSS_REGION"),
}


def network_policy(scope: ClusterScope) -> list[Violation]:
    """Rules per side must match the deny mode; per-group entries must name real groups."""
    policy = scope.spec.network_policy
    if policy is None:
        return []
    mode = policy.mode or NetworkPolicyMode.DENY_ALL
    base = scope.at("networkPolicy")
    found = _rules_for_mode(join_path(base, "head"), policy.head, mode)
    found += _rules_for_mode(join_path(base, "worker"), policy.worker, mode)
    names: set[str] = set()
    for index, group in enumerate(scope.spec.worker_group_specs or []):
        names.add(group.group_name)
        problem = dns1123_label_problem(group.group_name)
        if problem is not None:
            path = scope.at("workerGroupSpecs", index, "groupName")
            message = (
                f"with networkPolicy set, the name goes into NetworkPolicy names and {problem}"
            )
            found.append(Violation(path, message))
    for index, entry in enumerate(policy.worker_groups or []):
        entry_path = join_path(base, "workerGroups", index)
        found += _rules_for_mode(entry_path, entry, mode)
        if entry.group_name not in names:
            message = f"no worker group is named {entry.group_name!r}"
            found.append(Violation(join_path(entry_path, "groupName"), message))
    return found


def _rules_for_mode(
    path: str, rules: NetworkPolicyRules | None, mode: NetworkPolicyMode
) -> list[Violation]:
    if rules is None:
        return []
    if mode == NetworkPolicyMode.DENY_ALL_EGRESS and rules.ingress_rules:
        message = f"ingressRules have no effect with mode {mode.value}: ingress is not restricted"
        return [Violation(join_path(path, "ingressRules"), message)]
    if mode == NetworkPolicyMode.DENY_ALL_INGRESS and rules.egress_rules:
        message = f"egressRules have no effect with mode {mode.value}: egress is not restricted"
        return [Violation(join_path(path, "egressRules"), message)]
    return []


def history_server(scope: ClusterScope) -> list[Violation]:
    """The collector sidecar needs its options; its container name is reserved."""
    options = scope.spec.history_server_options
    if options is None:
        return []
    base = scope.at("historyServerOptions", "collectorOptions")
    found: list[Violation] = []
    if options.collector_options is None:
        found.append(Violation(base, "collectorOptions must be set when historyServerOptions is"))
    else:
        found += _collector_options(base, options.collector_options)
    targets = [(scope.head_template_path, scope.spec.head_group_spec.template)]
    for index, group in enumerate(scope.spec.worker_group_specs or []):
        targets.append((scope.worker_template_path(index), group.template))
    for template_path, template in targets:
        for index, container in enumerate(templates.containers(template)):
            if container.get("name") == _COLLECTOR_CONTAINER:
                path = join_path(templates.containers_path(template_path), index, "name")
                message = f"the name {_COLLECTOR_CONTAINER!r} is reserved for KubeRay's collector"
                found.append(Violation(path, message))
    return found


def _collector_options(base: str, options: CollectorOptions) -> list[Violation]:
    found: list[Violation] = []
    if not options.image:
        found.append(Violation(join_path(base, "image"), "the collector image must be set"))
    env = options.env or []
    for index, name in templates.env_entries(env, _COLLECTOR_MANAGED_ENV):
        message = f"{name} is set by KubeRay in the collector container"
        found.append(Violation(join_path(base, "env", index), message))
    problem = _storage_problem({str(var.get("name")): var for var in env})
    if problem is not None:
        found.append(Violation(join_path(base, "env"), problem))
    return found


def _storage_problem(env: dict[str, JSONObject]) -> str | None:
    backend_var = env.get(_STORAGE_BACKEND, {})
    backend = backend_var.get("value")
    if not isinstance(backend, str) or not backend:
        return f"{_STORAGE_BACKEND} must be set to a literal value (GCS, S3, AZUREBLOB, ALIYUNOSS…)"
    backend = backend.upper()
    if backend == "AZUREBLOB":
        return _azure_problem(env)
    for name in _BACKEND_REQUIRED_ENV.get(backend, ()):
        if not _has_value(env, name):
            return f"{name} must be set when {_STORAGE_BACKEND} is {backend}"
    return None


def _azure_problem(env: dict[str, JSONObject]) -> str | None:
    mode_value = env.get(_AZURE_AUTH_MODE, {}).get("value")
    mode = mode_value.strip().lower() if isinstance(mode_value, str) else ""
    if mode == "connection_string":
        required: tuple[str, ...] = (_AZURE_CONNECTION,)
    elif mode in ("workload_identity", "default"):
        required = (_AZURE_ACCOUNT_URL,)
    else:
        required = (_AZURE_CONNECTION, _AZURE_ACCOUNT_URL)
    if any(_has_value(env, name) for name in required):
        return None
    wanted = " or ".join(required)
    return f"{wanted} must be set when {_STORAGE_BACKEND} is AZUREBLOB"


def _has_value(env: dict[str, JSONObject], name: str) -> bool:
    var = env.get(name)
    return var is not None and (bool(var.get("value")) or var.get("valueFrom") is not None)


RULES = (history_server, network_policy)
