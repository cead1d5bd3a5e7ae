"""The objects a RayCluster owns besides its pods, in KubeRay's creation order.

Autoscaler ServiceAccount, Role and RoleBinding, the head's Ingress, the token-auth Secret, head
Service, headless worker Service, serve Service, the GCS storage PVC, the NetworkPolicies and
the cert-manager Issuers and Certificates of mTLS, a gang scheduler's PodGroup: each is created
when missing, always before the pods that need it. Most are then left alone (KubeRay creates
them once and never updates them); the exceptions are KubeRay's too: a NetworkPolicy and the
Ingress follow the spec, a leaf Certificate follows the pod IPs, a Volcano PodGroup's members
and resources follow the spec, and a NetworkPolicy of a worker group that is gone is deleted.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from activities import builders
from activities.builders import auth, batch_scheduling, ingress, network_policies, pod_groups, tls
from activities.builders.autoscaler import is_autoscaling_enabled
from activities.builders.names import is_controlled_by
from activities.kube import client as kube
from activities.kube.vocabulary import PodPhase
from crds.constants import LABEL_NODE_TYPE
from crds.enums import RayNodeType
from crds.raycluster import RayCluster

# The Event reason KubeRay records when it creates each kind.
CREATED_REASONS = {
    "Service": "CreatedService",
    "ServiceAccount": "CreatedServiceAccount",
    "Role": "CreatedRole",
    "RoleBinding": "CreatedRoleBinding",
    "PersistentVolumeClaim": "CreatedPVC",
    "NetworkPolicy": "CreatedNetworkPolicy",
    "Ingress": "CreatedIngress",
}

# KubeRay's reasons when it rewrites an object to match the spec (or the pod IPs).
UPDATED_REASONS = {
    "NetworkPolicy": "UpdatedNetworkPolicy",
    "Ingress": "UpdatedIngress",
    "Certificate": "MTLSCertificatesUpdated",
}

_RESOURCES = {
    "Secret": kube.SECRETS,
    "Service": kube.SERVICES,
    "ServiceAccount": kube.SERVICE_ACCOUNTS,
    "Role": kube.ROLES,
    "RoleBinding": kube.ROLE_BINDINGS,
    "PersistentVolumeClaim": kube.PVCS,
    "NetworkPolicy": kube.NETWORK_POLICIES,
    "Issuer": kube.ISSUERS,
    "Certificate": kube.CERTIFICATES,
    "Ingress": kube.INGRESSES,
    # Two API groups have a PodGroup: their keys name the group too (`resource_key`).
    f"PodGroup.{kube.VOLCANO_POD_GROUPS.group}": kube.VOLCANO_POD_GROUPS,
    f"PodGroup.{kube.PLUGINS_POD_GROUPS.group}": kube.PLUGINS_POD_GROUPS,
}
GRANTED = ("ServiceAccount", "Role")
"""The kinds the autoscaler's RoleBinding names: one of another owner's is never bound."""
UpdateRule = Callable[[kube.JSON, kube.JSON], bool]
"""(existing, desired) -> whether the existing object must be rewritten."""


def never(_existing: kube.JSON, _desired: kube.JSON) -> bool:
    """The rule of the objects KubeRay creates once and never updates."""
    return False


_UPDATE_RULES: dict[str, UpdateRule] = {
    "NetworkPolicy": network_policies.needs_update,
    "Certificate": tls.certificate_needs_update,
    "Ingress": ingress.ingress_needs_update,
    f"PodGroup.{kube.VOLCANO_POD_GROUPS.group}": pod_groups.needs_update,
}


@dataclass(frozen=True)
class Owned:
    """One object to keep in existence."""

    resource: kube.Resource
    manifest: kube.JSON
    needs_update: UpdateRule = never
    problem: str = ""
    """Why the object cannot be created as the CR stands (a Warning says so), or ""."""

    @property
    def key(self) -> str:
        """`Kind/name`, as reported to the workflow."""
        return f"{self.manifest['kind']}/{self.manifest['metadata']['name']}"

    def updated(self, existing: kube.JSON) -> kube.JSON | None:
        """The existing object rewritten to the wanted spec and labels, or None if it is.

        The annotations too, where the manifest sets them (the Ingress's are the CR's).
        """
        desired = self.manifest
        if desired["kind"] == "Ingress":
            desired = ingress.adopt_class(existing, desired)
        if not self.needs_update(existing, desired):
            return None
        if desired["kind"] == "PodGroup":  # only its members and resources follow the spec
            return pod_groups.updated(existing, desired)
        new = copy.deepcopy(existing)
        new["spec"] = copy.deepcopy(desired["spec"])
        new["metadata"]["labels"] = dict(desired["metadata"]["labels"])
        if "annotations" in desired["metadata"]:
            new["metadata"]["annotations"] = dict(desired["metadata"]["annotations"])
        return new


def created_message(kind: str, namespace: str, name: str) -> str:
    """KubeRay's Event message for an object it created (its wording differs by kind)."""
    if kind == "Ingress":
        return f"Created ingress {namespace}/{name}"
    shown = f"{namespace}/{name}" if kind == "NetworkPolicy" else name
    return f"Created {kind} {shown}"


