"""What a real API server's node prepares before a pod runs: its objects, tokens and env.

The Node authorizer lets a kubelet read only the ConfigMaps and Secrets of pods bound to it,
one by one, never list them; so before a pod starts, each one it references (volumes,
projected sources, env and envFrom) is fetched into the mirror, where the runtimes' lookups
find it. The ServiceAccount admission plugin gives pods a projected volume whose token the
kubelet must mint: a TokenRequest for the pod's ServiceAccount, bound to the pod, which the
Node authorizer allows for pods on the node. Tokens are minted once per pod: the API server
extends the default hour-long projected tokens to a year (`--service-account-extend-token-
expiration`), so no refresh is needed while a development cluster runs.

`references` is pure.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator, Mapping
from typing import Any

from devcluster.kubelet import envs
from devcluster.node.client import ApiError, Requests
from devcluster.node.mirror import Mirror

JsonObject = dict[str, Any]
log = logging.getLogger(__name__)
_RESOURCES = {"configMap": ("/configmaps", "configmaps"), "secret": ("/secrets", "secrets")}


def _volume_refs(volume: JsonObject) -> Iterator[tuple[str, str]]:
    if "configMap" in volume:
        yield "configMap", volume["configMap"].get("name", "")
    if "secret" in volume:
        yield "secret", volume["secret"].get("secretName", "")
    for source in (volume.get("projected") or {}).get("sources") or []:
        if "configMap" in source:
            yield "configMap", source["configMap"].get("name", "")
        if "secret" in source:
            yield "secret", source["secret"].get("name", "")


def _container_refs(container: JsonObject) -> Iterator[tuple[str, str]]:
    for source in container.get("envFrom") or []:
        if "configMapRef" in source:
            yield "configMap", source["configMapRef"].get("name", "")
        if "secretRef" in source:
            yield "secret", source["secretRef"].get("name", "")
    for var in container.get("env") or []:
        value_from = var.get("valueFrom") or {}
        if "configMapKeyRef" in value_from:
            yield "configMap", value_from["configMapKeyRef"].get("name", "")
        if "secretKeyRef" in value_from:
            yield "secret", value_from["secretKeyRef"].get("name", "")


def references(pod: JsonObject) -> list[tuple[str, str]]:
    """The (configMap|secret, name) pairs a pod uses, each once, in order of appearance."""
    spec = pod.get("spec") or {}
    found: list[tuple[str, str]] = []
    for volume in spec.get("volumes") or []:
        found += _volume_refs(volume)
    for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        found += _container_refs(container)
    return list(dict.fromkeys(ref for ref in found if ref[1]))


def token_sources(pod: JsonObject) -> list[JsonObject]:
    """The projected `serviceAccountToken` sources of a pod's volumes."""
    return [
        source["serviceAccountToken"]
        for volume in (pod.get("spec") or {}).get("volumes") or []
        for source in (volume.get("projected") or {}).get("sources") or []
        if "serviceAccountToken" in source
    ]


def _token_key(uid: str, source: JsonObject) -> tuple[str, str, int]:
    return uid, str(source.get("audience", "")), int(source.get("expirationSeconds", 3600))


_MISSING_ATTEMPTS = 30
_MISSING_PAUSE = 1.0  # seconds between asks for a missing ConfigMap or Secret


class NodePodSetup:
    """`PodSetup` for a node of a real API server (see the module docstring)."""

    def __init__(self, client: Requests, mirror: Mirror, *, mint_tokens: bool = True) -> None:
        self.client, self.mirror = client, mirror
        self.mint_tokens = mint_tokens
        self._tokens: dict[tuple[str, str, int], bytes] = {}

    async def prepare(self, pod: JsonObject) -> None:
        """Fetch the pod's ConfigMaps and Secrets; mint its tokens (failures are logged).

        A missing (or not yet readable) one is asked for again for a while before the pod
        starts without it, as a kubelet keeps a pod ContainerCreating: in a namespace just
        created, the controller manager publishes `kube-root-ca.crt` (every service-account
        volume names it) a moment after the first pod may already be bound.
        """
        namespace = pod["metadata"]["namespace"]
        missing = list(references(pod))
        for attempt in range(_MISSING_ATTEMPTS):
            missing = [ref for ref in missing if not await self.fetch(ref[0], namespace, ref[1])]
            if not missing:
                break
            if attempt + 1 < _MISSING_ATTEMPTS:
                await asyncio.sleep(_MISSING_PAUSE)
        if self.mint_tokens:
            for source in token_sources(pod):
                await self._mint(pod, source)

    async def fetch(self, kind: str, namespace: str, name: str) -> bool:
        """Read one ConfigMap or Secret into the mirror (or drop it there when it is gone).

        Returns whether it was read. 404 and 403 are worth asking again: the Node authorizer
        lets the node read an object only once its graph links it to a pod bound there, and
        that graph follows the API a moment behind. Any other error is not waited for.
        """
        resource, plural = _RESOURCES[kind]
        try:
            obj = await self.client.request(
                "GET", f"/api/v1/namespaces/{namespace}/{plural}/{name}"
            )
        except ApiError as err:
            known = self.mirror.get(resource, namespace, name)
            if err.code == 404 and known is not None:
                self.mirror.drop(resource, known)
            elif err.code not in (403, 404):
                log.warning("cannot read %s %s/%s: %s", kind, namespace, name, err)
            return err.code not in (403, 404)
        self.mirror.put(resource, obj)
        return True

    async def _mint(self, pod: JsonObject, source: JsonObject) -> None:
        meta, spec = pod["metadata"], pod.get("spec") or {}
        account = spec.get("serviceAccountName") or "default"
        request: JsonObject = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {
                "audiences": [source["audience"]] if source.get("audience") else [],
                "expirationSeconds": int(source.get("expirationSeconds", 3600)),
                "boundObjectRef": {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": meta["name"],
                    "uid": meta["uid"],
                },
            },
        }
        path = f"/api/v1/namespaces/{meta['namespace']}/serviceaccounts/{account}/token"
        try:
            answer = await self.client.request("POST", path, request)
        except ApiError as err:
            log.warning("no token for pod %s/%s: %s", meta["namespace"], meta["name"], err)
            return
        token = str((answer.get("status") or {}).get("token", ""))
        self._tokens[_token_key(meta["uid"], source)] = token.encode()

    def token(self, pod: JsonObject, source: JsonObject) -> bytes | None:
        """The token minted for this source of this pod."""
        return self._tokens.get(_token_key(pod["metadata"]["uid"], source))

    def service_env(self, pod: JsonObject) -> Mapping[str, str]:
        """Service links of the pod's namespace, unless `enableServiceLinks` is false."""
        if (pod.get("spec") or {}).get("enableServiceLinks") is False:
            return {}
        namespace = pod["metadata"]["namespace"]
        return envs.service_links(self.mirror.objects("/services", namespace))

    def forget(self, pod: JsonObject) -> None:
        """Drop the pod's tokens."""
        uid = pod["metadata"].get("uid", "")
        for key in [k for k in self._tokens if k[0] == uid]:
            del self._tokens[key]
