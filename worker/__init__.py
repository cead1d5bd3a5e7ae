"""The worker process: registration, the workflow runner, and the `worker` subcommand.

It runs every workflow and activity of the project on one task queue; the `worker`
subcommand runs it against an existing server, and `kuberay-temporal dev` runs it next to
the embedded dev server. What it shares with the bridge (settings, the Temporal client, logs,
health, metrics, traces) is `runtime`.
"""
