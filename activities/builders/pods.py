"""Head and worker pod manifests for a RayCluster.

The pods must be indistinguishable from KubeRay's (`pod.go` DefaultHeadPodTemplate,
DefaultWorkerPodTemplate, BuildPod; `raycluster_controller.go` buildHeadPod/buildWorkerPod),
because everything around Ray on Kubernetes reads their labels, env and commands. The steps
run in KubeRay's order, since later steps read what earlier ones wrote (env order, the GCS
wait container's copy of the user's env, start params shared by command and probes).

The pod name is the caller's: the workflow picks it deterministically, so a retried create
hits 409 instead of making a second pod.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from activities.builders import batch_scheduling, names, ray_start
from activities.builders.auth import add_token_env, configure_token_auth, is_auth_enabled
from activities.builders.autoscaler import (
    apply_autoscaler_overrides,
    autoscaler_version,
    base_autoscaler_container,
    is_autoscaling_enabled,
)
from activities.builders.containers import (
    RAY_LOGS_PATH,
    RAY_LOGS_VOLUME,
    SHARED_MEMORY_PATH,
    SHARED_MEMORY_VOLUME,
    add_empty_dir,
    add_init_container_env,
    add_ray_env,
    ensure_metrics_port,
    set_ray_command,
    wait_gcs_ready_container,
)
from activities.builders.env import append_env, env_var
from activities.builders.gcs_ft import configure_gcs_ft
from activities.builders.hashing import recreate_hash
from activities.builders.options import DEFAULT_OPTIONS, BuildOptions
from activities.builders.probes import add_default_probes
from activities.builders.tls import configure_tls, is_tls_enabled, set_container_tls_config
from activities.kube.vocabulary import RestartPolicy
from crds import constants as k
from crds import flags
from crds.common import JSONObject
from crds.enums import AutoscalerVersion, RayNodeType
from crds.raycluster import RayCluster, WorkerGroupSpec


class InvalidPodTemplateError(ValueError):
    """A group's pod template has no containers (validation should have caught it)."""


@dataclass
class _Draft:
    """A pod being built: its template copy and the start params shared by later steps."""

    template: JSONObject
    params: dict[str, str]
    node_type: RayNodeType
    head_fqdn: str
    port: str

    @property
    def metadata(self) -> JSONObject:
        return self.template["metadata"]  # type: ignore[no-any-return]

    @property
    def spec(self) -> JSONObject:
        return self.template["spec"]  # type: ignore[no-any-return]

    @property
    def ray_container(self) -> JSONObject:
        return self.spec["containers"][k.RAY_CONTAINER_INDEX]  # type: ignore[no-any-return]


def build_head_pod(
    cluster: RayCluster, pod_name: str, options: BuildOptions = DEFAULT_OPTIONS
) -> JSONObject:
    """The head pod, stamped with the Recreate hash and the KubeRay version."""
    head = cluster.spec.head_group_spec
    draft = _start(cluster, head.template, pod_name, RayNodeType.HEAD, options)
    draft.params = _group_params(head.ray_start_params, head.resources, head.labels)
    template_labels = draft.metadata.get("labels") or {}
    draft.metadata["labels"] = names.pod_labels(
        cluster.name,
        RayNodeType.HEAD,
        k.HEAD_GROUP_VALUE,
        {**template_labels, **(head.labels or {})},
    )
    ray_start.add_missing_params(draft.params, RayNodeType.HEAD, draft.port, draft.head_fqdn)
    _init_annotations(draft, cluster)
    if is_autoscaling_enabled(cluster.spec):
        _add_autoscaler(draft, cluster, options)
    configure_gcs_ft(draft.template, cluster, RayNodeType.HEAD, draft.params)
    ensure_metrics_port(draft.ray_container)
    if is_auth_enabled(cluster.spec):
        configure_token_auth(draft.template, cluster.name, cluster.spec.auth_options)
    configure_tls(draft.template, cluster, RayNodeType.HEAD)
    pod = _finish(draft, cluster, options)
    pod["metadata"]["annotations"][k.ANNOTATION_RECREATE_HASH] = recreate_hash(cluster.spec)
    pod["metadata"]["annotations"][k.ANNOTATION_KUBERAY_VERSION] = k.KUBERAY_VERSION
    _batch_schedule(pod, cluster, options, batch_scheduling.HEAD_GROUP)
    return pod


