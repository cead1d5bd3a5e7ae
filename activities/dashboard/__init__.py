"""The Ray dashboard: its HTTP client, where a cluster's dashboard is, and what it answers.

`contract` holds the typed answers workflows see (`ServeStatus`...); `client` the calls
KubeRay makes; `heads` which Service a cluster's dashboard is reached through, checked;
`urls` the two ways to reach it (the API server's proxy, cluster DNS); `access` opens a
client by the road the settings choose.
"""
