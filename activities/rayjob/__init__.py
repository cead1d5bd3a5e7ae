"""The RayJob activities: `contract` is what the RayJob workflow codes against.

`kube_effects` reads and writes the RayJob and the objects it owns; `ray_effects` submits,
follows and stops the Ray job; `views` reads what the workflow sees of its RayCluster and
submitter.
"""
