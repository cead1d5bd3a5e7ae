"""Loading, within bounds, the YAML and JSON documents that CRs carry in string fields.

`runtimeEnvYAML`, `serveConfigV2`, `entrypointResources` and `rayStartParams.resources` are
strings written by whoever may create a CR and parsed by the shared worker. Three things in
such a string cost far more than its length:

* YAML aliases. PyYAML shares an aliased value instead of copying it, so loading stays cheap,
  but whatever walks the result (`json.dumps` of a runtime env, pydantic, a hash) expands it:
  a 584-byte "billion laughs" document names 3×10¹⁰ strings.
* Nesting. PyYAML's composer and `json.loads` recurse, so a few thousand `[` raise
  RecursionError, which no parse-error handler catches.
* Size, for which the API server's 1.5 MiB per object is the only other limit.

Every parse of such a field goes through `load_yaml` or `load_json`, in validation as in the
activities, so the two agree: what validation accepts never blows up an activity later, and
what an activity refuses (a CR that changed after it was validated) validation refuses too.

Aliases are allowed, as in KubeRay: it reads these fields with sigs.k8s.io/yaml (go-yaml v2),
which accepts anchors and refuses "excessive aliasing" (and nesting deeper than 10000). Here
the bound is on what the document would be once every alias is expanded, counted while
composing it, before anything is built: a few hundred aliases to a shared `runtime_env` pass,
a document that doubles itself level after level does not. `kuberay-temporal validate` reads
manifest files through the same loader with wider bounds (`MANIFEST_BOUNDS`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import yaml

_KIB = 1024
_MIB = 1024 * _KIB


@dataclass(frozen=True)
class Bounds:
    """How much a document may hold.

    Attributes:
        max_bytes: Length of the text itself, UTF-8 encoded; None for no limit.
        max_expanded: Size once every alias is expanded, counted as the characters of its
            scalars plus one per scalar and two per collection (about its length as flow
            YAML or JSON), so that an alias-free document never measures much above its text.
        max_depth: Nesting levels, aliases expanded; a scalar at the top is one level.
    """

    max_bytes: int | None
    max_expanded: int
    max_depth: int


FIELD_BOUNDS = Bounds(max_bytes=256 * _KIB, max_expanded=1 * _MIB, max_depth=64)
"""For a document in a CR field: a real runtime env or Serve config is a few KiB, nested a
handful of levels. The expanded bound keeps what an activity builds from one (a container
argument, an HTTP body) to a few MB at most."""

MANIFEST_BOUNDS = Bounds(max_bytes=None, max_expanded=4 * _MIB, max_depth=100)
"""For one document of a manifest file: the API server stores at most 1.5 MiB per object."""


class PayloadError(ValueError):
    """A payload cannot be used; `str()` is the problem, phrased to follow the field's name."""


class PayloadLimitError(PayloadError):
    """A document is beyond its `Bounds`; refused before anything was expanded.

    `str()` ends with the line within the document when known.
    """

    def __init__(self, problem: str, line: int | None = None) -> None:
        self.problem, self.line = problem, line
        super().__init__(problem if line is None else f"{problem} (line {line})")


