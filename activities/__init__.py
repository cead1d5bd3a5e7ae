"""Activities: everything that talks to the outside world on a workflow's behalf.

* `kube` — the Kubernetes client layer (client, errors, decoding, vocabulary, spans).
* `dashboard` — the Ray dashboard's client and where a cluster's dashboard is.
* `raycluster`, `rayjob`, `rayservice` — one package per kind: its `contract` (the inputs,
  results and views its workflow codes against, and the only part workflows import) and its
  effects on Kubernetes (`kube_effects`) and on Ray (`ray_effects`).
* `contract` — the views every kind shares (pods, Services); `builders` — pure manifest
  builders; `events` and `kuberay_metrics` — KubeRay's Events and operator metrics.

`registry.build_activities` binds them all to their clients for the worker.
"""
