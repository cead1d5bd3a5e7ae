"""The objects a RayJob owns: its RayCluster, its submitter Job and `<rayjob>-head-svc`.

They reproduce what KubeRay's RayJob controller builds (`constructRayClusterForRayJob`,
`getSubmitterTemplate`, `createNewK8sJob`, `common/job.go`), names, labels and the submitter
script included, so `kubectl logs job/<rayjob>` and tools written for KubeRay see the same
things. Pure: a RayJob model and a few names in, manifests out. The script reads no secret:
with token auth the submitter gets a reference to the cluster's Secret, never the token.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from activities.builders import batch_scheduling, names
from activities.builders.auth import add_token_env, is_auth_enabled
from activities.builders.cluster_services import build_head_service
from activities.builders.env import append_env, env_var
from activities.builders.options import DEFAULT_OPTIONS, BuildOptions
from activities.kube.vocabulary import RestartPolicy
from crds import constants as k
from crds import flags
from crds.common import JSONObject
from crds.enums import JobSubmissionMode, RayNodeType
from crds.payloads import PayloadError
from crds.raycluster import RayCluster, RayClusterSpec
from crds.rayjob import RayJob, RayJobSpec
from crds.validation import formats
from crds.violations import Violation

Mode = JobSubmissionMode

ENV_PYTHONUNBUFFERED = "PYTHONUNBUFFERED"
ENV_DASHBOARD_ADDRESS = "RAY_DASHBOARD_ADDRESS"
ENV_JOB_SUBMISSION_ID = "RAY_JOB_SUBMISSION_ID"
GCS_HEALTH_PATH = "api/gcs_healthz"
GCS_HEALTH_TIMEOUT_SECONDS = 10
# KubeRay's BasePythonHealthCommand: the Ray image has Python but not necessarily curl.
_HEALTH_COMMAND = (
    "python -c \"import urllib.request; r=urllib.request.urlopen('{url}', timeout={timeout}); "
    "exit(0 if b'success' in r.read() else 1)\""
)
SUBMITTER_LIMITS = {"cpu": "1", "memory": "1Gi"}
SUBMITTER_REQUESTS = {"cpu": "500m", "memory": "200Mi"}


def rayjob_owner_reference(rayjob: RayJob) -> JSONObject:
    """The controller ownerReference of everything a RayJob creates (GC and bridge routing)."""
    return names.controller_reference("RayJob", rayjob.name, rayjob.metadata.uid)


def originated_labels(rayjob: RayJob) -> dict[str, str]:
    """`ray.io/originated-from-cr-name` and `-crd`: how KubeRay marks a RayJob's children."""
    return {
        k.LABEL_ORIGINATED_FROM_CR_NAME: rayjob.name,
        k.LABEL_ORIGINATED_FROM_CRD: names.CREATOR_RAYJOB,
    }


class InvalidJobSpecError(ValueError):
    """A RayJob field validation refuses; `str()` is its violation, field path first.

    The workflow validates every spec it reads, with the same parsers, so an activity meets
    such a field only in a RayJob edited since: it fails for good instead of retrying.
    """


def runtime_env_of(spec: RayJobSpec) -> dict[str, Any] | None:
    """`runtimeEnvYAML` as the JSON object Ray takes; None when unset or null.

    Raises:
        InvalidJobSpecError: It is not a YAML mapping, or is beyond `crds.payloads` bounds
            (an alias bomb is refused before anything is expanded).
    """
    if not spec.runtime_env_yaml:
        return None
    try:
        return formats.yaml_mapping(spec.runtime_env_yaml)
    except PayloadError as err:
        violation = Violation("spec.runtimeEnvYAML", f"runtimeEnvYAML {err}")
        raise InvalidJobSpecError(str(violation)) from None


def entrypoint_resources_of(spec: RayJobSpec) -> dict[str, float] | None:
    """`entrypointResources` as numbers; None when unset.

    Raises:
        InvalidJobSpecError: It is not a JSON object of finite numbers, or is too large.
    """
    if not spec.entrypoint_resources:
        return None
    try:
        return formats.json_number_map(spec.entrypoint_resources)
    except PayloadError as err:
        violation = Violation("spec.entrypointResources", f"entrypointResources {err}")
        raise InvalidJobSpecError(str(violation)) from None


def _mode(rayjob: RayJob) -> JobSubmissionMode:
    return rayjob.spec.submission_mode or Mode.K8S_JOB


