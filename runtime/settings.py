"""Worker and bridge configuration, read once from the environment and passed down.

Keeping every environment variable in one model means the processes take plain arguments, a
typo in a value fails at start with the variable's name in the message, and tests build
settings without touching `os.environ`.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from datetime import timedelta
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
)
from pydantic_core import ErrorDetails

from activities.builders.names import DEFAULT_CLUSTER_DOMAIN
from activities.builders.options import BuildOptions
from activities.kube.rate_limit import DEFAULT_BURST, DEFAULT_QPS, RateLimits
from activities.rayjob.contract import JobOperatorOptions
from crds.constants import (
    DEFAULT_STATUS_CHECK_TIMEOUT_SECONDS,
    DEFAULT_TRANSITION_GRACE_PERIOD_SECONDS,
)
from crds.feature_gates import FeatureGates, parse_feature_gates
from runtime.codec import PAYLOAD_KEY_VARIABLE, parse_keys

LOOPBACK = "127.0.0.1"
"""Where the health and metrics ports listen unless told: reachable from this machine only."""


class Settings(BaseModel):
    """Where the worker and the bridge connect and how they run.

    Build it with `Settings.from_env()`; each field's validation alias is the
    environment variable that sets it. Fields can also be given by name in code.
    """

    model_config = ConfigDict(
        frozen=True,
        extra="ignore",
        validate_by_name=True,
        validate_by_alias=True,
        # A traceback of an uncaught ValidationError must not print a key it rejected.
        hide_input_in_errors=True,
    )

    temporal_address: str = Field(
        default="127.0.0.1:7233",
        validation_alias="TEMPORAL_ADDRESS",
        min_length=1,
        description="host:port of the Temporal frontend (gRPC).",
    )
    temporal_namespace: str = Field(
        default="default",
        validation_alias="TEMPORAL_NAMESPACE",
        min_length=1,
        description="Temporal namespace the CR workflows live in.",
    )
    task_queue: str = Field(
        default="kuberay",
        validation_alias="KUBERAY_TEMPORAL_TASK_QUEUE",
        min_length=1,
        description="Task queue the worker polls and the bridge starts workflows on.",
    )
    max_cached_workflows: int = Field(
        default=5000,
        validation_alias="KUBERAY_TEMPORAL_MAX_CACHED_WORKFLOWS",
        ge=0,
        description=(
            "Workflows kept in the sticky cache. Keep it at least the number of live CRs: "
            "an evicted entity workflow replays its whole history on its next task "
            "(about 75 KB of memory each)."
        ),
    )
    # A worker's capacity, by the names Temporal's SDKs give it. No activity stays open while a
    # Ray job runs, so these bound bursts of work, not how many jobs may run.
    max_concurrent_workflow_tasks: int = Field(
        default=100,
        validation_alias="KUBERAY_TEMPORAL_MAX_CONCURRENT_WORKFLOW_TASKS",
        ge=2,
        le=10_000,
        description=(
            "Workflow tasks one worker runs at a time (the SDK's default); each is a pass's "
            "decision, its short Kubernetes calls run inside it as local activities."
        ),
    )
    max_concurrent_activities: int = Field(
        default=100,
        validation_alias="KUBERAY_TEMPORAL_MAX_CONCURRENT_ACTIVITIES",
        ge=1,
        le=10_000,
        description=(
            "Scheduled activities one worker runs at a time (the SDK's default): calls that "
            "failed as local ones, Serve health waits of an upgrade (a minute at most)."
        ),
    )
    max_concurrent_local_activities: int = Field(
        default=100,
        validation_alias="KUBERAY_TEMPORAL_MAX_CONCURRENT_LOCAL_ACTIVITIES",
        ge=1,
        le=10_000,
        description=(
            "Local activities one worker runs at a time (the SDK's default): the Kubernetes "
            "calls and dashboard questions of every pass."
        ),
    )
    max_concurrent_workflow_task_polls: int = Field(
        default=5,
        validation_alias="KUBERAY_TEMPORAL_MAX_CONCURRENT_WORKFLOW_TASK_POLLS",
        ge=2,
        le=100,
        description="Long polls for workflow tasks one worker keeps open (the SDK's default).",
    )
    max_concurrent_activity_task_polls: int = Field(
        default=5,
        validation_alias="KUBERAY_TEMPORAL_MAX_CONCURRENT_ACTIVITY_TASK_POLLS",
        ge=1,
        le=100,
        description="Long polls for activity tasks one worker keeps open (the SDK's default).",
    )
    graceful_shutdown_timeout: timedelta = Field(
        default=timedelta(seconds=30),
        validation_alias="KUBERAY_TEMPORAL_GRACEFUL_SHUTDOWN_TIMEOUT",
        ge=timedelta(),
        description=(
            "How long running activities may finish after a shutdown request before they "
            "are cancelled. From the environment: seconds (`30`) or ISO 8601 (`PT30S`)."
        ),
    )

    # The TLS and API-key variables are the ones Temporal's own clients read (the `temporal`
    # CLI, the SDKs' environment configuration), so one set of variables serves both.
    temporal_tls: bool | None = Field(
        default=None,
        validation_alias="TEMPORAL_TLS",
        description=(
            "Use TLS to the frontend. Unset: on when a client certificate, a server CA or an "
            "API key is given (Temporal Cloud), else off."
        ),
    )
    temporal_tls_client_cert_path: str | None = Field(
        default=None,
        validation_alias="TEMPORAL_TLS_CLIENT_CERT_PATH",
        description="PEM client certificate for mTLS; needs the key too.",
    )
    temporal_tls_client_key_path: str | None = Field(
        default=None,
        validation_alias="TEMPORAL_TLS_CLIENT_KEY_PATH",
        validate_default=True,
        description="PEM private key of the client certificate; needs the certificate too.",
    )
    temporal_tls_server_ca_cert_path: str | None = Field(
        default=None,
        validation_alias="TEMPORAL_TLS_SERVER_CA_CERT_PATH",
        description="PEM CA bundle that signed the frontend's certificate; unset: system roots.",
    )
    temporal_tls_server_name: str | None = Field(
        default=None,
        validation_alias="TEMPORAL_TLS_SERVER_NAME",
        description="Name to verify in the frontend's certificate; unset: the address's host.",
    )
    temporal_api_key: SecretStr | None = Field(
        default=None,
        validation_alias="TEMPORAL_API_KEY",
        description="API key sent with every request (Temporal Cloud); never logged.",
    )
    payload_key: SecretStr | None = Field(
        default=None,
        validation_alias=PAYLOAD_KEY_VARIABLE,
        description=(
            "Encrypt every Temporal payload (AES-256-GCM): base64 32-byte keys "
            "(`openssl rand -base64 32`) separated by commas; the first encrypts and all "
            "decrypt (rotation). Worker, bridge and CLI need the same keys. Unset: "
            "payloads are plain JSON; plaintext ones stay readable after a key is set. "
            "Never logged."
        ),
    )
    health_port: int | None = Field(
        default=None,
        validation_alias="KUBERAY_TEMPORAL_HEALTH_PORT",
        ge=0,
        le=65535,
        description=(
            "Port on `KUBERAY_TEMPORAL_HEALTH_ADDRESS` serving `/healthz` and `/readyz` for "
            "Kubernetes probes; unset: no health server."
        ),
    )
    health_address: str = Field(
        default=LOOPBACK,
        validation_alias="KUBERAY_TEMPORAL_HEALTH_ADDRESS",
        description=(
            "IP address the health port listens on: loopback unless set; the manifests set the "
            "pod's IP, which the kubelet probes. `0.0.0.0` or `::`: every address."
        ),
    )
    metrics_port: int | None = Field(
        default=None,
        validation_alias="KUBERAY_TEMPORAL_METRICS_PORT",
        ge=0,
        le=65535,
        description=(
            "Port on `KUBERAY_TEMPORAL_METRICS_ADDRESS` serving Prometheus `/metrics`: the "
            "Temporal SDK's `temporal_*` metrics, plus KubeRay's: the duration gauges from the "
            "worker, the per-CR state gauges (`kuberay_*_info`, `kuberay_job_deployment_status`, "
            "`kuberay_*_condition_*`) from the bridge; unset: no metrics."
        ),
    )
    metrics_address: str = Field(
        default=LOOPBACK,
        validation_alias="KUBERAY_TEMPORAL_METRICS_ADDRESS",
        description=(
            "IP address the metrics port listens on: loopback unless set (`kuberay-temporal "
            "dev`); the manifests set the pod's IP, which Prometheus scrapes. `/metrics` names "
            "every watched CR and its namespace: see the README's Security section."
        ),
    )
    log_format: Literal["text", "json"] = Field(
        default="text",
        validation_alias="KUBERAY_TEMPORAL_LOG_FORMAT",
        description=(
            "Log lines of the worker and the bridge: `text`, or `json` (one object per line; "
            "lines about a CR carry its kind, namespace, name, uid and workflow id)."
        ),
    )

    kubeconfig: str | None = Field(
        default=None,
        validation_alias="KUBECONFIG",
        description=(
            "kubeconfig file for the Kubernetes API; unset means in-cluster configuration "
            "(a service account), else ~/.kube/config."
        ),
    )
    kube_api_qps: float = Field(
        default=DEFAULT_QPS,
        validation_alias="KUBERAY_TEMPORAL_KUBE_API_QPS",
        gt=0,
        le=100_000,
        description=(
            "KubeRay's `--qps`: requests per second each process sends the API server on "
            "average for each API type (pods, Services, RayClusters...: client-go's token "
            "bucket, one per kind as controller-runtime gives KubeRay); more wait their turn."
        ),
    )
    kube_api_burst: int = Field(
        default=DEFAULT_BURST,
        validation_alias="KUBERAY_TEMPORAL_KUBE_API_BURST",
        ge=1,
        le=100_000,
        description=(
            "KubeRay's `--burst`: requests of one API type each process may send at once above "
            "the QPS."
        ),
    )
    watch_namespaces: str = Field(
        default="",
        validation_alias="KUBERAY_TEMPORAL_WATCH_NAMESPACES",
        description="Comma-separated namespaces the bridge watches; empty means all.",
    )
    ignore_namespaces: str = Field(
        default="",
        validation_alias="KUBERAY_TEMPORAL_IGNORE_NAMESPACES",
        description=(
            "Comma-separated namespaces the bridge leaves alone among those it watches, such as "
            "one where KubeRay's own operator reconciles the same kinds."
        ),
    )
    relist_seconds: float = Field(
        default=36000.0,
        validation_alias="KUBERAY_TEMPORAL_RELIST_SECONDS",
        gt=0,
        description=(
            "How often the bridge lists everything it watches again while its watches hold: "
            "controller-runtime's sync period (10 hours), at which KubeRay's informers hand "
            "every object they keep to its reconcilers again (the bridge keeps no whole "
            "objects, so it lists). A watch that fails lists again at once."
        ),
    )
    bridge_concurrency: int = Field(
        default=32,
        validation_alias="KUBERAY_TEMPORAL_BRIDGE_CONCURRENCY",
        ge=1,
        description="Signals the bridge sends to Temporal at once.",
    )
    dashboard_access: Literal["proxy", "direct"] = Field(
        default="proxy",
        validation_alias="KUBERAY_TEMPORAL_DASHBOARD_ACCESS",
        description=(
            "How RayJob and RayService activities reach a head's dashboard: `proxy` through "
            "the API server's service proxy (works from outside the cluster network, e.g. "
            "the local stack), or `direct` to the head pod's own IP, `http://<pod IP>:<port>`, "
            "found through the head Service and pod the cluster owns (a worker inside the "
            "cluster)."
        ),
    )

    # KubeRay's own operator variables (`utils/constant.go`), under KubeRay's names and with
    # its defaults, so an operator's existing configuration carries over unchanged. The
    # RayJob ones reach workflows only through the `read_rayjob` snapshot (history).
    cluster_domain: str = Field(
        default=DEFAULT_CLUSTER_DOMAIN,
        validation_alias="CLUSTER_DOMAIN",
        min_length=1,
        description=(
            "KubeRay's variable: the cluster DNS domain in head Service addresses "
            "(`<svc>.<ns>.svc.<domain>`) used by workers, submitters and `dashboardURL`."
        ),
    )
    init_container_injection: bool = Field(
        default=True,
        validation_alias="ENABLE_INIT_CONTAINER_INJECTION",
        description=(
            "KubeRay's variable: give worker pods the `wait-gcs-ready` init container "
            "that waits for the head's GCS."
        ),
    )
    probes_injection: bool = Field(
        default=True,
        validation_alias="ENABLE_PROBES_INJECTION",
        description=(
            "KubeRay's variable: add KubeRay's liveness and readiness probes to Ray "
            "containers that have none."
        ),
    )
    login_shell: bool = Field(
        default=False,
        validation_alias="ENABLE_LOGIN_SHELL",
        description=(
            "KubeRay's variable: run generated container commands in a login shell "
            "(`/bin/bash -cl`), so profile scripts run."
        ),
    )
    head_cluster_ip_service: bool = Field(
        default=False,
        validation_alias="ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE",
        description=(
            "KubeRay's variable: give a ClusterIP head Service a cluster IP instead of "
            "making it headless."
        ),
    )
    gcs_ft_redis_cleanup: bool = Field(
        default=True,
        validation_alias="ENABLE_GCS_FT_REDIS_CLEANUP",
        description=(
            "KubeRay's variable: clean a Redis GCS FT cluster's storage namespace on deletion "
            "(finalizer and `<cluster>-redis-cleanup` Job). Off: no finalizer is added and a "
            "left-over one is removed without cleaning Redis."
        ),
    )
    deterministic_head_pod_name: bool = Field(
        default=False,
        validation_alias="ENABLE_DETERMINISTIC_HEAD_POD_NAME",
        description=(
            "KubeRay's variable: name head pods `<cluster>-head` (the cluster name clipped to "
            "50 characters) instead of `<cluster>-head-<random>`; a restarted head keeps it."
        ),
    )
    zero_downtime: bool = Field(
        default=True,
        validation_alias="ENABLE_ZERO_DOWNTIME",
        description=(
            "KubeRay's variable: a RayService without `upgradeStrategy.type` upgrades by a "
            "new cluster (blue-green). `false`: such a RayService acts as type None (no new "
            "cluster; the Serve config is still applied in place)."
        ),
    )
    batch_scheduler: Literal["", "kai-scheduler", "yunikorn", "volcano", "scheduler-plugins"] = (
        Field(
            default="",
            validation_alias="KUBERAY_TEMPORAL_BATCH_SCHEDULER",
            description=(
                "KubeRay's `batch-scheduler` option: the scheduler Ray pods are stamped for "
                "(`schedulerName`, its queue labels; YuniKorn's task groups for CRs labelled "
                "`ray.io/gang-scheduling-enabled`), and the PodGroups of Volcano and "
                "scheduler-plugins. Empty: the default scheduler."
            ),
        )
    )
    feature_gates: FeatureGates = Field(
        default=FeatureGates(),
        validation_alias="KUBERAY_TEMPORAL_FEATURE_GATES",
        description=(
            "KubeRay's `--feature-gates`: `Name=true,Name=false` over v1.7.0's defaults "
            "(`crds.feature_gates`). A spec using an alpha field whose gate is off is refused "
            "with KubeRay's message; with RayCronJob off no RayCronJob is read."
        ),
    )
    delete_rayjob_cr_after_job_finishes: bool = Field(
        default=False,
        validation_alias="DELETE_RAYJOB_CR_AFTER_JOB_FINISHES",
        description=(
            "KubeRay's variable: `shutdownAfterJobFinishes` deletes the RayJob itself "
            "(cascading to its RayCluster and submitter Job) instead of only the RayCluster."
        ),
    )
    rayjob_transition_grace_period_seconds: int = Field(
        default=DEFAULT_TRANSITION_GRACE_PERIOD_SECONDS,
        validation_alias="RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS",
        gt=0,
        description=(
            "KubeRay's variable: seconds a RayJob may stay Running after Ray reported its "
            "job terminal before it is forced to Complete/Failed "
            "(JobDeploymentStatusTransitionGracePeriodExceeded)."
        ),
    )
    rayjob_status_check_timeout_seconds: int = Field(
        default=DEFAULT_STATUS_CHECK_TIMEOUT_SECONDS,
        validation_alias="RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS",
        gt=0,
        description=(
            "KubeRay's variable: seconds of failing dashboard calls after which a running "
            "RayJob fails with JobStatusCheckTimeoutExceeded (not retried)."
        ),
    )

    def build_options(self) -> BuildOptions:
        """KubeRay's switches for what the activities build (pods, Services, Jobs)."""
        return BuildOptions(
            cluster_domain=self.cluster_domain,
            init_container_injection=self.init_container_injection,
            probes_injection=self.probes_injection,
            login_shell=self.login_shell,
            head_cluster_ip_service=self.head_cluster_ip_service,
            gcs_ft_redis_cleanup=self.gcs_ft_redis_cleanup,
            zero_downtime=self.zero_downtime,
            deterministic_head_pod_name=self.deterministic_head_pod_name,
            batch_scheduler=self.batch_scheduler,
            feature_gates=self.feature_gates,
        )

    def job_options(self) -> JobOperatorOptions:
        """KubeRay's RayJob switches, reported to the workflow in every `read_rayjob`."""
        return JobOperatorOptions(
            delete_rayjob_cr_after_job_finishes=self.delete_rayjob_cr_after_job_finishes,
            transition_grace_period_seconds=self.rayjob_transition_grace_period_seconds,
            status_check_timeout_seconds=self.rayjob_status_check_timeout_seconds,
        )

    @property
    def namespaces(self) -> list[str | None]:
        """`watch_namespaces` as a list; `[None]` means every namespace."""
        return list(_names(self.watch_namespaces)) or [None]

    @property
    def ignored_namespaces(self) -> frozenset[str]:
        """`ignore_namespaces` as a set."""
        return frozenset(_names(self.ignore_namespaces))

    @field_validator("temporal_tls_client_key_path")
    @classmethod
    def _certificate_and_key_together(cls, value: str | None, info: ValidationInfo) -> str | None:
        """MTLS needs both halves; one alone is a configuration mistake, not plain TLS."""
        if (value is None) != (info.data.get("temporal_tls_client_cert_path") is None):
            raise ValueError(
                "TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH go together"
            )
        return value

    @field_validator("health_address", "metrics_address")
    @classmethod
    def _an_ip_address(cls, value: str) -> str:
        """A literal address: a host name would listen wherever it happens to resolve."""
        try:
            ipaddress.ip_address(value)
        except ValueError:
            raise ValueError("not an IP address such as 127.0.0.1 or 0.0.0.0") from None
        return value

    @field_validator("payload_key")
    @classmethod
    def _keys_parse(cls, value: SecretStr | None) -> SecretStr | None:
        """A malformed key fails at start rather than at the first payload."""
        if value is not None:
            parse_keys(value.get_secret_value())
        return value

    @field_validator("feature_gates", mode="before")
    @classmethod
    def _gates_from_text(cls, value: object) -> object:
        """`--feature-gates` syntax, as environment variables carry it."""
        return parse_feature_gates(value) if isinstance(value, str) else value

    @field_validator("graceful_shutdown_timeout", mode="before")
    @classmethod
    def _seconds_from_text(cls, value: object) -> object:
        """Accept a bare number of seconds as text, as environment variables carry it."""
        if isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                return value
        return value

    def kube_rate_limit(self) -> RateLimits:
        """Fresh token buckets of `kube_api_qps` and `kube_api_burst` for one client.

        One per API type, as KubeRay's (`activities.kube.rate_limit`).
        """
        return RateLimits(self.kube_api_qps, self.kube_api_burst)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read the settings from environment variables.

        Args:
            environ: Variables to read; the process environment by default.

        Returns:
            The settings, with defaults for unset variables.

        Raises:
            pydantic.ValidationError: A variable has an invalid value; the error names it.
        """
        source = os.environ if environ is None else environ
        # Only the documented variable names: validate_by_name would otherwise also accept
        # a variable spelled like a field (`task_queue`).
        names = [field.validation_alias for field in cls.model_fields.values()]
        return cls.model_validate(
            {name: source[name] for name in names if isinstance(name, str) and name in source}
        )


def _names(text: str) -> list[str]:
    """The names of a comma-separated setting, trimmed, empty ones dropped."""
    return [name.strip() for name in text.split(",") if name.strip()]


def describe_invalid(error: ValidationError) -> str:
    """Return a one-line account of invalid settings, naming each variable or field.

    Args:
        error: What `Settings` validation raised.

    Returns:
        E.g. ``KUBERAY_TEMPORAL_MAX_CACHED_WORKFLOWS='lots': Input should be a valid integer``.
    """
    return "; ".join(
        f"{'.'.join(str(part) for part in problem['loc'])}={_shown(problem)}: "
        f"{problem['msg'].removeprefix('Value error, ').split(',')[0]}"
        for problem in error.errors()
    )


_SECRET_NAMES = frozenset(
    {"TEMPORAL_API_KEY", "temporal_api_key", PAYLOAD_KEY_VARIABLE, "payload_key"}
)


def _shown(problem: ErrorDetails) -> str:
    """The offending value, unless it is a secret (or a whole input that may hold one)."""
    loc = problem["loc"]
    if not loc or _SECRET_NAMES & {str(part) for part in loc}:
        return "<hidden>"
    return repr(problem["input"])