def build_worker_pod(
    cluster: RayCluster,
    group_name: str,
    pod_name: str,
    *,
    replica_index: int = 0,
    replica_name: str = "",
    host_index: int = 0,
    options: BuildOptions = DEFAULT_OPTIONS,
) -> JSONObject:
    """A worker pod of one group.

    Args:
        cluster: the RayCluster.
        group_name: the worker group's `groupName`.
        pod_name: the full pod name (see `names.worker_pod_name_prefix`).
        replica_index: the replica's index in its group (`ray.io/worker-group-replica-index`).
        replica_name: for multi-host groups, the replica's name shared by its hosts.
        host_index: for multi-host groups, this pod's index within the replica.
        options: operator-wide switches.
    """
    group = find_worker_group(cluster, group_name)
    draft = _start(cluster, group.template, pod_name, RayNodeType.WORKER, options)
    if options.init_container_injection:
        init = wait_gcs_ready_container(
            draft.ray_container, draft.head_fqdn, draft.port, login_shell=options.login_shell
        )
        draft.spec["initContainers"] = [*(draft.spec.get("initContainers") or []), init]
    draft.params = _group_params(group.ray_start_params, group.resources, group.labels)
    template_labels = draft.metadata.get("labels") or {}
    labels = names.pod_labels(
        cluster.name,
        RayNodeType.WORKER,
        group.group_name,
        {**template_labels, **(group.labels or {})},
    )
    labels[k.LABEL_WORKER_REPLICA_INDEX] = str(replica_index)
    if (group.num_of_hosts or 1) > 1:
        labels[k.LABEL_WORKER_REPLICA_NAME] = replica_name
        labels[k.LABEL_REPLICA_HOST_INDEX] = str(host_index)
    draft.metadata["labels"] = labels
    ray_start.add_missing_params(draft.params, RayNodeType.WORKER, draft.port, draft.head_fqdn)
    _init_annotations(draft, cluster)
    configure_gcs_ft(draft.template, cluster, RayNodeType.WORKER, draft.params)
    ensure_metrics_port(draft.ray_container)
    if _autoscaler_v2(cluster):
        # Autoscaler v2 replaces failed pods itself; a restarted container would confuse it.
        draft.spec["restartPolicy"] = RestartPolicy.NEVER.value
    if is_auth_enabled(cluster.spec):
        configure_token_auth(draft.template, cluster.name, cluster.spec.auth_options)
    configure_tls(draft.template, cluster, RayNodeType.WORKER)
    pod = _finish(draft, cluster, options)
    _batch_schedule(pod, cluster, options, group.group_name)
    return pod


def _batch_schedule(
    pod: JSONObject, cluster: RayCluster, options: BuildOptions, group: str
) -> None:
    """What the operator's batch scheduler reads, from the RayCluster (`batch_scheduling`)."""
    if options.batch_scheduler:
        parent = batch_scheduling.Parent(
            cluster.labels, cluster.annotations, cluster.name, cluster=cluster.spec
        )
        batch_scheduling.stamp(options.batch_scheduler, parent, pod, group)


def find_worker_group(cluster: RayCluster, group_name: str) -> WorkerGroupSpec:
    """The worker group with this name; `KeyError` when there is none."""
    for group in cluster.spec.worker_group_specs or []:
        if group.group_name == group_name:
            return group
    raise KeyError(f"RayCluster {cluster.name} has no worker group {group_name!r}")


def _start(
    cluster: RayCluster,
    template: JSONObject,
    pod_name: str,
    node_type: RayNodeType,
    options: BuildOptions,
) -> _Draft:
    # The template belongs to the caller's model: every edit happens on a deep copy.
    copied = copy.deepcopy(template)
    # YAML lets users write `metadata:` with nothing after it; treat null like absent.
    metadata = copied["metadata"] = copied.get("metadata") or {}
    metadata.pop("generateName", None)
    metadata["name"] = pod_name
    # Pods stay in the cluster's namespace whatever the template says.
    metadata["namespace"] = cluster.namespace
    spec = copied["spec"] = copied.get("spec") or {}
    if not spec.get("containers"):
        raise InvalidPodTemplateError(f"{node_type.value} pod template has no containers")
    return _Draft(
        template=copied,
        params={},
        node_type=node_type,
        head_fqdn=names.head_service_fqdn(cluster, options.cluster_domain),
        port=ray_start.head_port(cluster.spec.head_group_spec.ray_start_params),
    )


def _group_params(
    params: dict[str, str] | None, resources: dict[str, str] | None, labels: dict[str, str] | None
) -> dict[str, str]:
    result = dict(params or {})
    ray_start.apply_group_resources(result, resources)
    ray_start.apply_group_labels(result, labels)
    return result


def _init_annotations(draft: _Draft, cluster: RayCluster) -> None:
    annotations = draft.metadata["annotations"] = draft.metadata.get("annotations") or {}
    if _overwrite_command(cluster.annotations):
        annotations[k.ANNOTATION_OVERWRITE_CONTAINER_CMD] = flags.TRUE


