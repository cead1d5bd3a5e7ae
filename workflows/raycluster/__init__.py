"""The RayCluster workflow: KubeRay's RayCluster controller as one durable workflow per CR."""
