"""Bad input: property-based tests (hypothesis) over generated and mutated ray.io objects.

CI runs them at a small, derandomized size with the rest of the suite (about 16 s). The full
size is one command (10 to 13 minutes on two busy cores):

    KUBERAY_TEMPORAL_BADINPUT_EXAMPLES=2000 .venv/bin/pytest tests/badinput -o timeout=1800

The size drives `budget.PURE` (validation, loading, the CRD schemas: 2,000 examples per
property at full size), `budget.WORKFLOW` (one workflow run per example: 200 invalid CRs per
kind) and `budget.MIXED` (100 examples of up to three invalid CRs beside three valid ones).
"""
