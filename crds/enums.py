"""Every state, condition type, reason and mode of the ray.io/v1 kinds, as KubeRay spells them.

The values are the wire strings KubeRay writes and reads (`ray-operator/apis/ray/v1/*_types.go`),
so that a status written here reads the same to any tool built for KubeRay. Code compares
against these members, never against raw string literals.
"""

from __future__ import annotations

from enum import StrEnum


class ConditionStatus(StrEnum):
    """metav1.ConditionStatus."""

    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


# --- RayCluster -------------------------------------------------------------------------------


class ClusterState(StrEnum):
    """RayCluster `status.state` (deprecated upstream in favour of conditions, still written)."""

    READY = "ready"
    FAILED = "failed"
    SUSPENDED = "suspended"


class RayClusterConditionType(StrEnum):
    """RayCluster condition types."""

    PROVISIONED = "RayClusterProvisioned"
    HEAD_POD_READY = "HeadPodReady"
    REPLICA_FAILURE = "ReplicaFailure"
    SUSPENDING = "RayClusterSuspending"
    SUSPENDED = "RayClusterSuspended"


class RayClusterConditionReason(StrEnum):
    """Reasons KubeRay sets on RayCluster conditions."""

    ALL_POD_RUNNING_AND_READY_FIRST_TIME = "AllPodRunningAndReadyFirstTime"
    PODS_PROVISIONING = "RayClusterPodsProvisioning"
    HEAD_POD_NOT_FOUND = "HeadPodNotFound"
    HEAD_POD_RUNNING_AND_READY = "HeadPodRunningAndReady"
    UNKNOWN = "Unknown"
    FAILED_CREATE_HEAD_POD = "FailedCreateHeadPod"
    FAILED_DELETE_HEAD_POD = "FailedDeleteHeadPod"
    FAILED_CREATE_WORKER_POD = "FailedCreateWorkerPod"
    FAILED_DELETE_WORKER_POD = "FailedDeleteWorkerPod"
    FAILED_DELETE_ALL_PODS = "FailedDeleteAllPods"


class RayClusterUpgradeType(StrEnum):
    """RayCluster `spec.upgradeStrategy.type`."""

    RECREATE = "Recreate"
    NONE = "None"


class RayNodeType(StrEnum):
    """Value of the `ray.io/node-type` label."""

    HEAD = "head"
    WORKER = "worker"
    REDIS_CLEANUP = "redis-cleanup"


class AuthMode(StrEnum):
    """`spec.authOptions.mode`."""

    DISABLED = "disabled"
    TOKEN = "token"


class GcsFaultToleranceBackend(StrEnum):
    """`spec.gcsFaultToleranceOptions.backend`."""

    REDIS = "redis"
    ROCKSDB = "rocksdb"


class GcsStorageDeletionPolicy(StrEnum):
    """`spec.gcsFaultToleranceOptions.storage.deletionPolicy`."""

    DELETE_WITH_CLUSTER = "DeleteWithCluster"
    RETAIN = "Retain"


class NetworkPolicyMode(StrEnum):
    """`spec.networkPolicy.mode`."""

    DENY_ALL = "DenyAll"
    DENY_ALL_INGRESS = "DenyAllIngress"
    DENY_ALL_EGRESS = "DenyAllEgress"


class IngressPathType(StrEnum):
    """`spec.headGroupSpec.ingressOptions.pathType`."""

    EXACT = "Exact"
    PREFIX = "Prefix"
    IMPLEMENTATION_SPECIFIC = "ImplementationSpecific"


class AutoscalerVersion(StrEnum):
    """`spec.autoscalerOptions.version`."""

    V1 = "v1"
    V2 = "v2"


class UpscalingMode(StrEnum):
    """`spec.autoscalerOptions.upscalingMode`."""

    DEFAULT = "Default"
    AGGRESSIVE = "Aggressive"
    CONSERVATIVE = "Conservative"


# --- RayJob -----------------------------------------------------------------------------------


class JobStatus(StrEnum):
    """RayJob `status.jobStatus`: a copy of the Ray job's own status ("" while new)."""

    NEW = ""
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    STOPPED = "STOPPED"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"

    @property
    def is_terminal(self) -> bool:
        """Whether Ray will never change this job's status again."""
        return self in (JobStatus.STOPPED, JobStatus.SUCCEEDED, JobStatus.FAILED)


