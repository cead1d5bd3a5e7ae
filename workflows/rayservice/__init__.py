"""The RayService workflow and its upgrade child (KubeRay's RayService controller)."""
