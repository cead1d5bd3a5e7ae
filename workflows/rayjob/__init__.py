"""The RayJob workflow: KubeRay's RayJob state machine as one durable workflow per CR."""
