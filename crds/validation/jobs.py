"""RayJob rules: where the job runs, how it is submitted, retries, deadlines and payloads.

A RayJob either brings its own cluster (`rayClusterSpec`) or borrows one (`clusterSelector`).
Borrowing rules out anything that would delete, suspend or retry on a cluster the RayJob does
not own. Submission modes restrict retries (InteractiveMode) and the submitter settings
(SidecarMode, whose submitter lives in the head pod). Payload strings are parsed here, so a
typo fails at admission rather than at submission time.
"""

from __future__ import annotations

from crds.constants import LABEL_CLUSTER
from crds.enums import JobDeploymentStatus, JobSubmissionMode
from crds.messages import quoted
from crds.rayjob import RayJob, RayJobSpec
from crds.validation import formats, templates
from crds.validation.clusters import cluster_spec_violations
from crds.validation.deletion import deletion_violations
from crds.validation.names import managed_by_violations
from crds.validation.ports import template_ports
from crds.validation.references import selector_references
from crds.validation.resources import template_quantities
from crds.validation.scope import RAYJOB_KIND, ClusterScope, key_path
from crds.violations import Violation

_CLUSTER_PATH = "spec.rayClusterSpec"


def rayjob_violations(job: RayJob) -> list[Violation]:
    """Every RayJob spec and status rule (the name is checked by the caller)."""
    spec = job.spec
    found = managed_by_violations(spec.managed_by, "spec.managedBy")
    found += _suspend(spec)
    found += _ttl_not_negative(spec)
    found += deletion_violations(spec)
    found += _cluster_source(spec)
    found += selector_references(spec)
    found += _submission_mode(spec)
    if spec.ray_cluster_spec is not None:
        scope = ClusterScope(spec.ray_cluster_spec, _CLUSTER_PATH, RAYJOB_KIND, job.annotations)
        found += cluster_spec_violations(scope)
    found += template_quantities(spec.submitter_pod_template, "spec.submitterPodTemplate")
    found += template_ports(spec.submitter_pod_template, "spec.submitterPodTemplate")
    found += _payloads(spec)
    found += _deadlines_and_retries(spec)
    found += _status(job)
    return found


def _suspend(spec: RayJobSpec) -> list[Violation]:
    if not spec.suspend:
        return []
    found: list[Violation] = []
    if not spec.shutdown_after_job_finishes:
        message = (
            "a RayJob can only be suspended with shutdownAfterJobFinishes: true, "
            "because suspending deletes its RayCluster"
        )
        found.append(Violation("spec.suspend", message))
    if spec.cluster_selector:
        message = "suspend cannot be used with clusterSelector: the RayCluster is not the RayJob's"
        found.append(Violation("spec.suspend", message))
    return found


def _ttl_not_negative(spec: RayJobSpec) -> list[Violation]:
    ttl = spec.ttl_seconds_after_finished
    if ttl is None or ttl >= 0:
        return []
    message = f"ttlSecondsAfterFinished must not be negative (got {ttl})"
    return [Violation("spec.ttlSecondsAfterFinished", message)]


def _cluster_source(spec: RayJobSpec) -> list[Violation]:
    """A RayJob needs a cluster: its own spec, or an existing one picked by name."""
    selector = spec.cluster_selector
    if not selector:
        if spec.ray_cluster_spec is None:
            message = "set rayClusterSpec, or clusterSelector to run on an existing RayCluster"
            return [Violation(_CLUSTER_PATH, message)]
        return []
    found: list[Violation] = []
    if not selector.get(LABEL_CLUSTER):
        message = f"clusterSelector must give the RayCluster name under the key {LABEL_CLUSTER}"
        found.append(Violation(key_path("spec.clusterSelector", LABEL_CLUSTER), message))
    if spec.submission_mode == JobSubmissionMode.SIDECAR:
        message = (
            "SidecarMode cannot be used with clusterSelector: "
            "it adds the submitter to a head pod that KubeRay creates"
        )
        found.append(Violation("spec.submissionMode", message))
    if spec.backoff_limit is not None and spec.backoff_limit > 0:
        message = (
            f"backoffLimit ({spec.backoff_limit}) must be 0 with clusterSelector: "
            "a retry would need a new RayCluster"
        )
        found.append(Violation("spec.backoffLimit", message))
    return found


def _submission_mode(spec: RayJobSpec) -> list[Violation]:
    mode = spec.submission_mode
    found: list[Violation] = []
    retries = spec.backoff_limit or 0
    if mode == JobSubmissionMode.INTERACTIVE and retries > 0:
        message = (
            f"backoffLimit ({retries}) must be 0 in InteractiveMode: "
            "a retry would reuse the jobId you set and skip the Waiting state"
        )
        found.append(Violation("spec.backoffLimit", message))
    if mode != JobSubmissionMode.SIDECAR:
        return found
    unsupported = {
        "spec.submitterPodTemplate": spec.submitter_pod_template,
        "spec.submitterConfig": spec.submitter_config,
    }
    for path, value in unsupported.items():
        if value is not None:
            field_name = path.removeprefix("spec.")
            message = (
                f"{field_name} is not supported in SidecarMode: the submitter runs in the head pod"
            )
            found.append(Violation(path, message))
    if spec.ray_cluster_spec is not None:
        template = spec.ray_cluster_spec.head_group_spec.template
        policy = templates.restart_policy(template)
        if policy and policy != "Never":
            path = f"{_CLUSTER_PATH}.headGroupSpec.template.spec.restartPolicy"
            message = (
                "the head pod's restartPolicy must be Never or unset in SidecarMode "
                f"(got {quoted(policy)})"
            )
            found.append(Violation(path, message))
    return found


def _payloads(spec: RayJobSpec) -> list[Violation]:
    found: list[Violation] = []
    if spec.runtime_env_yaml:
        problem = formats.yaml_mapping_problem(spec.runtime_env_yaml)
        if problem is not None:
            found.append(Violation("spec.runtimeEnvYAML", f"runtimeEnvYAML {problem}"))
    if spec.entrypoint_resources:
        problem = formats.json_number_map_problem(spec.entrypoint_resources)
        if problem is not None:
            found.append(Violation("spec.entrypointResources", f"entrypointResources {problem}"))
    return found


def _deadlines_and_retries(spec: RayJobSpec) -> list[Violation]:
    found: list[Violation] = []
    positive = {
        "activeDeadlineSeconds": spec.active_deadline_seconds,
        "preRunningDeadlineSeconds": spec.pre_running_deadline_seconds,
    }
    for field_name, value in positive.items():
        if value is not None and value <= 0:
            message = f"{field_name} must be a positive number of seconds (got {value})"
            found.append(Violation(f"spec.{field_name}", message))
    if spec.backoff_limit is not None and spec.backoff_limit < 0:
        message = f"backoffLimit must not be negative (got {spec.backoff_limit})"
        found.append(Violation("spec.backoffLimit", message))
    return found


def _status(job: RayJob) -> list[Violation]:
    """Only InteractiveMode waits for the user, so only it can be in the Waiting state."""
    status = job.status
    if status is None or status.job_deployment_status != JobDeploymentStatus.WAITING:
        return []
    if job.spec.submission_mode == JobSubmissionMode.INTERACTIVE:
        return []
    message = "jobDeploymentStatus can be Waiting only in InteractiveMode"
    return [Violation("status.jobDeploymentStatus", message)]