def _go_quote(text: str) -> str:
    """Go's `strconv.Quote` for the JSON KubeRay embeds in the script (a double-quoted string)."""
    return json.dumps(text)


# --- the RayCluster (J3, J9) ----------------------------------------------------------------------


def build_rayjob_cluster(
    rayjob: RayJob,
    cluster_name: str,
    job_id: str,
    attempt: int,
    *,
    login_shell: bool = False,
    batch_scheduler: str = "",
) -> JSONObject:
    """The attempt's RayCluster: a copy of `rayClusterSpec`, labelled and owned by the RayJob.

    Raises:
        InvalidJobSpecError: SidecarMode only, when `runtimeEnvYAML` cannot be used; or the
            batch scheduler cannot take the RayJob.
    """
    spec = rayjob.spec.ray_cluster_spec
    if spec is None:
        raise ValueError("the RayJob has no rayClusterSpec to build a RayCluster from")
    mode = _mode(rayjob)
    if batch_scheduler:
        try:
            batch_scheduling.check_submission(batch_scheduler, rayjob.spec, rayjob.labels)
        except batch_scheduling.UnschedulableError as err:
            raise InvalidJobSpecError(str(err)) from None
    labels = {
        **rayjob.labels,
        **originated_labels(rayjob),
        k.LABEL_JOB_SUBMISSION_MODE: mode.value,
        k.LABEL_JOB_ATTEMPT: str(attempt),
    }
    annotations = names.without_last_applied(rayjob.annotations)
    cluster_spec = copy.deepcopy(spec.to_json_dict())
    if mode == Mode.SIDECAR:
        annotations[k.ANNOTATION_DISABLE_PROVISIONED_HEAD_RESTART] = flags.TRUE
        pod = cluster_spec["headGroupSpec"]["template"].setdefault("spec", {})
        sidecar = submitter_container(
            rayjob, spec, cluster_name, job_id, "", mode=Mode.SIDECAR, login_shell=login_shell
        )
        pod["containers"] = [*pod.get("containers", []), sidecar]
        # The sidecar must run once: a restarted head would submit again (KubeRay J9).
        pod["restartPolicy"] = RestartPolicy.NEVER.value
    metadata: JSONObject = {
        "name": cluster_name,
        "namespace": rayjob.namespace,
        "labels": labels,
        "ownerReferences": [rayjob_owner_reference(rayjob)],
    }
    if annotations:
        metadata["annotations"] = annotations
    manifest = {
        "apiVersion": k.API_VERSION,
        "kind": "RayCluster",
        "metadata": metadata,
        "spec": cluster_spec,
    }
    if batch_scheduler and mode == Mode.K8S_JOB:
        # KubeRay stamps the cluster of a K8sJobMode RayJob only: its pods then inherit from it.
        batch_scheduling.stamp(batch_scheduler, job_parent(rayjob), manifest)
    return manifest


def submitter_pod_spec(rayjob: RayJob) -> JSONObject:
    """The submitter's pod spec as a batch scheduler counts it.

    The template's, else the default container with KubeRay's default resources.
    """
    template = rayjob.spec.submitter_pod_template
    if template:
        return dict(template.get("spec") or {})
    resources = {"requests": SUBMITTER_REQUESTS, "limits": SUBMITTER_LIMITS}
    return {"containers": [{"name": k.SUBMITTER_CONTAINER_NAME, "resources": resources}]}


def job_parent(rayjob: RayJob) -> batch_scheduling.Parent:
    """The RayJob as a batch scheduler's parent: its submitter pod counts in its task groups."""
    return batch_scheduling.Parent(
        rayjob.labels,
        rayjob.annotations,
        rayjob.name,
        job=rayjob.spec,
        submitter_pod=submitter_pod_spec(rayjob),
    )


# --- the submitter (J5, J6) -----------------------------------------------------------------------


def dashboard_port(spec: RayClusterSpec) -> int:
    """The head container's port named `dashboard`, else 8265 (`FindContainerPort`)."""
    containers = (spec.head_group_spec.template.get("spec") or {}).get("containers") or []
    ray = containers[k.RAY_CONTAINER_INDEX] if containers else {}
    for port in ray.get("ports") or []:
        if port.get("name") == k.PORT_NAME_DASHBOARD:
            return int(port.get("containerPort") or k.PORT_DASHBOARD)
    return k.PORT_DASHBOARD


