"""A real Kubernetes control plane, built from Go modules, with devcluster's kubelet as its node.

`building` makes the etcd, kube-apiserver, kube-controller-manager and kube-scheduler binaries
from `controlplane/go.mod` into a cache; `pki` makes the certificates; `processes` runs the
four components. devcluster's own API server stays the zero-build fallback and the fault
injector; this control plane is the judge of what a real cluster accepts (RBAC, admission,
CEL, pruning).
"""
