"""The objects a RayCluster owns besides its pods, in KubeRay's creation order.

Autoscaler ServiceAccount, Role and RoleBinding, head Service, headless worker Service, serve
Service, and the GCS storage PVC: each is created when missing and otherwise left alone
(KubeRay creates them once and never updates them), always before the pods that need them.
"""

from __future__ import annotations

from dataclasses import dataclass

from activities import builders, kube
from activities.builders.autoscaler import is_autoscaling_enabled
from crds.raycluster import RayCluster

# The Event reason KubeRay records when it creates each kind.
CREATED_REASONS = {
    "Service": "CreatedService",
    "ServiceAccount": "CreatedServiceAccount",
    "Role": "CreatedRole",
    "RoleBinding": "CreatedRoleBinding",
    "PersistentVolumeClaim": "CreatedPVC",
}

_RESOURCES = {
    "Service": kube.SERVICES,
    "ServiceAccount": kube.SERVICE_ACCOUNTS,
    "Role": kube.ROLES,
    "RoleBinding": kube.ROLE_BINDINGS,
    "PersistentVolumeClaim": kube.PVCS,
}


@dataclass(frozen=True)
class Owned:
    """One object to keep in existence."""

    resource: kube.Resource
    manifest: kube.JSON

    @property
    def key(self) -> str:
        """`Kind/name`, as reported to the workflow."""
        return f"{self.manifest['kind']}/{self.manifest['metadata']['name']}"


def wanted_objects(cluster: RayCluster, options: builders.BuildOptions) -> list[Owned]:
    """Every non-pod object the cluster should own, in creation order."""
    manifests = []
    if is_autoscaling_enabled(cluster.spec):
        head_spec = cluster.spec.head_group_spec.template.get("spec") or {}
        if not head_spec.get("serviceAccountName"):  # a named account is the user's to create
            manifests.append(builders.build_autoscaler_service_account(cluster))
        manifests += [
            builders.build_autoscaler_role(cluster),
            builders.build_autoscaler_role_binding(cluster),
        ]
    manifests.append(builders.build_head_service(cluster, options))
    if builders.wants_headless_service(cluster):
        manifests.append(builders.build_headless_service(cluster))
    if builders.wants_serve_service(cluster):
        manifests.append(builders.build_serve_service(cluster))
    pvc = builders.build_gcs_storage_pvc(cluster)
    if pvc is not None:
        manifests.append(pvc)
    return [Owned(_RESOURCES[m["kind"]], m) for m in manifests]
