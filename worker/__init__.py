"""The worker process: settings, connection, registration and its command.

It runs every workflow and activity of the project on one task queue; the `worker`
subcommand runs it against an existing server, and `kuberay-temporal dev` runs it next to
the embedded dev server.
"""
