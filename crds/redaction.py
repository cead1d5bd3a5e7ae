"""Keep secret values out of workflow histories.

A spec the workflow keeps (and Temporal stores in its history, readable by anyone with access
to the Temporal database or UI unless payloads are encrypted) must not carry a secret the user
wrote inline. Workflows decide on the redacted spec; activities build pods from the CR they
read, so the real value only ever goes from the API server to the pod it belongs to.

What counts as a secret, so that the rule can be checked against a spec by eye:

* What KubeRay treats as a Redis credential: `gcsFaultToleranceOptions.redisPassword.value`
  and `redisUsername.value`, the legacy `redis-password` and `redis-username` rayStartParams
  of the head and of every worker group, and the password in the userinfo of a URL
  (`redis://user:password@host`, which `redisAddress` and the Redis cleanup Job accept).
* Inline env values (`env[].value`, never `valueFrom`, which only names a Secret) whose name
  says it holds a secret: it contains PASSWORD, PASSWD, SECRET or CREDENTIAL, has TOKEN or
  PASS as one of its `_`-separated words (so `RAY_AUTH_TOKEN` is one and
  `TOKENIZERS_PARALLELISM` is not), ends in the word KEY (`OPENAI_API_KEY`) or in
  CONNECTION_STRING (Azure's carries the account key), or is `REDIS_USERNAME`. That covers
  `REDIS_PASSWORD` and `RAY_AUTH_TOKEN`, the names KubeRay itself uses. Any other env value
  loses only the password of a URL it contains. Env lists of every container and init
  container of every pod template (head, worker groups, the RayJob submitter), of
  `autoscalerOptions` and of the history-server collector are covered.

Not covered: secrets in command lines, `args`, `runtimeEnvYAML` or `entrypoint`, and env names
that do not say what they hold. Use `valueFrom.secretKeyRef` for those.

A redacted value stays a non-empty string and an empty one stays empty, so every rule that
asks "is it set?" decides the same on the redacted spec; no workflow decision reads a secret's
value. The hashes that detect spec changes (`recreate_hash`, `goal_hash`) are computed by the
activities from the real spec, as KubeRay computes them, so changing only a password is still a
change. The history keeps those hashes (KubeRay puts the same ones in annotations), so a weak
inline password could be confirmed by guessing against them: one more reason for `valueFrom`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

from crds.common import JSONObject
from crds.constants import ENV_REDIS_USERNAME
from crds.raycluster import HeadGroupSpec, RayClusterSpec, WorkerGroupSpec
from crds.rayjob import RayJobSpec

REDACTED = "<redacted>"
_SHORTEST_REDACTED = 4

_SECRET_START_PARAMS = frozenset({"redis-password", "redis-username"})
_SECRET_SUBSTRINGS = ("PASSWORD", "PASSWD", "SECRET", "CREDENTIAL")
_SECRET_WORDS = frozenset({"TOKEN", "PASS"})
_SECRET_ENDINGS = (("KEY",), ("CONNECTION", "STRING"))
_CREDENTIAL_ENV = frozenset({ENV_REDIS_USERNAME})
# scheme://user:password@ — the password runs to the last "@" before the path, as URL
# parsers read it, so an unescaped "@" inside it does not leave its tail behind.
_URL_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^/?#@:\s]*):[^/?#\s]+@")
_SECRET_PATH_ENDINGS = (
    "redisPassword.value",
    "redisUsername.value",
    *(f"rayStartParams.{name}" for name in sorted(_SECRET_START_PARAMS)),
)
_TEMPLATE_CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")


def is_secret_env_name(name: str) -> bool:
    """Whether an env var's name says that its value is a secret (see the module docstring)."""
    upper = name.upper()
    if upper in _CREDENTIAL_ENV or any(part in upper for part in _SECRET_SUBSTRINGS):
        return True
    words = tuple(word for word in re.split(r"[^A-Z0-9]+", upper) if word)
    if _SECRET_WORDS.intersection(words):
        return True
    return any(words[-len(ending) :] == ending for ending in _SECRET_ENDINGS)


