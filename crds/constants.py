"""Names KubeRay gives to things: labels, annotations, finalizers, ports, limits, Event reasons.

Tools built for KubeRay (kubectl ray, Kueue, dashboards, alerting rules) find Ray objects by
these names, so they are KubeRay's exactly (`ray-operator/controllers/ray/utils/constant.go`).
"""

from __future__ import annotations

from typing import Final

GROUP: Final = "ray.io"
VERSION: Final = "v1"
API_VERSION: Final = f"{GROUP}/{VERSION}"
# The kinds with a workflow each (`<kind>/<namespace>/<name>/<uid>`, `crds.refs`).
KINDS: Final = ("RayCluster", "RayJob", "RayService", "RayCronJob")

# --- labels -----------------------------------------------------------------------------------
LABEL_CLUSTER: Final = "ray.io/cluster"
LABEL_NODE_TYPE: Final = "ray.io/node-type"
LABEL_GROUP: Final = "ray.io/group"
LABEL_IS_RAY_NODE: Final = "ray.io/is-ray-node"
LABEL_IDENTIFIER: Final = "ray.io/identifier"
LABEL_SERVE: Final = "ray.io/serve"
LABEL_HEADLESS_WORKER_SVC: Final = "ray.io/headless-worker-svc"
LABEL_ORIGINATED_FROM_CR_NAME: Final = "ray.io/originated-from-cr-name"
LABEL_ORIGINATED_FROM_CRD: Final = "ray.io/originated-from-crd"
LABEL_JOB_SUBMISSION_MODE: Final = "ray.io/job-submission-mode"
LABEL_WORKER_REPLICA_NAME: Final = "ray.io/worker-group-replica-name"
LABEL_WORKER_REPLICA_INDEX: Final = "ray.io/worker-group-replica-index"
LABEL_REPLICA_HOST_INDEX: Final = "ray.io/replica-host-index"
LABEL_APP_NAME: Final = "app.kubernetes.io/name"
LABEL_CREATED_BY: Final = "app.kubernetes.io/created-by"
LABEL_PRIORITY_CLASS_NAME: Final = "ray.io/priority-class-name"
LABEL_GANG_SCHEDULING_ENABLED: Final = "ray.io/gang-scheduling-enabled"
# On each RayJob a RayCronJob creates: the RayCronJob's name.
LABEL_CRONJOB_NAME: Final = "ray.io/cronjob-name"
# Ours: the RayJob attempt a cluster or submitter belongs to (KubeRay has no attempt identity).
LABEL_JOB_ATTEMPT: Final = "ray.io/rayjob-attempt"

APP_NAME_VALUE: Final = "kuberay"
CREATED_BY_VALUE: Final = "kuberay-operator"
HEAD_GROUP_VALUE: Final = "headgroup"
SUBMITTER_GROUP_VALUE: Final = "submittergroup"

# --- annotations ------------------------------------------------------------------------------
# kubectl's copy of the whole applied manifest: large, and nothing a controller decides on, so
# it is not copied to what a CR makes (nor into workflow histories).
ANNOTATION_LAST_APPLIED: Final = "kubectl.kubernetes.io/last-applied-configuration"
ANNOTATION_FT_ENABLED: Final = "ray.io/ft-enabled"
ANNOTATION_EXTERNAL_STORAGE_NAMESPACE: Final = "ray.io/external-storage-namespace"
ANNOTATION_GCS_FT_DELETION_TIMEOUT: Final = "ray.io/gcs-ft-deletion-timeout"
ANNOTATION_OVERWRITE_CONTAINER_CMD: Final = "ray.io/overwrite-container-cmd"
ANNOTATION_INITIALIZING_TIMEOUT: Final = "ray.io/initializing-timeout"
ANNOTATION_ENABLE_SERVE_SERVICE: Final = "ray.io/enable-serve-service"
ANNOTATION_HASH_WITHOUT_REPLICAS: Final = "ray.io/hash-without-replicas-and-workers-to-delete"
ANNOTATION_RECREATE_HASH: Final = "ray.io/upgrade-strategy-recreate-hash"
ANNOTATION_NUM_WORKER_GROUPS: Final = "ray.io/num-worker-groups"
ANNOTATION_KUBERAY_VERSION: Final = "ray.io/kuberay-version"
ANNOTATION_DISABLE_PROVISIONED_HEAD_RESTART: Final = "ray.io/disable-provisioned-head-restart"
# On each RayJob a RayCronJob creates: the tick it was created for (RFC 3339, UTC).
ANNOTATION_CRONJOB_SCHEDULED_TIMESTAMP: Final = "ray.io/cronjob-scheduled-timestamp"
# Ours: a `rollback` signal written back to the RayService so kubectl and the workflow agree.
ANNOTATION_ROLLBACK_REQUESTED: Final = "ray.io/rollback-requested"
# Ours: how far back a RayCronJob's missed ticks are made up (`crds.validation.cronjobs`).
ANNOTATION_CATCHUP_WINDOW: Final = "kuberay-temporal.io/catchup-window"

KUBERAY_VERSION: Final = "v1.7.0"

# --- finalizers -------------------------------------------------------------------------------
FINALIZER_GCS_FT_REDIS_CLEANUP: Final = "ray.io/gcs-ft-redis-cleanup-finalizer"
FINALIZER_RAYJOB: Final = "ray.io/rayjob-finalizer"
FINALIZER_RAYSERVICE: Final = "ray.io/rayservice-finalizer"