def load_yaml(text: str, bounds: Bounds = FIELD_BOUNDS) -> Any:
    """The one YAML document in `text`, as JSON-compatible data (None when empty).

    Raises:
        PayloadLimitError: The text, its expansion or its nesting is beyond `bounds`.
        yaml.YAMLError: The text is not a single valid YAML document.
    """
    _check_length(text, bounds)
    loader = _loader_for(bounds)(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def load_json(text: str, bounds: Bounds = FIELD_BOUNDS) -> Any:
    """`text` as JSON, refusing NaN and Infinity as Go's encoding/json does.

    Raises:
        PayloadLimitError: The text or its nesting is beyond `bounds`.
        ValueError: The text is not valid JSON.
    """
    _check_length(text, bounds)
    depth = _json_depth(text)
    if depth > bounds.max_depth:
        raise PayloadLimitError(f"nests deeper than {bounds.max_depth} levels")
    return json.loads(text, parse_constant=_reject_constant)


class BoundedLoader(yaml.SafeLoader):
    """PyYAML's SafeLoader that refuses, while composing, a document beyond `bounds`.

    Values come out as sigs.k8s.io/yaml leaves them for JSON: timestamps stay strings (Go's
    YAML keeps them so when decoding into an untyped value), `!!binary` is its decoded text
    and `!!set` a mapping to nulls. Limits apply per document, and anchors never cross one.
    """

    bounds: ClassVar[Bounds] = FIELD_BOUNDS

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        # Per composed node (the composer hands back the same node for every alias to it):
        # its size with aliases expanded, and its height in levels.
        self._measured: dict[int, tuple[int, int]] = {}
        self._depth = 0
        self._aliased = False

    def compose_document(self) -> yaml.Node | None:
        """Compose one document, measuring it from scratch."""
        self._measured, self._depth, self._aliased = {}, 0, False
        try:
            return super().compose_document()
        finally:
            self._measured = {}

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        """Compose a node, refusing it as soon as it is beyond `bounds`."""
        event: yaml.Event = self.peek_event()  # type: ignore[no-untyped-call]
        if isinstance(event, yaml.AliasEvent):
            node = super().compose_node(parent, index)
            if node is not None and id(node) not in self._measured:
                # PyYAML builds a cycle here; go-yaml: "anchor 'x' value contains itself".
                problem = f"uses the alias *{event.anchor} inside its own anchor"
                raise PayloadLimitError(problem, _line(event))
            self._aliased = True
            return node
        if self._depth >= self.bounds.max_depth:
            problem = f"nests deeper than {self.bounds.max_depth} levels"
            raise PayloadLimitError(problem, _line(event))
        self._depth += 1
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        if node is not None:
            self._measure(node)
        return node

    def _measure(self, node: yaml.Node) -> None:
        if isinstance(node, yaml.ScalarNode):
            size, height = len(node.value) + 1, 1
        else:
            children: list[yaml.Node] = (
                [part for pair in node.value for part in pair]
                if isinstance(node, yaml.MappingNode)
                else list(node.value)
            )
            measured = [self._measured[id(child)] for child in children]
            size = 2 + sum(child_size for child_size, _ in measured)
            height = 1 + max((child_height for _, child_height in measured), default=0)
        line = _line(node)
        if height > self.bounds.max_depth:
            raise PayloadLimitError(f"nests deeper than {self.bounds.max_depth} levels", line)
        if size > self.bounds.max_expanded:
            limit = _amount(self.bounds.max_expanded)
            if self._aliased:
                problem = f"expands to more than {limit} through its aliases (*name)"
            else:
                problem = f"holds more than {limit} of data"
            raise PayloadLimitError(problem, line)
        self._measured[id(node)] = (size, height)


def _timestamp_as_string(loader: yaml.SafeLoader, node: yaml.Node) -> str:
    return str(loader.construct_yaml_str(node))


def _binary_as_text(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> str:
    return loader.construct_yaml_binary(node).decode("utf-8", "replace")


def _set_as_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> Iterator[dict[Any, Any]]:
    return loader.construct_yaml_map(node)


def _line(item: yaml.Event | yaml.Node) -> int | None:
    mark = item.start_mark
    return None if mark is None else mark.line + 1


BoundedLoader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp_as_string)
BoundedLoader.add_constructor("tag:yaml.org,2002:binary", _binary_as_text)
BoundedLoader.add_constructor("tag:yaml.org,2002:set", _set_as_mapping)

_LOADERS: dict[Bounds, type[BoundedLoader]] = {FIELD_BOUNDS: BoundedLoader}


def _loader_for(bounds: Bounds) -> type[BoundedLoader]:
    loader = _LOADERS.get(bounds)
    if loader is None:
        loader = type("BoundedLoader", (BoundedLoader,), {"bounds": bounds})
        _LOADERS[bounds] = loader
    return loader


def _check_length(text: str, bounds: Bounds) -> None:
    if bounds.max_bytes is None:
        return
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > bounds.max_bytes:
        raise PayloadLimitError(f"is larger than {_amount(bounds.max_bytes)} ({size:,} bytes)")


# A JSON string, escapes included; what is left outside strings holds the brackets.
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_JSON_BRACKET = re.compile(r"[\[\]{}]")


def _json_depth(text: str) -> int:
    """How deeply `text` nests arrays and objects (0 for a bare value), ignoring strings."""
    depth = deepest = 0
    for bracket in _JSON_BRACKET.finditer(_JSON_STRING.sub("", text)):
        if bracket.group() in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def _reject_constant(name: str) -> Any:
    # Python's json accepts NaN and Infinity; Go's encoding/json does not.
    raise ValueError(f"{name} is not a JSON number")


def _amount(size: int) -> str:
    if size % _MIB == 0:
        return f"{size // _MIB} MiB"
    if size % _KIB == 0:
        return f"{size // _KIB} KiB"
    return f"{size:,} bytes"
