"""The Kubernetes client layer: the only code here that speaks the Kubernetes REST API.

`client` is the JSON client (typed resources, names checked before they reach a URL),
`errors` the error hierarchy its answers are translated into, `decoding` the depth-safe
decoder of its answers, `vocabulary` the API's closed sets of values (which workflows may
import), `spans` the client spans of its calls. The bridge, the worker, the CLI and every
activity use it; it uses nothing else of the project but `crds`.
"""