# --- managedBy --------------------------------------------------------------------------------
MANAGED_BY_KUBERAY: Final = "ray.io/kuberay-operator"
MANAGED_BY_MULTIKUEUE: Final = "kueue.x-k8s.io/multikueue"
MANAGED_BY_ALLOWED: Final = (MANAGED_BY_KUBERAY, MANAGED_BY_MULTIKUEUE)

# --- containers -----------------------------------------------------------------------------------
# With mTLS, the init container that holds a pod until its certificate names the pod's IP.
CONTAINER_WAIT_FOR_IP_SAN: Final = "wait-for-tls-ip-san"

# --- ports ------------------------------------------------------------------------------------
PORT_CLIENT: Final = 10001
PORT_GCS_SERVER: Final = 6379
PORT_DASHBOARD: Final = 8265
PORT_METRICS: Final = 8080
PORT_DASHBOARD_AGENT: Final = 52365
PORT_SERVING: Final = 8000
PORT_GATEWAY_LISTENER: Final = 80

PORT_NAME_CLIENT: Final = "client"
PORT_NAME_GCS_SERVER: Final = "gcs-server"
PORT_NAME_DASHBOARD: Final = "dashboard"
PORT_NAME_METRICS: Final = "metrics"
PORT_NAME_SERVING: Final = "serve"

# --- name limits ------------------------------------------------------------------------------
# The longest suffix KubeRay appends to a cluster name is "-serve-svc"; the result must stay a
# 63-character DNS label. RayJob and RayService names leave room for a "-xxxxx" cluster suffix,
# RayCronJob names for the "-<minutes since the epoch>" (up to 11 characters) of their RayJobs.
MAX_RAYCLUSTER_NAME_LENGTH: Final = 53
MAX_RAYJOB_NAME_LENGTH: Final = MAX_RAYCLUSTER_NAME_LENGTH - 6
MAX_RAYSERVICE_NAME_LENGTH: Final = MAX_RAYCLUSTER_NAME_LENGTH - 6
MAX_RAYCRONJOB_NAME_LENGTH: Final = MAX_RAYJOB_NAME_LENGTH - 11
MAX_DNS_LABEL_LENGTH: Final = 63

# --- Event reasons ----------------------------------------------------------------------------
# RayCronJob: its spec is refused (no RayJob is scheduled), and its scheduling is suspended.
EVENT_INVALID_RAYCRONJOB_SPEC: Final = "InvalidRayCronJobSpec"
EVENT_SUSPENDED_RAYCRONJOB: Final = "SuspendedRayCronJob"
# Ours: missed ticks beyond the catch-up bound were skipped (KubeRay makes every one up).
EVENT_SKIPPED_MISSED_TICKS: Final = "SkippedMissedTicks"
# A tick's RayJob was not created: the API server refused it, or did not answer in time.
EVENT_FAILED_TO_CREATE_RAYJOB: Final = "FailedToCreateRayJob"

# --- defaults and timings ---------------------------------------------------------------------
DEFAULT_SERVE_APP_NAME: Final = "default"
DEFAULT_GCS_FT_DELETION_TIMEOUT_SECONDS: Final = 300
DEFAULT_WORKER_GCS_RECONNECT_TIMEOUT_S: Final = "600"
DEFAULT_SUBMITTER_BACKOFF_LIMIT: Final = 2
DEFAULT_TRANSITION_GRACE_PERIOD_SECONDS: Final = 300
DEFAULT_STATUS_CHECK_TIMEOUT_SECONDS: Final = 300
DEFAULT_SUBMITTER_FINISHED_TIMEOUT_SECONDS: Final = 30
DEFAULT_RAYCLUSTER_DELETION_DELAY_SECONDS: Final = 60
DEFAULT_REQUEUE_SECONDS: Final = 300
DEFAULT_GCS_STORAGE_SIZE: Final = "1Gi"
GCS_STORAGE_MOUNT_PATH: Final = "/data/gcs"
GCS_STORAGE_VOLUME_NAME: Final = "gcs-storage"
GCS_STORAGE_PVC_SUFFIX: Final = "-gcs-pvc"

# --- container names --------------------------------------------------------------------------
SUBMITTER_CONTAINER_NAME: Final = "ray-job-submitter"
AUTOSCALER_CONTAINER_NAME: Final = "autoscaler"
RAY_CONTAINER_INDEX: Final = 0

# --- environment variable names KubeRay injects or reads --------------------------------------
ENV_RAY_REDIS_ADDRESS: Final = "RAY_REDIS_ADDRESS"
ENV_REDIS_PASSWORD: Final = "REDIS_PASSWORD"
ENV_REDIS_USERNAME: Final = "REDIS_USERNAME"
ENV_RAY_EXTERNAL_STORAGE_NS: Final = "RAY_external_storage_namespace"
ENV_RAY_GCS_STORAGE: Final = "RAY_gcs_storage"
ENV_RAY_GCS_STORAGE_PATH: Final = "RAY_gcs_storage_path"
ENV_RAY_ENABLE_AUTOSCALER_V2: Final = "RAY_enable_autoscaler_v2"
