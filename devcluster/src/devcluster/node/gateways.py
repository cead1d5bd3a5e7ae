"""The node's Gateway data plane: its identity, its RBAC, and its writes to a real API server.

On a real cluster a Gateway controller (Istio, Envoy Gateway...) programs Gateways and writes
their status; devcluster's `GatewayDataPlane` stands in for one on the node, as its own
identity `devcluster:gateway-data-plane`. Neither a kubelet nor kube-proxy may write Gateways,
so the role `gateway_rbac` returns must be applied with administrator rights by whoever starts
the node (the dev stack does), before the Gateway API's CRDs are installed or after. Writes go
straight out: a refusal (a conflict with a newer copy, a CRD without a status subresource) is
logged and left, as the next change of the object syncs it again.
"""

from __future__ import annotations

import logging
from typing import Any

from devcluster.control_plane.pki import ClientIdentity
from devcluster.node.client import ApiError, Requests

JsonObject = dict[str, Any]
log = logging.getLogger(__name__)
GATEWAY_IDENTITY = ClientIdentity("gateway-data-plane", "devcluster:gateway-data-plane")
GATEWAY_GROUP = "gateway.networking.k8s.io"
GATEWAY_VERSION = "v1"


def object_path(resource: str, obj: JsonObject, sub: str = "") -> str:
    """The REST path of an object stored under `resource` (`<group>/<plural>` or `/<plural>`)."""
    api_version = str(obj.get("apiVersion", ""))
    root = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
    meta = obj["metadata"]
    namespace = f"/namespaces/{meta['namespace']}" if meta.get("namespace") else ""
    path = f"{root}{namespace}/{resource.rsplit('/', 1)[-1]}/{meta['name']}"
    return f"{path}/{sub}" if sub else path


def user_cluster_role(user: str, rules: list[JsonObject]) -> list[JsonObject]:
    """A ClusterRole with these rules and its binding to the user (a node-side identity)."""
    return [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": user},
            "rules": rules,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": user},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": user,
            },
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
        },
    ]


def gateway_rbac() -> list[JsonObject]:
    """The ClusterRole and ClusterRoleBinding the node's Gateway data plane needs."""
    name = GATEWAY_IDENTITY.user
    rules = [
        {
            "apiGroups": [GATEWAY_GROUP],
            "resources": ["gateways", "httproutes"],
            "verbs": ["get", "list", "watch"],
        },
        {"apiGroups": [GATEWAY_GROUP], "resources": ["gateways"], "verbs": ["update"]},
        {
            "apiGroups": [GATEWAY_GROUP],
            "resources": ["gateways/status", "httproutes/status"],
            "verbs": ["update"],
        },
    ]
    return user_cluster_role(name, rules)


class ApiObjectWrites:
    """`ObjectWrites` (see `devcluster.networking.gateway`) over HTTPS."""

    def __init__(self, client: Requests) -> None:
        self.client = client

    async def replace(self, resource: str, obj: JsonObject) -> JsonObject:
        """PUT the object; on a refusal return it unchanged."""
        try:
            return await self.client.request("PUT", object_path(resource, obj), obj)
        except ApiError as err:
            log.debug("%s %s not written: %s", resource, obj["metadata"]["name"], err)
            return obj

    async def write_status(self, resource: str, obj: JsonObject, status: JsonObject) -> None:
        """PUT the status subresource when it differs."""
        if obj.get("status") == status:
            return
        try:
            await self.client.request(
                "PUT", object_path(resource, obj, "status"), {**obj, "status": status}
            )
        except ApiError as err:
            log.debug("status of %s %s not written: %s", resource, obj["metadata"]["name"], err)