def submit_script(
    rayjob: RayJob, job_id: str, dashboard_url: str, mode: JobSubmissionMode, port: int
) -> str:
    """KubeRay's `BuildJobSubmitCommand`, joined into one bash script.

    K8sJobMode: wait for the GCS, submit only if `ray job status` does not know the id
    (`--no-wait`), then follow the logs, so a retried submitter Pod re-attaches instead of
    submitting twice. SidecarMode: wait on localhost, then one blocking `ray job submit`.

    Raises:
        InvalidJobSpecError: `runtimeEnvYAML` cannot be used (see `runtime_env_of`).
    """
    if mode == Mode.SIDECAR:
        address = f"http://127.0.0.1:{port}"
        health_url = f"http://localhost:{port}/{GCS_HEALTH_PATH}"
    else:
        address = (
            dashboard_url if dashboard_url.startswith("http://") else f"http://{dashboard_url}"
        )
        health_url = f"{address}/{GCS_HEALTH_PATH}"
    spec = rayjob.spec
    health = _HEALTH_COMMAND.format(url=health_url, timeout=GCS_HEALTH_TIMEOUT_SECONDS)
    waiting = _go_quote(f"Waiting for Ray Dashboard GCS to become healthy at {address} ...")
    cmd = ["until", health, ">/dev/null", "2>&1", ";", "do", "echo", waiting, ";"]
    cmd += ["sleep", "2", ";", "done", ";"]
    check_first = mode == Mode.K8S_JOB
    if check_first:
        cmd += ["if", "!", "ray", "job", "status", "--address", address, job_id]
        cmd += [">/dev/null", "2>&1", ";", "then"]
    cmd += ["ray", "job", "submit", "--address", address]
    if check_first:
        cmd.append("--no-wait")
    if spec.runtime_env_yaml:
        # sigs.k8s.io/yaml's YAMLToJSON goes through Go maps, so every level's keys come sorted.
        runtime_env = json.dumps(runtime_env_of(spec), separators=(",", ":"), sort_keys=True)
        cmd += ["--runtime-env-json", _go_quote(runtime_env)]
    if spec.metadata:
        metadata = json.dumps(dict(sorted(spec.metadata.items())), separators=(",", ":"))
        cmd += ["--metadata-json", _go_quote(metadata)]
    if job_id:
        cmd += ["--submission-id", job_id]
    if spec.entrypoint_num_cpus and spec.entrypoint_num_cpus > 0:
        cmd += ["--entrypoint-num-cpus", f"{float(spec.entrypoint_num_cpus):f}"]
    if spec.entrypoint_num_gpus and spec.entrypoint_num_gpus > 0:
        cmd += ["--entrypoint-num-gpus", f"{float(spec.entrypoint_num_gpus):f}"]
    if spec.entrypoint_resources:
        cmd += ["--entrypoint-resources", _go_quote(spec.entrypoint_resources)]
    cmd += ["--", (spec.entrypoint or "").strip(), ";"]
    if check_first:
        cmd += ["fi", ";", "ray", "job", "logs", "--address", address, "--follow", job_id]
    return " ".join(cmd)


def submitter_container(
    rayjob: RayJob,
    cluster_spec: RayClusterSpec,
    cluster_name: str,
    job_id: str,
    dashboard_url: str,
    *,
    mode: JobSubmissionMode,
    container: JSONObject | None = None,
    login_shell: bool = False,
) -> JSONObject:
    """KubeRay's default `ray-job-submitter` (or the user's container), configured.

    Args:
        rayjob: The RayJob (entrypoint, runtime env, metadata, entrypoint resources).
        cluster_spec: The cluster the job runs on (head image, dashboard port, auth).
        cluster_name: The cluster's name (its auth Secret is named after it).
        job_id: The submission id of this attempt.
        dashboard_url: `<head svc>.<ns>.svc.<domain>:<port>`, no scheme (K8sJobMode).
        mode: K8sJobMode or SidecarMode.
        container: The first container of `submitterPodTemplate`, if the user gave one.
        login_shell: Run the script in a login shell (`bash -cel`).
    """
    if container is None:
        head = (cluster_spec.head_group_spec.template.get("spec") or {}).get("containers") or []
        container = {
            "name": k.SUBMITTER_CONTAINER_NAME,
            "image": head[k.RAY_CONTAINER_INDEX].get("image", "") if head else "",
            "resources": {
                "limits": dict(SUBMITTER_LIMITS),
                "requests": dict(SUBMITTER_REQUESTS),
            },
        }
    else:
        container = copy.deepcopy(container)
    if not container.get("command") or mode == Mode.SIDECAR:
        port = dashboard_port(cluster_spec)
        container["command"] = ["/bin/bash", "-cel" if login_shell else "-ce", "--"]
        container["args"] = [submit_script(rayjob, job_id, dashboard_url, mode, port)]
    append_env(
        container,
        env_var(ENV_PYTHONUNBUFFERED, "1"),
        env_var(ENV_DASHBOARD_ADDRESS, dashboard_url),
        env_var(ENV_JOB_SUBMISSION_ID, job_id),
    )
    if is_auth_enabled(cluster_spec):
        add_token_env(container, cluster_name, cluster_spec.auth_options)
    return container


