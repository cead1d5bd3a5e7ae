"""The RayCluster activities: `contract` is what the RayCluster workflow codes against.

`kube_effects` reads a pass's snapshot, applies its plan and writes status; `owned_objects`
keeps the objects a RayCluster owns besides its pods; `redis_cleanup` runs the Redis cleanup
finalizer's steps.
"""
