"""kuberay-temporal: KubeRay's custom resources driven by durable Temporal workflows.

This package holds the command line and the embedded local stack; the controller itself
lives in the sibling packages `crds`, `bridge`, `workflows`, `activities` and `worker`.
"""
