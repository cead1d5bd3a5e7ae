"""The Ray dashboard: its HTTP client, where a cluster's dashboard is, and what it answers.

`contract` holds the typed answers workflows see (`ServeStatus`...); `client` the calls
KubeRay makes; `urls` the two ways to reach a dashboard (the API server's proxy, cluster DNS).
"""