def is_secret_path(path: str) -> bool:
    """Whether a field path (`spec.headGroupSpec.rayStartParams.redis-password`) holds a secret.

    For messages about a field's value: such a message must not quote what was written there.
    """
    return path.endswith(_SECRET_PATH_ENDINGS)


def redacted_url_passwords(text: str) -> str:
    """`text` with the password of every `scheme://user:password@` in it replaced."""
    return _URL_PASSWORD.sub(rf"\g<head>:{REDACTED}@", text)


def without_values(text: str, values: Iterable[str]) -> str:
    """`text` with each of `values` of four characters or more replaced by `REDACTED`.

    For an error that may quote what an object holds (an API server's refusal quotes the
    value it refuses): given the object's strings, none of them is quoted. Shorter values are
    left, as they would match too much of the text and hide little.
    """
    for value in sorted({v for v in values if len(v) >= _SHORTEST_REDACTED}, key=len, reverse=True):
        text = text.replace(value, REDACTED)
    return text


def strings_in(data: Any) -> Iterator[str]:
    """Every string value (not key) anywhere in a JSON document."""
    if isinstance(data, dict):
        for value in data.values():
            yield from strings_in(value)
    elif isinstance(data, list):
        for item in data:
            yield from strings_in(item)
    elif isinstance(data, str):
        yield data


def redacted_cluster_spec(spec: RayClusterSpec) -> RayClusterSpec:
    """A copy of the spec with every inline secret value replaced by `REDACTED`."""
    copy = spec.model_copy(deep=True)
    _redact_cluster(copy)
    return copy


def redacted_job_spec(spec: RayJobSpec) -> RayJobSpec:
    """A copy of a RayJob spec: its cluster spec and its submitter template redacted."""
    copy = spec.model_copy(deep=True)
    if copy.ray_cluster_spec is not None:
        _redact_cluster(copy.ray_cluster_spec)
    if copy.submitter_pod_template is not None:
        _redact_template(copy.submitter_pod_template)
    return copy


def _redact_cluster(spec: RayClusterSpec) -> None:
    options = spec.gcs_fault_tolerance_options
    if options is not None:
        for credential in (options.redis_username, options.redis_password):
            if credential is not None and credential.value:
                credential.value = REDACTED
        if options.redis_address:
            options.redis_address = redacted_url_passwords(options.redis_address)
    groups: list[HeadGroupSpec | WorkerGroupSpec] = [spec.head_group_spec]
    groups += spec.worker_group_specs or []
    for group in groups:
        params = group.ray_start_params or {}
        for name in _SECRET_START_PARAMS.intersection(params):
            if params[name]:
                params[name] = REDACTED
        _redact_template(group.template)
    if spec.autoscaler_options is not None:
        _redact_env(spec.autoscaler_options.env)
    history = spec.history_server_options
    if history is not None and history.collector_options is not None:
        _redact_env(history.collector_options.env)


def _redact_template(template: JSONObject) -> None:
    pod_spec = template.get("spec")
    if not isinstance(pod_spec, dict):
        return
    for key in _TEMPLATE_CONTAINER_LISTS:
        containers = pod_spec.get(key)
        for container in containers if isinstance(containers, list) else []:
            if isinstance(container, dict):
                _redact_env(container.get("env"))


def _redact_env(env: Any) -> None:
    """Redact, in place, the values of a (possibly malformed) Kubernetes env list."""
    for var in env if isinstance(env, list) else []:
        if not isinstance(var, dict):
            continue
        name, value = var.get("name"), var.get("value")
        if value is None or value == "":
            continue
        if isinstance(name, str) and is_secret_env_name(name):
            var["value"] = REDACTED
        elif isinstance(value, str):
            var["value"] = redacted_url_passwords(value)
