"""The watch bridge: the only way Kubernetes reaches Temporal.

It lists and watches the ray.io CRs and the objects their workflows care about, turns the
changes that matter into signals (`spec_changed`, `owned_changed`, `deleted`), and delivers
them with signal-with-start, so each CR has exactly one workflow. See `filtering` for what
matters, `queueing` for coalescing, `signalling` for delivery and `watching` for list+watch.
"""