def _overwrite_command(annotations: dict[str, str]) -> bool:
    return flags.is_on(annotations.get(k.ANNOTATION_OVERWRITE_CONTAINER_CMD))


def _autoscaler_v2(cluster: RayCluster) -> bool:
    return is_autoscaling_enabled(cluster.spec) and (
        autoscaler_version(cluster.spec) is AutoscalerVersion.V2
    )


def _add_autoscaler(draft: _Draft, cluster: RayCluster, options: BuildOptions) -> None:
    # Ray's own monitor does not understand Kubernetes; the sidecar replaces it.
    draft.params["no-monitor"] = "true"
    draft.spec["serviceAccountName"] = names.check_name(
        names.autoscaler_service_account_name(cluster)
    )
    sidecar = base_autoscaler_container(
        str(draft.ray_container.get("image", "")), login_shell=options.login_shell
    )
    if is_auth_enabled(cluster.spec):
        add_token_env(sidecar, cluster.name, cluster.spec.auth_options)
    if is_tls_enabled(cluster.spec):  # before the overrides, which may not touch TLS settings
        set_container_tls_config(sidecar)
    if cluster.spec.autoscaler_options is not None:
        apply_autoscaler_overrides(sidecar, cluster.spec.autoscaler_options)
    draft.spec["containers"] = [*draft.spec["containers"], sidecar]
    version = autoscaler_version(cluster.spec)
    if version is AutoscalerVersion.V2:
        append_env(draft.ray_container, env_var(k.ENV_RAY_ENABLE_AUTOSCALER_V2, "true"))
        draft.spec["restartPolicy"] = RestartPolicy.NEVER.value
    elif version is AutoscalerVersion.V1:
        append_env(draft.ray_container, env_var(k.ENV_RAY_ENABLE_AUTOSCALER_V2, flags.FALSE))


def _finish(draft: _Draft, cluster: RayCluster, options: BuildOptions) -> JSONObject:
    """KubeRay's BuildPod: volumes, the generated command, env, probes, the owner."""
    creator = names.creator_kind(cluster)
    is_head = draft.node_type is RayNodeType.HEAD
    if creator == names.CREATOR_RAYSERVICE:
        # The RayService controller flips the head's label once its Serve proxy is healthy.
        draft.metadata["labels"][k.LABEL_SERVE] = flags.text(not is_head)
    container, spec, params = draft.ray_container, draft.spec, draft.params
    if "plasma-directory" not in params:
        add_empty_dir(spec, container, SHARED_MEMORY_VOLUME, SHARED_MEMORY_PATH, memory=True)
    if is_head and is_autoscaling_enabled(cluster.spec):
        # The autoscaler writes logs that the head's dashboard reads.
        for target in (container, _autoscaler_container(spec)):
            add_empty_dir(spec, target, RAY_LOGS_VOLUME, RAY_LOGS_PATH, memory=False)
    ray_start.add_container_resources(params, container.get("resources"))
    start_command = ray_start.ray_start_command(draft.node_type, params)
    overwrite = _overwrite_command(draft.metadata.get("annotations") or {})
    set_ray_command(container, start_command, overwrite=overwrite, login_shell=options.login_shell)
    for init in spec.get("initContainers") or []:
        add_init_container_env(init, draft.head_fqdn)
    add_ray_env(
        container,
        draft.node_type,
        head_fqdn=draft.head_fqdn,
        port=draft.port,
        start_command=start_command,
        creator=creator,
    )
    if options.probes_injection:
        add_default_probes(
            container,
            draft.node_type,
            params,
            ray_version=cluster.spec.ray_version,
            serve_worker=creator == names.CREATOR_RAYSERVICE,
        )
    return {"apiVersion": "v1", "kind": "Pod", "metadata": _owned(draft, cluster), "spec": spec}


def _autoscaler_container(spec: JSONObject) -> JSONObject:
    for container in spec["containers"]:
        if container.get("name") == k.AUTOSCALER_CONTAINER_NAME:
            return container  # type: ignore[no-any-return]
    raise InvalidPodTemplateError("the autoscaler container is missing")


def _owned(draft: _Draft, cluster: RayCluster) -> JSONObject:
    metadata = draft.metadata
    if not metadata.get("annotations"):
        # Go leaves an empty map out of the JSON; so do we.
        metadata.pop("annotations", None)
    owner = names.owner_reference(cluster)
    others = [
        ref for ref in metadata.get("ownerReferences") or [] if ref.get("uid") != owner["uid"]
    ]
    metadata["ownerReferences"] = [*others, owner]
    return metadata
