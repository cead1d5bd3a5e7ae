"""Operator-wide switches that change what the builders produce (and the Redis cleanup).

KubeRay reads these from its own environment (CLUSTER_DOMAIN, ENABLE_INIT_CONTAINER_INJECTION,
ENABLE_PROBES_INJECTION, ENABLE_LOGIN_SHELL, ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE,
ENABLE_GCS_FT_REDIS_CLEANUP, ENABLE_ZERO_DOWNTIME, ENABLE_DETERMINISTIC_HEAD_POD_NAME).
Builders read no environment: the worker turns its settings
(`Settings.build_options`) into one of these and passes it down.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from activities.builders.names import DEFAULT_CLUSTER_DOMAIN
from crds.feature_gates import FeatureGates


@dataclass(frozen=True)
class BuildOptions:
    """Switches with KubeRay's defaults."""

    cluster_domain: str = DEFAULT_CLUSTER_DOMAIN
    """Kubernetes cluster DNS domain used in the head Service FQDN."""
    init_container_injection: bool = True
    """Add the `wait-gcs-ready` init container to workers."""
    probes_injection: bool = True
    """Add default liveness/readiness probes to Ray containers that have none."""
    login_shell: bool = False
    """Run generated commands in a login shell (`bash -cl`)."""
    head_cluster_ip_service: bool = False
    """Give the head Service a cluster IP instead of making it headless."""
    gcs_ft_redis_cleanup: bool = True
    """Clean Redis GCS FT storage on deletion (ENABLE_GCS_FT_REDIS_CLEANUP). Not a builder
    switch: the RayCluster read activity reports it, so the workflow sees it in its history."""
    deterministic_head_pod_name: bool = False
    """Name head pods `<cluster>-head` instead of `<cluster>-head-<random>`
    (ENABLE_DETERMINISTIC_HEAD_POD_NAME). The workflow names pods, so the RayCluster read
    activity reports the fixed name in its snapshot."""
    zero_downtime: bool = True
    """An unset RayService `upgradeStrategy.type` means NewCluster; off, None
    (ENABLE_ZERO_DOWNTIME). Reported by the RayService read activity, like the one above."""
    batch_scheduler: str = ""
    """The batch scheduler the pods are stamped for (`batch_scheduling`); empty: none
    (KubeRay's `batch-scheduler` option)."""
    feature_gates: FeatureGates = field(default_factory=FeatureGates)
    """KubeRay's gates (`--feature-gates`). Not a builder switch: each read activity reports
    the gates a spec needs and lacks (`crds.validation.gates`), so the workflow refuses it."""


DEFAULT_OPTIONS = BuildOptions()
