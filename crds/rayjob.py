"""RayJob (ray.io/v1): spec and status with KubeRay's field names."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from crds.common import (
    Bool,
    Int32,
    Int64,
    JSONObject,
    Number,
    RayModel,
    RayObject,
    Str,
    StringMap,
    Time,
)
from crds.enums import (
    DeletionPolicyType,
    JobDeploymentStatus,
    JobFailedReason,
    JobStatus,
    JobSubmissionMode,
)
from crds.raycluster import RayClusterSpec, RayClusterStatus


class DeletionCondition(RayModel):
    """When a deletion rule applies: one Ray job status or one deployment status, plus a TTL."""

    job_status: JobStatus | None = None
    job_deployment_status: JobDeploymentStatus | None = None
    ttl_seconds: Int32 | None = None


class DeletionRule(RayModel):
    """`spec.deletionStrategy.deletionRules[]`."""

    policy: DeletionPolicyType
    condition: DeletionCondition


class DeletionPolicy(RayModel):
    """Legacy `onSuccess` / `onFailure`."""

    policy: DeletionPolicyType | None = None


class DeletionStrategy(RayModel):
    """`spec.deletionStrategy`."""

    on_success: DeletionPolicy | None = None
    on_failure: DeletionPolicy | None = None
    deletion_rules: list[DeletionRule] | None = None


class SubmitterConfig(RayModel):
    """`spec.submitterConfig`."""

    backoff_limit: Int32 | None = None


class RayJobSpec(RayModel):
    """RayJob `spec`."""

    active_deadline_seconds: Int32 | None = None
    backoff_limit: Int32 | None = None
    ray_cluster_spec: RayClusterSpec | None = None
    submitter_pod_template: JSONObject | None = None
    metadata: StringMap | None = None
    cluster_selector: StringMap | None = None
    submitter_config: SubmitterConfig | None = None
    managed_by: Str | None = None
    deletion_strategy: DeletionStrategy | None = None
    entrypoint: Str | None = None
    runtime_env_yaml: Str | None = Field(default=None, alias="runtimeEnvYAML")
    job_id: Str | None = None
    submission_mode: JobSubmissionMode | None = None
    entrypoint_resources: Str | None = None
    entrypoint_num_cpus: Number | None = None
    entrypoint_num_gpus: Number | None = None
    ttl_seconds_after_finished: Int32 | None = None
    pre_running_deadline_seconds: Int32 | None = None
    shutdown_after_job_finishes: Bool | None = None
    suspend: Bool | None = None


class RayJobStatusInfo(RayModel):
    """`status.rayJobInfo`: the Ray job's own start and end times."""

    start_time: Time | None = None
    end_time: Time | None = None


class RayJobStatus(RayModel):
    """RayJob `status`."""

    ray_job_info: RayJobStatusInfo | None = Field(default=None, alias="rayJobInfo")
    job_id: Str | None = None
    ray_cluster_name: Str | None = None
    dashboard_url: Str | None = Field(default=None, alias="dashboardURL")
    job_status: JobStatus | None = None
    job_deployment_status: JobDeploymentStatus | None = None
    reason: JobFailedReason | None = None
    message: Str | None = None
    start_time: Time | None = None
    end_time: Time | None = None
    succeeded: Int32 | None = None
    failed: Int32 | None = None
    ray_cluster_status: RayClusterStatus | None = None
    job_status_check_failure_start_time: Time | None = None
    observed_generation: Int64 | None = None


class RayJob(RayObject):
    """A RayJob custom resource."""

    kind: Literal["RayJob"] = "RayJob"
    spec: RayJobSpec
    status: RayJobStatus | None = None