def updated_message(kind: str, namespace: str, name: str, new: kube.JSON) -> str:
    """KubeRay's Event message for an object it rewrote to match the spec or the pod IPs."""
    if kind == "Certificate":
        return f"Updated certificate {name} SANs (IPs: {new['spec']['ipAddresses']})"
    shown = "ingress" if kind == "Ingress" else kind
    return f"Updated {shown} {namespace}/{name}"


def collision(kind: str, namespace: str, name: str) -> tuple[str, str]:
    """The Warning (reason, message) for an object of ours by name that someone else owns."""
    if kind == "Ingress":  # KubeRay's own wording for this one
        message = (
            f"Ingress {namespace}/{name} already exists and is not owned by this RayCluster; "
            "not modifying it"
        )
        return "FailedToCreateIngress", message
    message = (
        f"{kind} {namespace}/{name} already exists and is not owned by this RayCluster; "
        "it is left as it is"
    )
    if kind in GRANTED:
        message += ", and no RoleBinding is made for it"
    return f"{kind}NameCollision", message


def binds_foreign(owned: Owned, existing: kube.JSON | None, cluster: RayCluster) -> bool:
    """Whether the autoscaler's RoleBinding would bind this existing object of another owner.

    KubeRay creates the Role and the RoleBinding by the cluster's name, the RoleBinding even
    when a Role of that name was there before: a RayCluster named after a Role the platform
    made would bind that Role to a ServiceAccount the cluster's pods run as.
    """
    kind = owned.manifest["kind"]
    return kind in GRANTED and existing is not None and not is_controlled_by(existing, cluster)


@dataclass(frozen=True)
class PodIps:
    """Live pod IPs by node type: what the mTLS leaf certificates must name."""

    head: tuple[str, ...] = ()
    worker: tuple[str, ...] = ()

    @classmethod
    def of(cls, pods: Iterable[kube.JSON]) -> PodIps:
        """The IPs of pods that are neither deleting nor finished, by `ray.io/node-type`."""
        found: dict[str, list[str]] = {RayNodeType.HEAD.value: [], RayNodeType.WORKER.value: []}
        for pod in pods:
            status = pod.get("status") or {}
            if pod["metadata"].get("deletionTimestamp") or status.get("phase") in (
                PodPhase.SUCCEEDED,
                PodPhase.FAILED,
            ):
                continue
            node_type = (pod["metadata"].get("labels") or {}).get(LABEL_NODE_TYPE, "")
            if status.get("podIP") and node_type in found:
                found[node_type].append(status["podIP"])
        return cls(tuple(found[RayNodeType.HEAD.value]), tuple(found[RayNodeType.WORKER.value]))


def wanted_objects(
    cluster: RayCluster, options: builders.BuildOptions, ips: PodIps | None = None
) -> list[Owned]:
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
    if ingress.wants_ingress(cluster):
        manifests.append(ingress.build_head_ingress(cluster))
    if auth.wants_auth_secret(cluster.spec):
        # A fresh token each pass; an existing Secret is kept as it is (created once).
        manifests.append(auth.build_auth_secret(cluster, auth.new_token()))
    manifests.append(builders.build_head_service(cluster, options))
    if builders.wants_headless_service(cluster):
        manifests.append(builders.build_headless_service(cluster))
    if builders.wants_serve_service(cluster):
        manifests.append(builders.build_serve_service(cluster))
    pvc = builders.build_gcs_storage_pvc(cluster)
    if pvc is not None:
        manifests.append(pvc)
    manifests += network_policies.build_network_policies(cluster)
    ips = ips or PodIps()
    manifests += tls.build_tls_objects(cluster, ips.head, ips.worker, options.cluster_domain)
    owned = [_owned(m) for m in manifests]
    pod_group = pod_groups.cluster_pod_group(options.batch_scheduler, cluster)
    if pod_group is not None:  # last, as KubeRay makes it: just before the pods
        owned.append(_owned(pod_group, batch_scheduling.label_problem(cluster.labels)))
    return owned


def resource_key(manifest: kube.JSON) -> str:
    """The key of a manifest's kind in the tables: the kind, or `Kind.group` for a PodGroup."""
    kind = manifest["kind"]
    if kind == "PodGroup":
        return f"{kind}.{manifest['apiVersion'].split('/')[0]}"
    return str(kind)


def _owned(manifest: kube.JSON, problem: str = "") -> Owned:
    key = resource_key(manifest)
    return Owned(_RESOURCES[key], manifest, _UPDATE_RULES.get(key, never), problem)
