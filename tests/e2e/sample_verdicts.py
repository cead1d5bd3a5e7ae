"""Each of KubeRay's samples on this machine: the test that runs it unchanged to KubeRay's end
state with real Ray on the process runtime, or why none can.

Keys are paths under KubeRay's samples folder. `test_sample_verdicts.py` checks that every
YAML file there has exactly one verdict, that each named test exists and names its sample,
and that the README lists every sample not run here with its reason.
"""

from __future__ import annotations

RAYCLUSTERS = "tests/e2e/test_kuberay_samples_real.py"
RAYJOBS = "tests/e2e/test_rayjob_real.py"
TOKEN_REVIEW = "tests/e2e/test_kuberay_samples_kubernetes.py"

RUN: dict[str, str] = {
    # In CI.
    "ray-cluster.auth.yaml": RAYCLUSTERS,
    "ray-cluster.external-redis.yaml": RAYCLUSTERS,
    "ray-job.sample.yaml": RAYJOBS,
    "ray-job.shutdown.yaml": RAYJOBS,
    "ray-job.resources.yaml": RAYJOBS,
    "ray-job.sidecar-mode.yaml": RAYJOBS,
    "ray-job.interactive-mode.yaml": RAYJOBS,
    "ray-job.use-existing-raycluster.yaml": RAYJOBS,
    "ray-job.deletion-rules.yaml": RAYJOBS,
    "ray-job.custom-head-svc.yaml": RAYJOBS,
    "ray-job.platform-events.yaml": RAYJOBS,
    "ray-cronjob.sample.yaml": RAYJOBS,
    "ray-cronjob-timezone.sample.yaml": RAYJOBS,
    "ray-cluster.kubernetes.auth.yaml": TOKEN_REVIEW,
    "ray-cluster.kubernetes.auth-manual.yaml": TOKEN_REVIEW,
    # At full size only (KUBERAY_TEMPORAL_REAL_SAMPLES=all): one at a time, minutes each.
    "ray-cluster.autoscaler-v2.yaml": RAYCLUSTERS,
    "ray-cluster.autoscaler.yaml": RAYCLUSTERS,
    "ray-cluster.complete.yaml": RAYCLUSTERS,
    "ray-cluster.custom-head-service.yaml": RAYCLUSTERS,
    "ray-cluster.deprecate-gcs-ft.yaml": RAYCLUSTERS,
    "ray-cluster.persistent-redis.yaml": RAYCLUSTERS,
    "ray-cluster.embed-grafana.yaml": RAYCLUSTERS,
    "ray-cluster.external-redis-uri.yaml": RAYCLUSTERS,
    "ray-cluster.head-command.yaml": RAYCLUSTERS,
    "ray-cluster.overwrite-command.yaml": RAYCLUSTERS,
    "ray-cluster.py-spy.yaml": RAYCLUSTERS,
    "ray-cluster.sample.yaml": RAYCLUSTERS,
    "ray-cluster.separate-ingress.yaml": RAYCLUSTERS,
    "ray-cluster.auth-manual.yaml": RAYCLUSTERS,
    "ray-cluster.auth.secret-ref.yaml": RAYCLUSTERS,
    "ray-cluster.autoscaler-v2-overwrite-cmd.yaml": RAYCLUSTERS,
    "ray-cluster.embedded-gcs-ft.yaml": RAYCLUSTERS,
    "ray-cluster.network-policy-deny-all.yaml": RAYCLUSTERS,
    "ray-cluster.persistent-redis-sidecar.yaml": RAYCLUSTERS,
    "ray-cluster.platform-events.yaml": RAYCLUSTERS,
    "ray-cluster.sandbox.yaml": RAYCLUSTERS,
    "ray-cluster.uv.yaml": RAYCLUSTERS,
    "ray-job.kueue-toy-sample.yaml": RAYJOBS,
}

OFFLINE = (
    "its code is `ray-project/kuberay`'s `master.zip` on github.com, which KubeRay's archives "
    "do not hold, and this machine and CI are offline"
)
OLD_HANDLE_API = (
    "its Serve app, from KubeRay's `test_dag` archive (which the node serves), calls "
    "`handle.options(use_new_handle_api=True)`, which this machine's Ray, newer than the "
    "sample's image, no longer has"
)
PYPI = (
    "its runtime environment pip-installs from PyPI and its app downloads a model, and this "
    "machine and CI are offline"
)
GPU = "it asks for NVIDIA GPUs (`nvidia.com/gpu`)"
TPU = "it asks for Google TPUs (`google.com/tpu`)"
GKE = "it needs GKE (a node label, a Cloud Storage bucket or its FUSE driver, GKE's isolation)"
SCHEDULER = (
    "its pods wait for a batch scheduler (Volcano, YuniKorn, KAI, scheduler-plugins), none of "
    "which runs here"
)
CERT_MANAGER = "its certificates come from cert-manager, which does not run here"
FLUENT_BIT = "no local program stands in for the `fluent/fluent-bit` image"
CONTAINERS = "it starts a container image no local program stands in for (no container runtime)"
REFUSED = "`historyServerOptions` is refused (see below)"
NO_RAY = "it holds no Ray object (an Ingress, a Gateway API object, agent-sandbox templates)"

