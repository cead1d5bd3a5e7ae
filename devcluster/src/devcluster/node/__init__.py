"""devcluster's kubelet as the node of a real Kubernetes API server (see `agent`).

`NodeAgent` registers the Node, mirrors what the node needs, runs pods with the process or
simulated runtime, writes their status, serves the kubelet API for logs and programs Service
networking, all over HTTPS with a node's and kube-proxy's identities.
"""

from __future__ import annotations

from devcluster.node.agent import NodeAgent, NodeConfig

__all__ = ["NodeAgent", "NodeConfig"]
