"""The RayService activities: `contract` is what the RayService workflows code against.

`kube_effects` reads a pass's snapshot and creates, updates and deletes its RayClusters;
`routes` keeps where traffic goes (Services, Gateway, HTTPRoute); `ray_effects` applies Serve
configs and reads Serve's health.
"""
