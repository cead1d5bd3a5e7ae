"""Token authentication and mTLS rules.

Token auth changes what every Ray process and client must send, so it needs a Ray release that
understands it (2.52; Kubernetes-token auth needs 2.55 and KubeRay supports it only on plain
RayClusters). With `tlsOptions.enabled`, KubeRay owns the TLS env vars and the certificate
mount in every Ray container and the autoscaler; user copies would silently override them.
"""

from __future__ import annotations

from crds.common import JSONObject
from crds.enums import AuthMode
from crds.validation import templates, versions
from crds.validation.scope import RAYCLUSTER_KIND, ClusterScope
from crds.violations import Violation

_TOKEN_AUTH_MIN_RAY = (2, 52, 0)
_K8S_TOKEN_AUTH_MIN_RAY = (2, 55, 0)
_TLS_ENV_VARS = ("RAY_USE_TLS", "RAY_TLS_SERVER_CERT", "RAY_TLS_SERVER_KEY", "RAY_TLS_CA_CERT")
_TLS_VOLUME_NAME = "ray-tls"
_TLS_MOUNT_PATH = "/etc/ray/tls"


def token_auth(scope: ClusterScope) -> list[Violation]:
    """Ray version floor for token auth, and the Kubernetes-token variant's constraints."""
    auth = scope.spec.auth_options
    if auth is None:
        return []
    k8s_path = scope.at("authOptions", "enableK8sTokenAuth")
    k8s_token = auth.enable_k8s_token_auth is True
    if auth.mode != AuthMode.TOKEN:
        if not k8s_token:
            return []
        return [Violation(k8s_path, "enableK8sTokenAuth needs authOptions.mode: token")]
    version = scope.spec.ray_version
    problem = versions.minimum_problem(version, _TOKEN_AUTH_MIN_RAY, "token authentication")
    if problem is not None:
        return [Violation(scope.at("rayVersion"), problem)]
    if not k8s_token:
        return []
    found: list[Violation] = []
    feature = "Kubernetes token authentication"
    problem = versions.minimum_problem(version, _K8S_TOKEN_AUTH_MIN_RAY, feature)
    if problem is not None:
        found.append(Violation(scope.at("rayVersion"), problem))
    if auth.secret_name:
        message = (
            "secretName cannot be combined with enableK8sTokenAuth: "
            "Kubernetes token authentication uses service-account tokens, not a shared secret"
        )
        found.append(Violation(scope.at("authOptions", "secretName"), message))
    return found


def k8s_token_auth_owner(scope: ClusterScope) -> list[Violation]:
    """Kubernetes-token auth is supported only on RayClusters users create directly."""
    auth = scope.spec.auth_options
    if (
        scope.owner_kind == RAYCLUSTER_KIND
        or auth is None
        or auth.enable_k8s_token_auth is not True
    ):
        return []
    message = f"Kubernetes token authentication is not supported for a {scope.owner_kind}"
    return [Violation(scope.at("authOptions", "enableK8sTokenAuth"), message)]


def tls_managed_settings(scope: ClusterScope) -> list[Violation]:
    """With mTLS on, TLS env vars and the certificate mount belong to KubeRay."""
    tls = scope.spec.tls_options
    if tls is None or tls.enabled is not True:
        return []
    targets = [(scope.head_template_path, scope.spec.head_group_spec.template)]
    for index, group in enumerate(scope.spec.worker_group_specs or []):
        targets.append((scope.worker_template_path(index), group.template))
    found: list[Violation] = []
    for template_path, template in targets:
        container = templates.ray_container(template)
        if container is None:
            continue
        base = templates.ray_container_path(template_path)
        found += _tls_env(base + ".env", templates.env_vars(container))
        found += _tls_mounts(base + ".volumeMounts", templates.volume_mounts(container))
    options = scope.spec.autoscaler_options
    if options is not None:
        found += _tls_env(scope.at("autoscalerOptions", "env"), options.env or [])
        found += _tls_mounts(
            scope.at("autoscalerOptions", "volumeMounts"), options.volume_mounts or []
        )
    return found


def _tls_env(env_path: str, env: list[JSONObject]) -> list[Violation]:
    return [
        Violation(f"{env_path}[{index}]", f"{name} is set by KubeRay when tlsOptions is enabled")
        for index, name in templates.env_entries(env, _TLS_ENV_VARS)
    ]


def _tls_mounts(mounts_path: str, mounts: list[JSONObject]) -> list[Violation]:
    found: list[Violation] = []
    for index, mount in enumerate(mounts):
        if mount.get("name") == _TLS_VOLUME_NAME or mount.get("mountPath") == _TLS_MOUNT_PATH:
            message = (
                f"a volume mount named {_TLS_VOLUME_NAME!r} or at {_TLS_MOUNT_PATH} is managed "
                "by KubeRay when tlsOptions is enabled"
            )
            found.append(Violation(f"{mounts_path}[{index}]", message))
    return found


RULES = (token_auth, k8s_token_auth_owner, tls_managed_settings)
