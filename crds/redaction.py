"""Keep secret values out of workflow histories.

A spec the workflow keeps (and Temporal stores in its history) must not carry a password the
user wrote inline, e.g. `gcsFaultToleranceOptions.redisPassword.value`. Workflows decide on the
redacted spec; activities build pods from the CR they read, so the real value only ever goes
from the API server to the pod it belongs to.
"""

from __future__ import annotations

from crds.raycluster import RayClusterSpec

REDACTED = "<redacted>"


def redacted_cluster_spec(spec: RayClusterSpec) -> RayClusterSpec:
    """A copy of the spec with every inline secret value replaced by `REDACTED`."""
    options = spec.gcs_fault_tolerance_options
    if options is None or options.redis_password is None or not options.redis_password.value:
        return spec
    copy = spec.model_copy(deep=True)
    assert copy.gcs_fault_tolerance_options is not None
    assert copy.gcs_fault_tolerance_options.redis_password is not None
    copy.gcs_fault_tolerance_options.redis_password.value = REDACTED
    return copy