def submitter_job_name(rayjob_name: str) -> str:
    """The submitter Job has the RayJob's name (`RayJobK8sJobNamespacedName`)."""
    return rayjob_name


def build_submitter_job(
    rayjob: RayJob,
    cluster: RayCluster,
    job_id: str,
    dashboard_url: str,
    attempt: int,
    options: BuildOptions = DEFAULT_OPTIONS,
) -> JSONObject:
    """The K8sJobMode submitter: a batch/v1 Job named after the RayJob, owned by it.

    Raises:
        InvalidJobSpecError: `runtimeEnvYAML` cannot be used (see `runtime_env_of`).
    """
    spec = rayjob.spec
    template = copy.deepcopy(spec.submitter_pod_template) if spec.submitter_pod_template else None
    if template is None:
        template = {"spec": {"containers": [], "restartPolicy": RestartPolicy.NEVER.value}}
    pod = template.setdefault("spec", {})
    containers = pod.get("containers") or []
    given = containers[k.RAY_CONTAINER_INDEX] if containers else None
    configured = submitter_container(
        rayjob,
        cluster.spec,
        cluster.name,
        job_id,
        dashboard_url,
        mode=Mode.K8S_JOB,
        container=given,
        login_shell=options.login_shell,
    )
    pod["containers"] = [configured, *containers[1:]]
    template_meta = template.setdefault("metadata", {})
    labels = template_meta.get("labels") or {}
    template_meta["labels"] = {
        **labels,
        **originated_labels(rayjob),
        k.LABEL_CREATED_BY: k.CREATED_BY_VALUE,
        k.LABEL_JOB_ATTEMPT: str(attempt),
    }
    if options.batch_scheduler:
        group = batch_scheduling.SUBMITTER_GROUP
        batch_scheduling.stamp(options.batch_scheduler, job_parent(rayjob), template, group)
    backoff = k.DEFAULT_SUBMITTER_BACKOFF_LIMIT
    if spec.submitter_config is not None and spec.submitter_config.backoff_limit is not None:
        backoff = spec.submitter_config.backoff_limit
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": submitter_job_name(rayjob.name),
            "namespace": rayjob.namespace,
            "labels": {
                **originated_labels(rayjob),
                k.LABEL_CREATED_BY: k.CREATED_BY_VALUE,
                k.LABEL_JOB_ATTEMPT: str(attempt),
            },
            "ownerReferences": [rayjob_owner_reference(rayjob)],
        },
        "spec": {"backoffLimit": backoff, "template": template},
    }


# --- `<rayjob>-head-svc` (J15) --------------------------------------------------------------------


def rayjob_head_service_name(rayjob_name: str) -> str:
    """`<rayjob>-head-svc` (`GenerateHeadServiceName(RayJobCRD, …)`)."""
    return f"{rayjob_name}-head-svc"


def build_rayjob_head_service(
    rayjob: RayJob, cluster: RayCluster, options: BuildOptions = DEFAULT_OPTIONS
) -> JSONObject:
    """The cluster's head Service, renamed and relabelled for the RayJob and owned by it."""
    service = build_head_service(cluster, options)
    identifier = names.check_label(names.identifier(rayjob.name, RayNodeType.HEAD))
    service["metadata"] = {
        "name": rayjob_head_service_name(rayjob.name),
        "namespace": rayjob.namespace,
        "labels": {
            **originated_labels(rayjob),
            k.LABEL_NODE_TYPE: RayNodeType.HEAD.value,
            k.LABEL_IDENTIFIER: identifier,
        },
        "ownerReferences": [rayjob_owner_reference(rayjob)],
    }
    return service
