"""Bad input: property-based tests (hypothesis) over generated and mutated ray.io objects.

CI runs them at a small, derandomized size with the rest of the suite. The full size is one
command (about ten minutes on two cores):

    KUBERAY_TEMPORAL_BADINPUT_EXAMPLES=2000 .venv/bin/pytest tests/badinput -o timeout=1800

The size drives `budget.PURE` (validation, loading, the CRD schema) and `budget.WORKFLOW`
(one time-skipped workflow run per example, a twentieth of the size).
"""