class JobDeploymentStatus(StrEnum):
    """RayJob `status.jobDeploymentStatus`: the controller's own state machine."""

    NEW = ""
    INITIALIZING = "Initializing"
    RUNNING = "Running"
    COMPLETE = "Complete"
    FAILED = "Failed"
    VALIDATION_FAILED = "ValidationFailed"
    SUSPENDING = "Suspending"
    SUSPENDED = "Suspended"
    RETRYING = "Retrying"
    WAITING = "Waiting"

    @property
    def is_terminal(self) -> bool:
        """Whether the deployment has finished (cleanup rules may still run)."""
        return self in (JobDeploymentStatus.COMPLETE, JobDeploymentStatus.FAILED)


class JobFailedReason(StrEnum):
    """RayJob `status.reason`."""

    SUBMISSION_FAILED = "SubmissionFailed"
    DEADLINE_EXCEEDED = "DeadlineExceeded"
    PRE_RUNNING_DEADLINE_EXCEEDED = "PreRunningDeadlineExceeded"
    APP_FAILED = "AppFailed"
    TRANSITION_GRACE_PERIOD_EXCEEDED = "JobDeploymentStatusTransitionGracePeriodExceeded"
    STATUS_CHECK_TIMEOUT_EXCEEDED = "JobStatusCheckTimeoutExceeded"
    VALIDATION_FAILED = "ValidationFailed"


class JobSubmissionMode(StrEnum):
    """RayJob `spec.submissionMode`."""

    K8S_JOB = "K8sJobMode"
    HTTP = "HTTPMode"
    INTERACTIVE = "InteractiveMode"
    SIDECAR = "SidecarMode"


class DeletionPolicyType(StrEnum):
    """RayJob deletion policies, ordered here from least to most impactful."""

    DELETE_NONE = "DeleteNone"
    DELETE_WORKERS = "DeleteWorkers"
    DELETE_CLUSTER = "DeleteCluster"
    DELETE_SELF = "DeleteSelf"


# --- RayService -------------------------------------------------------------------------------


class ServiceStatus(StrEnum):
    """RayService `status.serviceStatus` (deprecated upstream, still written)."""

    RUNNING = "Running"
    NOT_RUNNING = ""


class RayServiceUpgradeType(StrEnum):
    """RayService `spec.upgradeStrategy.type`."""

    NEW_CLUSTER_WITH_INCREMENTAL_UPGRADE = "NewClusterWithIncrementalUpgrade"
    NEW_CLUSTER = "NewCluster"
    NONE = "None"


class RayServiceConditionType(StrEnum):
    """RayService condition types."""

    READY = "Ready"
    UPGRADE_IN_PROGRESS = "UpgradeInProgress"
    ROLLBACK_IN_PROGRESS = "RollbackInProgress"
    SUSPENDING = "Suspending"
    SUSPENDED = "Suspended"


class RayServiceConditionReason(StrEnum):
    """Reasons KubeRay sets on RayService conditions."""

    INITIALIZING = "Initializing"
    INITIALIZING_TIMEOUT = "InitializingTimeout"
    ZERO_SERVE_ENDPOINTS = "ZeroServeEndpoints"
    NON_ZERO_SERVE_ENDPOINTS = "NonZeroServeEndpoints"
    BOTH_ACTIVE_PENDING_CLUSTERS_EXIST = "BothActivePendingClustersExist"
    NO_PENDING_CLUSTER = "NoPendingCluster"
    NO_ACTIVE_CLUSTER = "NoActiveCluster"
    VALIDATION_FAILED = "ValidationFailed"
    DESIRED_CLUSTER_SPEC_CHANGED = "DesiredClusterSpecChanged"
    SUSPEND_REQUESTED = "SuspendRequested"
    SUSPEND_IN_PROGRESS = "SuspendInProgress"
    SUSPEND_COMPLETE = "SuspendComplete"
    RESUMED = "RayServiceResumed"


class ApplicationStatus(StrEnum):
    """Serve application status as Ray reports it (newer Ray may add values: keep strings)."""

    NOT_STARTED = "NOT_STARTED"
    DEPLOYING = "DEPLOYING"
    RUNNING = "RUNNING"
    DEPLOY_FAILED = "DEPLOY_FAILED"
    DELETING = "DELETING"
    UNHEALTHY = "UNHEALTHY"


class DeploymentStatus(StrEnum):
    """Serve deployment status as Ray reports it."""

    UPDATING = "UPDATING"
    HEALTHY = "HEALTHY"
    UNHEALTHY = "UNHEALTHY"
