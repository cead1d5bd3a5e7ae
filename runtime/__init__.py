"""The process runtime the worker and the bridge share.

`settings` (the configuration, read once from the environment), `temporal_client` (the one
way to connect to Temporal, with `codec`'s optional payload encryption), `logs` (text or
JSON lines), `health` (`/healthz`, `/readyz`), `prometheus` (the `/metrics` endpoint) and
`telemetry` (OpenTelemetry traces from the OTEL_* variables).
"""
