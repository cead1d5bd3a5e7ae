"""Semantic validation of ray.io objects: KubeRay's rules as pure functions.

`validate(obj)` returns every violation found (never only the first), each with a field path
and a plain message, so that a user fixes a manifest in one round. It covers what KubeRay
rejects beyond the schema the models already enforce: its controllers' validation
(`utils/validation.go`), its admission webhooks and the CRDs' CEL, enum and minimum rules.
`validate_update(old, new)` adds the rules that compare two versions (immutable fields).

The modules split the rules by concept: `names` (object names, labels, managedBy), `integers`
(every integer field within its Go type's range), `references` (the names a CR uses to
address other objects), `service_types` (what the Services made for a CR may be), `clusters`
(any RayClusterSpec) with `sizes`, `resources` (quantities), `ports`,
`autoscaling`, `fault_tolerance`, `security` and `addons`, then `jobs` with `deletion`,
`services`, `cronjobs` with `schedules` (cron strings and time zones), and `updates`.
"""

from __future__ import annotations

from crds.common import RayObject
from crds.enums import ConditionStatus, RayClusterConditionType
from crds.raycluster import RayCluster
from crds.raycronjob import RayCronJob
from crds.rayjob import RayJob
from crds.rayservice import RayService
from crds.validation.clusters import cluster_spec_violations, owner_kind_of
from crds.validation.cronjobs import raycronjob_violations
from crds.validation.integers import integer_violations
from crds.validation.jobs import rayjob_violations
from crds.validation.names import managed_by_violations, object_name_violations
from crds.validation.scope import ClusterScope
from crds.validation.services import rayservice_violations
from crds.validation.updates import update_violations
from crds.violations import Violation

__all__ = ["validate", "validate_update"]


def validate(obj: RayObject) -> list[Violation]:
    """Return every rule the object breaks; an empty list means it is valid."""
    found = object_name_violations(obj)
    found += integer_violations(obj)
    if isinstance(obj, RayCluster):
        found += _raycluster_violations(obj)
    elif isinstance(obj, RayJob):
        found += rayjob_violations(obj)
    elif isinstance(obj, RayService):
        found += rayservice_violations(obj)
    elif isinstance(obj, RayCronJob):
        found += raycronjob_violations(obj)
    return found


def validate_update(old: RayObject, new: RayObject) -> list[Violation]:
    """Return the update-only rules `new` breaks given `old` (immutable fields).

    Run `validate(new)` as well: this function does not repeat the rules on `new` alone.
    """
    return update_violations(old, new)


def _raycluster_violations(cluster: RayCluster) -> list[Violation]:
    scope = ClusterScope(cluster.spec, "spec", owner_kind_of(cluster), cluster.annotations)
    found = managed_by_violations(cluster.spec.managed_by, "spec.managedBy")
    found += cluster_spec_violations(scope)
    found += _suspend_conditions(cluster)
    return found


def _suspend_conditions(cluster: RayCluster) -> list[Violation]:
    """Suspending and Suspended are successive states, never true together."""
    conditions = (cluster.status.conditions if cluster.status else None) or []
    true_types = {c.type for c in conditions if c.status == ConditionStatus.TRUE}
    both = {RayClusterConditionType.SUSPENDING, RayClusterConditionType.SUSPENDED}
    if not both <= true_types:
        return []
    message = "RayClusterSuspending and RayClusterSuspended cannot both be True"
    return [Violation("status.conditions", message)]
