"""From `rayStartParams` and container resources to the `ray start` command line.

The generated command is visible to users (container args and `KUBERAY_GEN_RAY_START_CMD`),
and people script around it, so flags, their order and even KubeRay's spacing are reproduced
(`pod.go` setMissingRayStartParams, generateRayStartCommand, convertParamMap,
updateRayStartParams*).
"""

from __future__ import annotations

import contextlib
import json
import re
from decimal import Decimal
from typing import Any

from crds import constants as k
from crds.common import JSONObject
from crds.enums import RayNodeType
from crds.payloads import PayloadError
from crds.quantities import ZERO, Quantity, try_parse_quantity
from crds.validation import formats

# `ray start` flags that take an explicit boolean: "false" must reach Ray instead of dropping.
EXPLICIT_BOOLEAN_FLAGS = frozenset({"log-color", "include-dashboard", "include-log-monitor"})
# Container resources Ray knows under another name; they go into `--resources`.
ACCELERATOR_RAY_NAMES = {"aws.amazon.com/neuroncore": "neuron_cores", "google.com/tpu": "TPU"}
_MIG_GPU = re.compile(r"nvidia\.com/mig-\d+g\.\d+gb$")


class InvalidResourcesError(ValueError):
    """`rayStartParams.resources` is not a JSON object of numbers."""


def is_gpu_resource(name: str) -> bool:
    """Whether a resource name counts as GPUs (`*gpu`, or an NVIDIA MIG slice)."""
    return name.endswith("gpu") or _MIG_GPU.search(name) is not None


def head_port(params: dict[str, str] | None) -> str:
    """The GCS port workers connect to: `port` from the head's rayStartParams, else 6379."""
    return (params or {}).get("port", str(k.PORT_GCS_SERVER))


def apply_group_resources(params: dict[str, str], resources: dict[str, str] | None) -> None:
    """Let a group's top-level `resources` override the matching start params.

    cpu, memory and GPU names become `num-cpus`, `memory` and `num-gpus`; every other name
    replaces `--resources` as a whole. Unparseable quantities are skipped.
    """
    custom: dict[str, float] = {}
    for name, text in sorted((resources or {}).items()):
        quantity = try_parse_quantity(text)
        if quantity is None:
            continue
        lowered = name.lower()
        if lowered == "cpu":
            params["num-cpus"] = str(quantity.value())
        elif lowered == "memory":
            params["memory"] = str(quantity.value())
        elif is_gpu_resource(lowered):
            params["num-gpus"] = str(quantity.value())
        else:
            custom[name] = quantity.as_float()
    if custom:
        params["resources"] = f"'{go_json_numbers(custom)}'"


def apply_group_labels(params: dict[str, str], labels: dict[str, str] | None) -> None:
    """Turn a group's top-level `labels` into `--labels k=v,...` (sorted by key)."""
    if labels:
        params["labels"] = ",".join(f"{key}={labels[key]}" for key in sorted(labels))


def add_missing_params(
    params: dict[str, str], node_type: RayNodeType, port: str, head_fqdn: str
) -> None:
    """Add the flags KubeRay always wants (address, dashboard host, metrics, block, agent port)."""
    if node_type is RayNodeType.WORKER:
        params.setdefault("address", f"{head_fqdn}:{port}")
    else:
        # Ray's default dashboard host is localhost, unreachable from outside the pod.
        params.setdefault("dashboard-host", "0.0.0.0")
    params.setdefault("metrics-export-port", str(k.PORT_METRICS))
    # The container must stay up as long as Ray does.
    params["block"] = "true"
    # The health probes need to know where the agent listens.
    params.setdefault("dashboard-agent-listen-port", str(k.PORT_DASHBOARD_AGENT))


def add_container_resources(params: dict[str, str], resources: JSONObject | None) -> None:
    """Derive `num-cpus`, `memory`, `num-gpus` and accelerator resources from the container."""
    limits: dict[str, Any] = dict((resources or {}).get("limits") or {})
    requests: dict[str, Any] = dict((resources or {}).get("requests") or {})
    if "num-cpus" not in params:
        cpu = _quantity(limits.get("cpu"))
        if cpu.is_zero:
            cpu = _quantity(requests.get("cpu"))
        if not cpu.is_zero:
            params["num-cpus"] = str(cpu.value())
    if "memory" not in params:
        memory = _quantity(limits.get("memory"))
        if not memory.is_zero:
            params["memory"] = str(memory.value())
    if limits:
        # On unreadable `resources` KubeRay logs and leaves the params as the user wrote them.
        with contextlib.suppress(InvalidResourcesError):
            _add_accelerators(params, limits)


def _add_accelerators(params: dict[str, str], limits: dict[str, Any]) -> None:
    custom = parse_resources_param(params.get("resources"))
    accelerator_done = any(name in custom for name in ACCELERATOR_RAY_NAMES.values())
    # Sorted, so that the first accelerator found is always the same one.
    for name in sorted(limits):
        quantity = _quantity(limits[name])
        if quantity.is_zero:
            continue
        if "num-gpus" not in params and is_gpu_resource(name):
            params["num-gpus"] = str(quantity.value())
        ray_name = ACCELERATOR_RAY_NAMES.get(name)
        if not accelerator_done and ray_name is not None:
            if ray_name not in custom:
                custom[ray_name] = quantity.as_float()
                params["resources"] = f"'{go_json_numbers(custom)}'"
            accelerator_done = True


def _quantity(value: object) -> Quantity:
    return try_parse_quantity(value) or ZERO


def parse_resources_param(text: str | None) -> dict[str, float]:
    """Read `rayStartParams.resources`, tolerating the quotes users wrap it in."""
    if text is None:
        return {}
    try:
        # Bounded like every payload of a CR: deep nesting must not exhaust the stack.
        return formats.json_number_map(text.strip("'\"` "))
    except PayloadError as err:
        raise InvalidResourcesError(str(err)) from None


def go_json_numbers(values: dict[str, float]) -> str:
    """Render a map of floats the way Go's encoding/json does (sorted keys, `4` not `4.0`)."""
    items = (f"{_go_json_key(key)}:{go_float(values[key])}" for key in sorted(values))
    return "{" + ",".join(items) + "}"


def _go_json_key(key: str) -> str:
    encoded = json.dumps(key, ensure_ascii=False)
    return encoded.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def go_float(value: float) -> str:
    """A float64 as Go's encoding/json writes it: shortest digits, exponent only when extreme."""
    magnitude = abs(value)
    if magnitude != 0 and (magnitude < 1e-6 or magnitude >= 1e21):
        text = repr(value).replace("e-0", "e-").replace("e+0", "e+")
        return text if "e" in text else format(value, "e")
    text = format(Decimal(repr(value)), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def render_flags(params: dict[str, str]) -> str:
    """KubeRay's flag string: sorted keys, ` --key=value `, bare ` --key ` for "true"."""
    parts: list[str] = []
    for key in sorted(params):
        value = params[key]
        if value.lower() in ("true", "false") and key not in EXPLICIT_BOOLEAN_FLAGS:
            if value.lower() == "true":
                parts.append(f" --{key} ")
        else:
            parts.append(f" --{key}={value} ")
    return "".join(parts)


def ray_start_command(node_type: RayNodeType, params: dict[str, str]) -> str:
    """`ray start --head <flags>` or `ray start <flags>`, spaced exactly like KubeRay."""
    if node_type is RayNodeType.HEAD:
        return f"ray start --head {render_flags(params)}"
    return f"ray start {render_flags(params)}"
