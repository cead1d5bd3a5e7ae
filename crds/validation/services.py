"""RayService rules: the upgrade strategy, its incremental options, and service-level settings.

A RayService replaces its RayCluster on spec changes. The incremental strategy shifts traffic
step by step through a Gateway and lets the autoscaler size the new cluster, so it needs the
autoscaler and consistent percentages. The head Service name is chosen by KubeRay (the
RayService keeps a stable one across clusters), and the initializing timeout annotation must
be a duration KubeRay can read.
"""

from __future__ import annotations

from crds.constants import ANNOTATION_INITIALIZING_TIMEOUT
from crds.enums import RayServiceUpgradeType
from crds.messages import quoted
from crds.rayservice import ClusterUpgradeOptions, RayService, RayServiceSpec
from crds.validation import formats
from crds.validation.clusters import cluster_spec_violations
from crds.validation.names import managed_by_violations
from crds.validation.references import serve_service_reference
from crds.validation.scope import RAYSERVICE_KIND, ClusterScope, is_autoscaling, key_path
from crds.validation.service_types import serve_service_violations
from crds.violations import Violation

_CLUSTER_PATH = "spec.rayClusterConfig"
_OPTIONS_PATH = "spec.upgradeStrategy.clusterUpgradeOptions"
_DEFAULT_MAX_SURGE_PERCENT = 100


def rayservice_violations(service: RayService) -> list[Violation]:
    """Every RayService rule except the name (checked by the caller)."""
    spec = service.spec
    found = initializing_timeout(service.annotations)
    found += managed_by_violations(spec.managed_by, "spec.managedBy")
    scope = ClusterScope(
        spec.ray_cluster_config, _CLUSTER_PATH, RAYSERVICE_KIND, service.annotations
    )
    found += cluster_spec_violations(scope)
    found += _head_service_name(spec)
    found += serve_service_reference(spec)
    found += serve_service_violations(spec)
    found += _deletion_delay(spec)
    found += upgrade_options(spec)
    found += _serve_config(spec)
    return found


def initializing_timeout(annotations: dict[str, str]) -> list[Violation]:
    """`ray.io/initializing-timeout`: a positive Go duration ("30m") or integer seconds."""
    value = annotations.get(ANNOTATION_INITIALIZING_TIMEOUT)
    if not value:
        return []
    path = key_path("metadata.annotations", ANNOTATION_INITIALIZING_TIMEOUT)
    nanos = formats.parse_duration_or_seconds(value)
    if nanos is None:
        message = (
            f"{quoted(value)} is neither a duration such as '30m' or '1h' "
            f"nor a whole number of seconds (at most {formats.MAX_DURATION_SECONDS})"
        )
        return [Violation(path, message)]
    if nanos <= 0:
        return [Violation(path, f"the initializing timeout must be positive (got {quoted(value)})")]
    return []


def _head_service_name(spec: RayServiceSpec) -> list[Violation]:
    head_service = spec.ray_cluster_config.head_group_spec.head_service or {}
    metadata = head_service.get("metadata")
    if not isinstance(metadata, dict) or not metadata.get("name"):
        return []
    path = f"{_CLUSTER_PATH}.headGroupSpec.headService.metadata.name"
    message = (
        "a RayService's head Service name cannot be set: each new RayCluster would "
        "collide with the old one's Service during an upgrade"
    )
    return [Violation(path, message)]


def _deletion_delay(spec: RayServiceSpec) -> list[Violation]:
    delay = spec.ray_cluster_deletion_delay_seconds
    if delay is None or delay >= 0:
        return []
    message = f"rayClusterDeletionDelaySeconds must not be negative (got {delay})"
    return [Violation("spec.rayClusterDeletionDelaySeconds", message)]


def upgrade_options(spec: RayServiceSpec) -> list[Violation]:
    """Incremental upgrades need the autoscaler and complete, consistent options."""
    strategy = spec.upgrade_strategy
    if strategy is None:
        return []
    options = strategy.cluster_upgrade_options
    if strategy.type != RayServiceUpgradeType.NEW_CLUSTER_WITH_INCREMENTAL_UPGRADE:
        return _schema_required(options)
    found: list[Violation] = []
    if not is_autoscaling(spec.ray_cluster_config):
        message = (
            "NewClusterWithIncrementalUpgrade needs the autoscaler: "
            "set enableInTreeAutoscaling: true"
        )
        found.append(Violation(f"{_CLUSTER_PATH}.enableInTreeAutoscaling", message))
    if options is None:
        message = "clusterUpgradeOptions are required for NewClusterWithIncrementalUpgrade"
        return [*found, Violation(_OPTIONS_PATH, message)]
    return found + _incremental_options(options)


def _incremental_options(options: ClusterUpgradeOptions) -> list[Violation]:
    found: list[Violation] = []
    surge = options.max_surge_percent
    surge = _DEFAULT_MAX_SURGE_PERCENT if surge is None else surge
    step = options.step_size_percent
    if not 0 <= surge <= 100:
        found.append(_option("maxSurgePercent", f"must be between 0 and 100 (got {surge})"))
    if step is None or not 0 <= step <= 100:
        got = "unset" if step is None else str(step)
        found.append(_option("stepSizePercent", f"must be between 0 and 100 (got {got})"))
    elif step > surge:
        message = f"({step}) must not exceed maxSurgePercent ({surge})"
        found.append(_option("stepSizePercent", message))
    interval = options.interval_seconds
    if interval is None or interval <= 0:
        got = "unset" if interval is None else str(interval)
        found.append(_option("intervalSeconds", f"must be greater than 0 (got {got})"))
    if not options.gateway_class_name:
        message = "is required: it names the GatewayClass that routes traffic between clusters"
        found.append(_option("gatewayClassName", message))
    return found


def _option(field_name: str, problem: str) -> Violation:
    return Violation(f"{_OPTIONS_PATH}.{field_name}", f"{field_name} {problem}")


def _schema_required(options: ClusterUpgradeOptions | None) -> list[Violation]:
    """The CRD requires these three whenever clusterUpgradeOptions is present."""
    if options is None:
        return []
    given = {
        "stepSizePercent": options.step_size_percent,
        "intervalSeconds": options.interval_seconds,
        "gatewayClassName": options.gateway_class_name,
    }
    return [
        _option(name, "is required in clusterUpgradeOptions")
        for name, value in given.items()
        if value is None
    ]


def _serve_config(spec: RayServiceSpec) -> list[Violation]:
    if not spec.serve_config_v2:
        return []
    problem = formats.yaml_mapping_problem(spec.serve_config_v2)
    if problem is None:
        return []
    return [Violation("spec.serveConfigV2", f"serveConfigV2 {problem}")]
