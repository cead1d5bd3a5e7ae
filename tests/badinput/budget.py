"""How many examples the bad-input properties try, and the settings they share.

`KUBERAY_TEMPORAL_BADINPUT_EXAMPLES` sets the size of the pure properties; the workflow
properties, which need one workflow run per example, try a tenth of it (at least 5). Every
profile is derandomized, so a run of a given size always tries the same examples, and keeps no
example database, so nothing is written into the checkout.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

CI_EXAMPLES = 60
EXAMPLES = int(os.environ.get("KUBERAY_TEMPORAL_BADINPUT_EXAMPLES", str(CI_EXAMPLES)))
WORKFLOW_EXAMPLES = max(5, EXAMPLES // 10)

_COMMON = {
    "derandomize": True,
    "database": None,
    "deadline": None,
    "print_blob": False,
    # Strategies draw whole KubeRay samples; the sizes are expected.
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}

PURE = settings(max_examples=EXAMPLES, **_COMMON)  # type: ignore[arg-type]
"""For the properties over validation, loading and the CRD schema."""

WORKFLOW = settings(max_examples=WORKFLOW_EXAMPLES, **_COMMON)  # type: ignore[arg-type]
"""For the properties that run a workflow per example."""

MIXED = settings(max_examples=max(3, WORKFLOW_EXAMPLES // 2), **_COMMON)  # type: ignore[arg-type]
"""For the property that runs several valid and invalid CRs side by side per example."""
