"""Durable workflows, one module or package per CR kind, plus diagnostics.

Workflow code is deterministic: no I/O and no clock but Temporal's. `registry.WORKFLOWS`
lists every workflow the worker registers.
"""
