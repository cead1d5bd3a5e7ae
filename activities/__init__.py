"""Activities: everything that talks to the outside world on a workflow's behalf.

One module per external system (Kubernetes, Ray dashboard); `registry.build_activities`
binds them to their clients for the worker.
"""
