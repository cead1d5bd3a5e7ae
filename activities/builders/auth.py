"""Ray token authentication wiring (`spec.authOptions.mode: token`).

Every process that talks to the GCS or the dashboard (the Ray container, the autoscaler, the
worker's GCS wait loop) needs the same token, read from the cluster's auth Secret, or, with
Kubernetes token auth, a projected service-account token (`pod.go` configureTokenAuth,
SetContainerTokenAuthEnvVars). The token itself never passes through here: only a reference.
"""

from __future__ import annotations

import base64
import secrets

from activities.builders import names
from activities.builders.env import env_var, has_env, set_default_env
from crds.common import JSONObject
from crds.constants import LABEL_CLUSTER
from crds.enums import AuthMode
from crds.raycluster import AuthOptions, RayCluster, RayClusterSpec

ENV_AUTH_MODE = "RAY_AUTH_MODE"
ENV_AUTH_TOKEN = "RAY_AUTH_TOKEN"  # the variable name; the token is never read here
ENV_ENABLE_K8S_TOKEN_AUTH = "RAY_ENABLE_K8S_TOKEN_AUTH"
AUTH_TOKEN_SECRET_KEY = "auth_token"  # the key name inside the Secret
TOKEN_VOLUME_NAME = "ray-token"
TOKEN_MOUNT_PATH = "/var/run/secrets/ray.io/serviceaccount"
WAIT_GCS_READY = "wait-gcs-ready"


def is_auth_enabled(spec: RayClusterSpec) -> bool:
    """Whether Ray token authentication is on."""
    return spec.auth_options is not None and spec.auth_options.mode is AuthMode.TOKEN


def is_k8s_auth_enabled(options: AuthOptions | None) -> bool:
    """Whether Ray validates Kubernetes service-account tokens instead of a shared token."""
    return options is not None and bool(options.enable_k8s_token_auth)


def auth_secret_name(cluster_name: str, options: AuthOptions | None) -> str:
    """`authOptions.secretName` (user-owned) or the cluster name (operator-owned)."""
    if options is not None and options.secret_name:
        return options.secret_name
    return names.check_name(cluster_name)


def wants_auth_secret(spec: RayClusterSpec) -> bool:
    """Whether the operator owns the token Secret: token mode, no secretName, no K8s tokens."""
    options = spec.auth_options
    return (
        is_auth_enabled(spec)
        and not is_k8s_auth_enabled(options)
        and not (options is not None and options.secret_name)
    )


def new_token() -> str:
    """A fresh token as KubeRay makes one: 32 random bytes, base64 (`generateRandomToken`)."""
    return base64.b64encode(secrets.token_bytes(32)).decode()


def build_auth_secret(cluster: RayCluster, token: str) -> JSONObject:
    """The Secret `<cluster>` holding `auth_token`, owned by the RayCluster.

    Created once and never updated (KubeRay's `reconcileAuthSecret`): the token stays what the
    running pods were started with. The caller makes the token; it never leaves the activity.
    """
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": auth_secret_name(cluster.name, None),
            "labels": {LABEL_CLUSTER: cluster.name},
            "ownerReferences": [names.owner_reference(cluster)],
        },
        "stringData": {AUTH_TOKEN_SECRET_KEY: token},
    }


def add_token_env(container: JSONObject, cluster_name: str, options: AuthOptions | None) -> None:
    """Give one container the auth mode and the token reference (or the projected token)."""
    set_default_env(container, env_var(ENV_AUTH_MODE, AuthMode.TOKEN.value))
    if is_k8s_auth_enabled(options):
        set_default_env(container, env_var(ENV_ENABLE_K8S_TOKEN_AUTH, "true"))
        mounts = container.get("volumeMounts") or []
        if not any(mount.get("name") == TOKEN_VOLUME_NAME for mount in mounts):
            mount = {"name": TOKEN_VOLUME_NAME, "mountPath": TOKEN_MOUNT_PATH, "readOnly": True}
            container["volumeMounts"] = [*mounts, mount]
        return
    if not has_env(container, ENV_AUTH_TOKEN):
        secret = {"name": auth_secret_name(cluster_name, options), "key": AUTH_TOKEN_SECRET_KEY}
        set_default_env(container, env_var(ENV_AUTH_TOKEN, value_from={"secretKeyRef": secret}))


def configure_token_auth(
    template: JSONObject, cluster_name: str, options: AuthOptions | None
) -> None:
    """Wire token auth into the Ray container and the GCS wait init container, in place."""
    spec = template["spec"]
    add_token_env(spec["containers"][0], cluster_name, options)
    volumes = spec.get("volumes") or []
    if is_k8s_auth_enabled(options) and not any(
        v.get("name") == TOKEN_VOLUME_NAME for v in volumes
    ):
        projected = {"sources": [{"serviceAccountToken": {"path": "token"}}]}
        spec["volumes"] = [*volumes, {"name": TOKEN_VOLUME_NAME, "projected": projected}]
    for init in spec.get("initContainers") or []:
        if init.get("name") == WAIT_GCS_READY:
            add_token_env(init, cluster_name, options)
