"""What a RayClusterSpec rule needs to know besides the spec itself.

The same RayClusterSpec rules run on three places: a RayCluster's `spec`, a RayJob's
`spec.rayClusterSpec` and a RayService's `spec.rayClusterConfig`. KubeRay reads some inputs
from the object that *carries* the spec (its annotations, e.g. `ray.io/ft-enabled`), and a few
rules depend on which kind will own the RayCluster. `ClusterScope` bundles those inputs with
the path prefix, so every violation points into the right document.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from crds.constants import ENV_RAY_ENABLE_AUTOSCALER_V2
from crds.enums import AutoscalerVersion
from crds.messages import QUOTE_LIMIT
from crds.raycluster import RayClusterSpec
from crds.validation import templates
from crds.violations import join_path

RAYCLUSTER_KIND = "RayCluster"
RAYJOB_KIND = "RayJob"
RAYSERVICE_KIND = "RayService"

# KubeRay reads RAY_enable_autoscaler_v2 as "on" only for these two spellings.
_ENV_TRUE_VALUES = ("1", "true")


@dataclass(frozen=True)
class ClusterScope:
    """A RayClusterSpec plus where it sits and who owns the cluster it describes."""

    spec: RayClusterSpec
    path: str
    owner_kind: str = RAYCLUSTER_KIND
    annotations: Mapping[str, str] = field(default_factory=dict)

    def at(self, *parts: str | int) -> str:
        """The JSON path of a field below this spec."""
        return join_path(self.path, *parts)

    @property
    def head_template_path(self) -> str:
        """Path of the head pod template."""
        return self.at("headGroupSpec", "template")

    def worker_template_path(self, index: int) -> str:
        """Path of a worker group's pod template."""
        return self.at("workerGroupSpecs", index, "template")


def key_path(base: str, key: str) -> str:
    """A map entry, written the way Kubernetes prints it: `metadata.annotations[ray.io/x]`.

    A key longer than a quoted value is clipped like one: map keys in pod templates and
    labels are strings of any length until something validates them.
    """
    shown = key if len(key) <= QUOTE_LIMIT else key[:QUOTE_LIMIT] + "…"
    return f"{base}[{shown}]"


def is_autoscaling(spec: RayClusterSpec | None) -> bool:
    """Whether the in-tree autoscaler is on."""
    return spec is not None and spec.enable_in_tree_autoscaling is True


def is_autoscaler_v2(spec: RayClusterSpec) -> bool:
    """Whether `autoscalerOptions.version` asks for the v2 autoscaler."""
    options = spec.autoscaler_options
    return options is not None and options.version == AutoscalerVersion.V2


def head_env_enables_autoscaler_v2(spec: RayClusterSpec) -> tuple[int, str] | None:
    """(index, value) of a head env var that turns autoscaler v2 on the pre-1.4 way."""
    container = templates.ray_container(spec.head_group_spec.template)
    if container is None:
        return None
    found = templates.find_env(templates.env_vars(container), ENV_RAY_ENABLE_AUTOSCALER_V2)
    if found is None:
        return None
    index, var = found
    value = var.get("value")
    if isinstance(value, str) and value in _ENV_TRUE_VALUES:
        return index, value
    return None


def uses_autoscaler_v2(spec: RayClusterSpec) -> bool:
    """v2 requested through `autoscalerOptions.version` or the legacy head env var."""
    return is_autoscaler_v2(spec) or head_env_enables_autoscaler_v2(spec) is not None