NOT_RUN: dict[str, str] = {
    "agent-sandbox/ray-cluster.yaml": OFFLINE,
    "agent-sandbox/sandbox.yaml": NO_RAY,
    "gateway-api/istio-class.yaml": NO_RAY,
    "ingress-rayclient-tls.yaml": NO_RAY,
    "ray-cluster-agc-gatewayapi.yaml": NO_RAY,
    "ray-cluster-alb-ingress.yaml": NO_RAY,
    "pytorch-mnist/ray-job.pytorch-mnist.yaml": OFFLINE,
    "pytorch-resnet-image-classifier/ray-job.pytorch-image-classifier.yaml": GPU,
    "pytorch-text-classifier/ray-job.pytorch-distributed-training.yaml": GPU,
    "ray-data-image-resize/ray-data-image-resize-gcsfusecsi-job.yaml": GKE,
    "ray-data-image-resize/ray-job.image-resize.yaml": OFFLINE,
    "vllm/ray-service.vllm-tpu-v6e-singlehost.yaml": TPU,
    "ray-cluster-label-selector.yaml": GKE,
    "ray-cluster-resource-isolation-with-overrides.gke.yaml": GKE,
    "ray-cluster-resource-isolation.gke.yaml": GKE,
    "ray-cluster.gke-bucket.yaml": GKE,
    "ray-cluster.tls.yaml": CERT_MANAGER,
    "ray-cluster.mtls.yaml": CERT_MANAGER,
    "ray-cluster.fluentbit.yaml": FLUENT_BIT,
    "ray-cluster.historyserver.yaml": REFUSED,
    "ray-cluster.kai-gpu-sharing.yaml": SCHEDULER,
    "ray-cluster.kai-scheduler.yaml": SCHEDULER,
    "ray-cluster.scheduler-plugins.yaml": SCHEDULER,
    "ray-cluster.volcano-scheduler-queue.yaml": SCHEDULER,
    "ray-cluster.volcano-scheduler.yaml": SCHEDULER,
    "ray-cluster.yunikorn-scheduler.yaml": SCHEDULER,
    "ray-job.volcano-scheduler-queue.yaml": SCHEDULER,
    "ray-job.yunikorn-scheduler.yaml": SCHEDULER,
    "ray-cluster.tpu-v4-multihost.yaml": TPU,
    "ray-cluster.tpu-v4-singlehost.yaml": TPU,
    "ray-cluster.tpu-v6e-16-multihost.yaml": TPU,
    "ray-cluster.tpu-v6e-256-multihost.yaml": TPU,
    "ray-cluster.tpu-v6e-singlehost.yaml": TPU,
    "ray-job.tpu-jax.yaml": TPU,
    "ray-job.tpu-v6e-16-multihost.yaml": TPU,
    "ray-job.tpu-v6e-256-multihost.yaml": TPU,
    "ray-job.tpu-v6e-singlehost.yaml": TPU,
    "ray-service.tpu-single-host.yaml": TPU,
    "ray-cluster.verl.yaml": GPU,
    "ray-job.batch-inference.yaml": GPU,
    "ray-service.deepseek.yaml": GPU,
    "ray-service.high-throughput-gemma4.yaml": GPU,
    "ray-service.high-throughput-llm.yaml": GPU,
    "ray-service.llm-serve.yaml": GPU,
    "ray-service.stable-diffusion.yaml": GPU,
    "ray-service.text-summarizer.yaml": GPU,
    "ray-job.light-weight-submitter.yaml": CONTAINERS,
    "ray-job.sandbox.yaml": CONTAINERS,
    "ray-service.sample.yaml": OLD_HANDLE_API,
    "ray-service.custom-serve-service.yaml": OLD_HANDLE_API,
    "ray-service.different-port.yaml": OLD_HANDLE_API,
    "ray-service.high-availability.yaml": OLD_HANDLE_API,
    "ray-service.incremental-upgrade.yaml": OLD_HANDLE_API,
    "ray-service.mobilenet.yaml": PYPI,
    "ray-service.no-ray-serve-replica.yaml": OFFLINE,
    "ray-service.text-ml.yaml": PYPI,
}
