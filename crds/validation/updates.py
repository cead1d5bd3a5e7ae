"""Rules that compare an object with its previous version: fields that cannot change.

The CRDs mark two fields immutable with CEL transition rules (`self == oldSelf`): `managedBy`
(who reconciles the object must not flip mid-life) and `gcsFaultToleranceOptions.backend`
(switching storage would silently drop the GCS state). A transition rule only runs when the
field is present in both versions, so setting or removing one is not a change here, exactly
as the API server sees it. KubeRay has no other update-time rules: a RayJob's clusterSelector
and submissionMode may change (the controller simply acts on the new values, or ignores them
once the job has started). A RayCronJob's job template carries the same rules as a RayJob's
spec, under `spec.jobTemplate`.
"""

from __future__ import annotations

from crds.common import RayObject
from crds.messages import quoted
from crds.raycluster import RayCluster, RayClusterSpec
from crds.raycronjob import RayCronJob
from crds.rayjob import RayJob
from crds.rayservice import RayService
from crds.violations import Violation, join_path


def update_violations(old: RayObject, new: RayObject) -> list[Violation]:
    """Immutable fields that differ between `old` and `new`."""
    if old.kind != new.kind:
        return [Violation("kind", f"the kind cannot change (was {old.kind}, now {new.kind})")]
    path, before = _managed_by(old)
    found = _unchanged(path, "the managedBy field", before, _managed_by(new)[1])
    for path, old_spec, new_spec in _cluster_specs(old, new):
        found += _backend(path, old_spec, new_spec)
        found += _unchanged(
            join_path(path, "managedBy"),
            "the managedBy field",
            old_spec.managed_by,
            new_spec.managed_by,
        )
    return found


def _unchanged(path: str, what: str, before: str | None, after: str | None) -> list[Violation]:
    if before is None or after is None or before == after:
        return []
    return [Violation(path, f"{what} is immutable (was {quoted(before)}, now {quoted(after)})")]


def _managed_by(obj: RayObject) -> tuple[str, str | None]:
    """Where a kind keeps its own `managedBy`, and its value."""
    if isinstance(obj, RayJob | RayService):
        return "spec.managedBy", obj.spec.managed_by
    if isinstance(obj, RayCronJob):
        return "spec.jobTemplate.managedBy", obj.spec.job_template.managed_by
    return "spec.managedBy", None


def _backend(path: str, old: RayClusterSpec, new: RayClusterSpec) -> list[Violation]:
    before, after = old.gcs_fault_tolerance_options, new.gcs_fault_tolerance_options
    if before is None or after is None:
        return []
    return _unchanged(
        join_path(path, "gcsFaultToleranceOptions", "backend"),
        "the GCS fault-tolerance backend",
        before.backend,
        after.backend,
    )


def _cluster_specs(
    old: RayObject, new: RayObject
) -> list[tuple[str, RayClusterSpec, RayClusterSpec]]:
    if isinstance(old, RayCluster) and isinstance(new, RayCluster):
        return [("spec", old.spec, new.spec)]
    if isinstance(old, RayJob) and isinstance(new, RayJob):
        if old.spec.ray_cluster_spec is None or new.spec.ray_cluster_spec is None:
            return []
        return [("spec.rayClusterSpec", old.spec.ray_cluster_spec, new.spec.ray_cluster_spec)]
    if isinstance(old, RayCronJob) and isinstance(new, RayCronJob):
        before, after = old.spec.job_template, new.spec.job_template
        if before.ray_cluster_spec is None or after.ray_cluster_spec is None:
            return []
        path = "spec.jobTemplate.rayClusterSpec"
        return [(path, before.ray_cluster_spec, after.ray_cluster_spec)]
    if isinstance(old, RayService) and isinstance(new, RayService):
        return [("spec.rayClusterConfig", old.spec.ray_cluster_config, new.spec.ray_cluster_config)]
    return []
