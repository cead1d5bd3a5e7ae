"""Building blocks shared by the three ray.io/v1 kinds.

Two kinds of data live in these models:

* ray.io fields are typed, with KubeRay's JSON names as aliases. Unknown ray.io fields are
  errors (the CRD is structural and prunes them on a real cluster, so accepting them silently
  here would hide typos).
* Embedded Kubernetes objects (pod templates, Services, env vars, resource requirements…)
  are kept as plain JSON objects, so that every field a user writes survives a load and a dump
  unchanged, including fields newer than this code. Builders work on them as dicts.

Booleans, integers and strings are strict: `suspend: "true"` is a type error, as it is for the
API server, instead of being coerced into something the user did not write.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any, Self

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    PlainSerializer,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
)
from pydantic.alias_generators import to_camel
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from crds.enums import ConditionStatus
from crds.messages import STATUS_MESSAGE_LIMIT, clipped

JSONObject = dict[str, Any]
"""An embedded Kubernetes object kept verbatim (pod template, Service, env var…)."""


@dataclass(frozen=True)
class GoInt:
    """The Go integer type of a field in KubeRay's API: its width decides the values it holds.

    It puts `format: int32` (or `int64`) into the CRD, as KubeRay's CRDs have it, so the API
    server refuses a value out of range; validation checks the same range for objects that
    did not pass through such a schema (`crds.validation.integers`).
    """

    bits: int

    @property
    def low(self) -> int:
        """The smallest value."""
        return -(1 << (self.bits - 1))

    @property
    def high(self) -> int:
        """The largest value."""
        return (1 << (self.bits - 1)) - 1

    def __get_pydantic_json_schema__(
        self, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        schema = handler(core_schema)
        schema["format"] = f"int{self.bits}"
        return schema


Bool = StrictBool
Int = StrictInt
Int32 = Annotated[StrictInt, GoInt(32)]
"""A Go `int32` of KubeRay's API (replicas, seconds, percentages…)."""
Int64 = Annotated[StrictInt, GoInt(64)]
"""A Go `int64` of KubeRay's API (observedGeneration)."""
Str = StrictStr
Number = StrictInt | StrictFloat
IntOrString = StrictInt | StrictStr
"""Kubernetes int-or-string (quantities such as `desiredCPU`, ports by number or name)."""
StringMap = dict[StrictStr, StrictStr]


def format_time(value: datetime) -> str:
    """Render a time the way metav1.Time does: UTC, second precision, a `Z` suffix."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


Time = Annotated[AwareDatetime, PlainSerializer(format_time, return_type=str)]
"""metav1.Time: parsed into an aware datetime, written as RFC 3339 with seconds."""


class RayModel(BaseModel):
    """Base of every ray.io model: camelCase on the wire, strict about unknown fields."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="forbid",
        use_enum_values=False,
    )

    def to_json_dict(self) -> JSONObject:
        """Dump the fields that were given or set, under their JSON names.

        None means "absent" (the API server never stores a null), so it is left out; inside
        embedded Kubernetes objects every value is kept as written.
        """
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True, exclude_none=True)

    @classmethod
    def from_json_dict(cls, data: JSONObject) -> Self:
        """Load from the JSON form (as read from YAML or the API server)."""
        return cls.model_validate(data)


class ObjectMeta(RayModel):
    """The metav1.ObjectMeta fields the controller reads; anything else is preserved."""

    model_config = ConfigDict(extra="allow")

    name: Str | None = None
    generate_name: Str | None = None
    namespace: Str | None = None
    uid: Str | None = None
    resource_version: Str | None = None
    generation: Int | None = None
    creation_timestamp: Str | None = None
    deletion_timestamp: Str | None = None
    labels: StringMap | None = None
    annotations: StringMap | None = None
    finalizers: list[Str] | None = None
    owner_references: list[JSONObject] | None = None


def _status_message(text: str) -> str:
    return clipped(text, STATUS_MESSAGE_LIMIT)


StatusMessage = Annotated[Str, AfterValidator(_status_message)]
"""A message in a status, clipped to the length KubeRay's CRDs allow a condition's."""


class Condition(RayModel):
    """metav1.Condition."""

    type: Str
    status: ConditionStatus
    reason: Str
    message: StatusMessage = ""
    last_transition_time: Time
    observed_generation: Int64 | None = None


class RayObject(RayModel):
    """Fields every top-level ray.io object has."""

    api_version: Str = Field(default="ray.io/v1")
    kind: Str
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)

    @property
    def name(self) -> str:
        """`metadata.name`, or "" when the object has none yet."""
        return self.metadata.name or ""

    @property
    def namespace(self) -> str:
        """`metadata.namespace`, defaulting to "default" as kubectl does."""
        return self.metadata.namespace or "default"

    @property
    def labels(self) -> dict[str, str]:
        """`metadata.labels`, never None."""
        return dict(self.metadata.labels or {})

    @property
    def annotations(self) -> dict[str, str]:
        """`metadata.annotations`, never None."""
        return dict(self.metadata.annotations or {})
