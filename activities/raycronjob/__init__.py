"""The RayCronJob activities: `contract` is what the RayCronJob workflows code against.

`kube_effects` reads the RayCronJob and creates the RayJob of one firing; `schedules` keeps
the RayCronJob's Temporal Schedule in step with it.
"""
