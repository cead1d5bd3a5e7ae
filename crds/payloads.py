"""Loading, within bounds of size and of time, the YAML and JSON documents CRs carry in strings.

`runtimeEnvYAML`, `serveConfigV2`, `entrypointResources` and `rayStartParams.resources` are
strings written by whoever may create a CR and parsed by the shared worker: by validation in
the workflow task (past 2 s the SDK's deadlock detector fails the task, and every retry pays
again) and by activities on the worker's event loop (where every other activity and `/healthz`
wait meanwhile). What such a string costs is not its length:

* YAML aliases. PyYAML shares an aliased value instead of copying it, so loading stays cheap,
  but whatever walks the result (`json.dumps` of a runtime env, pydantic, a hash) expands it:
  a 584-byte "billion laughs" document names 3×10¹⁰ strings.
* Nodes. Composing and constructing cost per node, not per byte: `[1,1,1,…]` holds a node
  every two bytes, and PyYAML's pure-Python loader took 7 s for the 125,000 that fit in
  256 KiB.
* Nesting. PyYAML's composers (libyaml's included) and `json.loads` recurse, so a few thousand
  `[` raise RecursionError, which no parse-error handler catches, or crash the process.
* Some single scalars: a sexagesimal integer (`1:0:0:…`, YAML 1.1) costs quadratic time in its
  length (2 s for 240 KB), and an integer past 4,300 digits cannot be written back as text
  (`json.dumps` raises). Integer keys past 64 bits can all share one hash, making a mapping
  of them quadratic to build.
* Size, for which the API server's 1.5 MiB per object is the only other limit.

Every parse of such a field goes through `load_yaml` or `load_json`, in validation as in the
activities, so the two agree: what validation accepts never blows up an activity later, and
what an activity refuses (a CR that changed after it was validated) validation refuses too.

How YAML is read: libyaml (PyYAML's `CParser`; PyYAML's wheels all carry it) turns the text
into events, one at a time. Only its event stream is used, never its composer, which recurses
in C. The events become PyYAML's nodes here, in Python and without recursion, and each node its
value as soon as it is complete, exactly as PyYAML's Composer and SafeConstructor make them
(tests compare the two on generated documents), counting as it goes with aliases expanded: the
document is refused at the event that crosses a bound, so nothing is built past it. Where
libyaml's scanner and PyYAML's pure-Python one disagree, it is on what they accept, never on
values: libyaml takes tabs as separators and inside plain scalars (`a: b<TAB>c`) and a comment
right after a block scalar's indicator (`|#`), as go-yaml (sigs.k8s.io/yaml) does and PyYAML's
scanner did not; it takes `?` inside a plain scalar of a flow collection (`[a?]`), which go-yaml
and PyYAML refuse, and refuses a flow entry with an empty value (`[a:]`), which PyYAML took as
`[{a: null}]` and go-yaml as `["a:"]`. Without libyaml (a PyYAML built from source without it),
PyYAML's pure-Python parser makes the events: the same documents, several times slower.

Aliases are allowed, as in KubeRay: it reads these fields with sigs.k8s.io/yaml (go-yaml v2),
which accepts anchors and refuses "excessive aliasing" (and nesting deeper than 10000) but
counts nodes in no other way. Here the bounds are on what the document would be once every
alias is expanded: a few hundred aliases to a shared `runtime_env` pass, a document that
doubles itself level after level does not. `kuberay-temporal validate` reads manifest files
through the same loader with wider bounds (`MANIFEST_BOUNDS`).
"""

from __future__ import annotations

import contextlib
import gc
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import yaml
from yaml.composer import ComposerError
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.events import (
    AliasEvent,
    DocumentStartEvent,
    Event,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
    StreamStartEvent,
)
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.reader import ReaderError
from yaml.resolver import Resolver

_KIB = 1024
_MIB = 1024 * _KIB


@dataclass(frozen=True)
class Bounds:
    """How much a document may hold.

    Attributes:
        max_bytes: Length of the text itself, UTF-8 encoded; None for no limit.
        max_nodes: Scalars and collections (a mapping's keys count, as its values do) once
            every alias is expanded: what composing, constructing and anything that walks
            the result later cost in proportion to.
        max_expanded: Size once every alias is expanded, counted as the characters of its
            scalars plus one per scalar and two per collection (about its length as flow
            YAML or JSON), so that an alias-free document never measures much above its text.
        max_depth: Nesting levels, aliases expanded; a scalar at the top is one level.
    """

    max_bytes: int | None
    max_nodes: int
    max_expanded: int
    max_depth: int


FIELD_NODES = 25_000
"""Keys and values a document in a CR field may hold, aliases expanded.

From what real documents need: the largest Serve config among KubeRay's samples
(`ray-service.sample.yaml`, two applications with their deployments and options) holds 110,
so about 55 per application: one of 50 applications holds under 3,000. A runtime env with 500
pip requirements and 500 env vars holds about 1,500. 25,000 is nine times the first and
sixteen times the second. From what it costs: the slowest document it lets through, of every
shape `benchmarks/payload_bounds.py` tries (flow and block collections, empty ones, keys,
aliases, merges, tags, the deepest nesting), validates in 0.11 s at most on the 2-core machine
of the README's figures, against 7 s for the 125,000 nodes of `[1,1,…]` that fit in 256 KiB
before this bound. KubeRay has no such bound: a document of more is valid there and refused here."""

FIELD_BOUNDS = Bounds(
    max_bytes=256 * _KIB, max_nodes=FIELD_NODES, max_expanded=1 * _MIB, max_depth=64
)
"""For a document in a CR field: a real runtime env or Serve config is a few KiB, nested a
handful of levels. The expanded bound keeps what an activity builds from one (a container
argument, an HTTP body) to a few MB at most."""

MANIFEST_BOUNDS = Bounds(max_bytes=None, max_nodes=1_000_000, max_expanded=4 * _MIB, max_depth=100)
"""For one document of a manifest file: the API server stores at most 1.5 MiB per object
(at most about 800,000 keys and values written as densely as JSON allows), and
`kuberay-temporal validate` is a command, not the shared worker."""

MAX_INT_DIGITS = 4300
"""Python's default limit for converting an integer to text (`sys.get_int_max_str_digits`):
past it `json.dumps` and `str()` raise, so no consumer could use such a number."""

_INT_LIMIT = 10**MAX_INT_DIGITS
_INT_KEY_RANGE = range(-(2**63), 2**64)
"""Integer keys a mapping may have: Go's int64 and uint64. Integers beyond can all share one
hash (Python hashes them modulo 2⁶¹−1), and 10,000 such keys make a dict take seconds to
build; go-yaml reads such a key as a string anyway."""


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
        PayloadLimitError: The text, its node count, its expansion or its nesting is beyond
            `bounds`, or it holds an integer too large to use.
        yaml.YAMLError: The text is not a single valid YAML document.
    """
    _check_length(text, bounds)
    events = _events(text)
    try:
        _expect(events, StreamStartEvent)
        if isinstance(events.peek_event(), StreamEndEvent):
            return None
        with collector_paused():
            root, value = _Loader(events, bounds).document()
        if not isinstance(events.peek_event(), StreamEndEvent):
            event = events.get_event()
            raise ComposerError(
                "expected a single document in the stream",
                root.start_mark,
                "but found another document",
                event.start_mark,
            )
        return value
    except yaml.MarkedYAMLError as err:
        raise _as_limit(err, bounds) from None
    finally:
        events.dispose()


def load_yaml_documents(text: str, bounds: Bounds = MANIFEST_BOUNDS) -> Iterator[tuple[int, Any]]:
    """Every YAML document in `text`, with the line its content starts on; bounds per document.

    An empty document (`---` and nothing, or only comments) comes back as None.

    Raises:
        PayloadLimitError: A document is beyond `bounds` (see `load_yaml`).
        yaml.YAMLError: The text is not valid YAML.
    """
    _check_length(text, bounds)
    events = _events(text)
    try:
        _expect(events, StreamStartEvent)
        while not isinstance(events.peek_event(), StreamEndEvent):
            with collector_paused():
                root, value = _Loader(events, bounds).document()
            yield root.start_mark.line + 1, value
    except yaml.MarkedYAMLError as err:
        raise _as_limit(err, bounds) from None
    finally:
        events.dispose()


def load_json(text: str, bounds: Bounds = FIELD_BOUNDS) -> Any:
    """`text` as JSON, refusing NaN and Infinity as Go's encoding/json does.

    Raises:
        PayloadLimitError: The text, its nesting or its node count is beyond `bounds`.
        ValueError: The text is not valid JSON.
    """
    _check_length(text, bounds)
    _check_json_shape(text, bounds)
    return json.loads(text, parse_int=_json_int, parse_constant=_reject_constant)


# --- events -----------------------------------------------------------------------------------


class PythonEvents(yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser):
    """PyYAML's pure-Python parser on its own: text in, events out."""

    def __init__(self, stream: str) -> None:
        yaml.reader.Reader.__init__(self, stream)
        yaml.scanner.Scanner.__init__(self)
        yaml.parser.Parser.__init__(self)


CParser: Callable[[str], Any] | None
"""libyaml's parser, when PyYAML has it."""
try:
    from yaml._yaml import CParser
except ImportError:  # pragma: no cover - PyYAML's wheels all carry libyaml
    CParser = None

HAS_LIBYAML = CParser is not None
"""Whether events come from libyaml (else from `PythonEvents`, several times slower)."""


def _events(text: str, parser: Callable[[str], Any] | None = None) -> Any:
    """A parser of `text`: libyaml's when PyYAML has it, else PyYAML's own (or `parser`)."""
    chosen: Callable[[str], Any] = parser or CParser or PythonEvents
    if chosen is CParser:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as err:
            # A lone surrogate: libyaml's parser would raise UnicodeEncodeError, PyYAML's
            # reader says what it always said.
            raise ReaderError(
                "<unicode string>",
                err.start,
                ord(text[err.start]),
                "unicode",
                "special characters are not allowed",
            ) from None
    return chosen(text)


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while a large structure is built.

    Building allocates objects that are all kept to the end; the collector, triggered every
    700 allocations, would walk them again and again (a quarter of the time of a 25,000-node
    document, two thirds of `json.loads` of a 1.5 MiB object). Nothing built meanwhile is
    garbage before it is done. The collector is switched back on only if it was on: a thread
    that paused it meanwhile finds it on or off, and at worst builds with it on.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _as_limit(err: yaml.MarkedYAMLError, bounds: Bounds) -> Exception:
    """`err`, or ours if it is libyaml's own bound on nesting.

    libyaml refuses 1,000 flow levels, which it can meet while it looks ahead for a key before
    the composer has seen the 65th: the document is refused in the same words either way.
    """
    if err.problem == "exceeded maximum nesting depth":
        mark = err.problem_mark
        problem = f"nests deeper than {bounds.max_depth} levels"
        return PayloadLimitError(problem, None if mark is None else mark.line + 1)
    return err


def _expect(events: Any, kind: type[Event]) -> Event:
    event = events.get_event()
    assert isinstance(event, kind), f"expected {kind.__name__}, got {event}"
    return event


# --- composing and constructing -----------------------------------------------------------------

_STR = "tag:yaml.org,2002:str"
_SEQ = Resolver.DEFAULT_SEQUENCE_TAG
_MAP = Resolver.DEFAULT_MAPPING_TAG
_MERGE = "tag:yaml.org,2002:merge"
_VALUE = "tag:yaml.org,2002:value"
_MAPPING_TAGS = frozenset({_MAP, "tag:yaml.org,2002:set"})
_PAIRS_TAGS = frozenset({"tag:yaml.org,2002:omap", "tag:yaml.org,2002:pairs"})
_SPECIAL_KEYS = frozenset({_MERGE, _VALUE})
_PLAIN_TAGS = _MAPPING_TAGS | _PAIRS_TAGS | {_SEQ}

# PyYAML's implicit resolvers by first character ("" for the empty scalar), each list
# followed by those for any character, as `Resolver.resolve` tries them.
_WILDCARD: list[tuple[str, re.Pattern[str]]] = list(Resolver.yaml_implicit_resolvers.get(None, []))
_IMPLICIT: dict[str, list[tuple[str, re.Pattern[str]]]] = {
    first: [*resolvers, *_WILDCARD]
    for first, resolvers in Resolver.yaml_implicit_resolvers.items()
    if first is not None
}


class _Open:
    """A collection being composed."""

    __slots__ = ("anchor", "chars", "deepest", "is_map", "items", "key", "merges", "node", "nodes")

    def __init__(self, node: Node, anchor: str | None, nodes: int, chars: int, depth: int):
        self.node, self.items, self.anchor = node, node.value, anchor
        self.is_map = type(node) is MappingNode
        self.key: Node | None = None  # a mapping's key, waiting for its value
        self.merges = False  # whether a key is `<<` or `=`, for SafeConstructor.flatten_mapping
        self.nodes, self.chars = nodes, chars  # the document's counts before this node
        self.deepest = depth  # its own level, until something deeper is added


class _Loader(SafeConstructor):
    """PyYAML's Composer and SafeConstructor in one pass, without recursion, within `bounds`.

    Events become PyYAML's nodes exactly as its Composer makes them, and each node its value
    as soon as it is complete (children first), exactly as SafeConstructor makes it: plain
    mappings (merges included), lists and scalars here, every other node (`!!omap`, tags on
    the wrong kind of node, unknown tags) by SafeConstructor's own code, which finds the
    children already built in its memo. A value that cannot be built (`!!int abc`) fails only
    once something that PyYAML would build uses it, so the same documents fail as with PyYAML.

    Counts run over the whole document, an alias adding everything its anchor holds, so the
    document is refused at the event that crosses a bound, whatever its shape.

    Values come out as sigs.k8s.io/yaml leaves them for JSON: timestamps stay strings (Go's
    YAML keeps them so when decoding into an untyped value), `!!binary` is its decoded text and
    `!!set` a mapping to nulls. A scalar its tag cannot read (`!!int abc`, `0x_`) is a
    ConstructorError, where PyYAML raised ValueError or KeyError.
    """

    def __init__(self, events: Any, bounds: Bounds) -> None:
        super().__init__()
        self.events, self.bounds = events, bounds
        self.anchors: dict[str, Node] = {}
        # Per complete anchor: its nodes and characters, aliases expanded, and its height.
        self.measured: dict[str, tuple[int, int, int]] = {}
        self.failed: dict[Node, Exception] = {}
        self.nodes = self.chars = 0
        self.aliased = False

    def document(self) -> tuple[Node, Any]:
        """Compose and construct the next document of the stream (its start event is next).

        Returns:
            The document's root node and its value.
        """
        _expect(self.events, DocumentStartEvent)
        # Locals: this loop runs once per event, and is most of what loading costs.
        get_event = self.events.get_event
        bounds = self.bounds
        max_depth, max_nodes, max_chars = bounds.max_depth, bounds.max_nodes, bounds.max_expanded
        built = self.constructed_objects
        resolvers_of, wildcard = _IMPLICIT.get, _WILDCARD
        stack: list[_Open] = []
        parent: _Open | None = None
        while True:
            event = get_event()
            kind = type(event)
            depth = len(stack) + 1
            node: Node
            if kind is ScalarEvent:
                value, tag = event.value, event.tag
                if (tag is None and event.implicit[0]) or tag == "!":
                    # PyYAML's Resolver.resolve. An empty scalar tagged "!" is plain to
                    # PyYAML's parser, quoted to libyaml's: read it as PyYAML did.
                    tag = _STR
                    for resolved, regexp in resolvers_of(value[:1], wildcard):
                        if regexp.match(value):
                            tag = resolved
                            break
                elif tag is None:
                    tag = _STR
                node = ScalarNode(tag, value, event.start_mark, event.end_mark, event.style)
                self.nodes += 1
                self.chars += len(value) + 1
                if self.nodes > max_nodes or self.chars > max_chars:
                    self._beyond(event)
                if event.anchor is not None:
                    self._anchor(event, node, (1, len(value) + 1, 1))
                if tag == _STR:
                    built[node] = value
                elif tag == _VALUE and parent is not None and parent.is_map and parent.key is None:
                    built[node] = "="  # a key, as SafeConstructor.flatten_mapping reads it
                elif tag == _MERGE and parent is not None and parent.is_map and parent.key is None:
                    # A merge key, which SafeConstructor.flatten_mapping takes out unbuilt.
                    self.failed[node] = _undefined(node)
                else:
                    self._scalar(node, stack)
            elif kind is AliasEvent:
                node, height = self._alias(event)
                depth += height - 1
            elif kind is SequenceStartEvent or kind is MappingStartEvent:
                if depth > max_depth:
                    raise PayloadLimitError(f"nests deeper than {max_depth} levels", _line(event))
                tag = event.tag
                if kind is SequenceStartEvent:
                    tag = _SEQ if tag is None or tag == "!" else tag
                    node = SequenceNode(tag, [], event.start_mark, None, event.flow_style)
                else:
                    tag = _MAP if tag is None or tag == "!" else tag
                    node = MappingNode(tag, [], event.start_mark, None, event.flow_style)
                if event.anchor is not None:
                    self._anchor(event, node, None)
                parent = _Open(node, event.anchor, self.nodes, self.chars, depth)
                stack.append(parent)
                self.nodes += 1
                self.chars += 2
                if self.nodes > max_nodes or self.chars > max_chars:
                    self._beyond(event)
                continue
            elif kind is SequenceEndEvent or kind is MappingEndEvent:
                done = stack.pop()
                parent = stack[-1] if stack else None
                node = done.node
                node.end_mark = event.end_mark
                depth = done.deepest
                if done.anchor is not None:
                    self.measured[done.anchor] = (
                        self.nodes - done.nodes,
                        self.chars - done.chars,
                        done.deepest - len(stack),
                    )
                items = done.items
                try:
                    # The plain ones here, the rest in _collection.
                    if kind is SequenceEndEvent and node.tag == _SEQ:
                        built[node] = [built[item] for item in items]
                    elif kind is MappingEndEvent and node.tag == _MAP and not done.merges:
                        mapping = {}
                        for key_node, value_node in items:
                            key = built[key_node]
                            if type(key) is not str:
                                _check_key(node, key_node, key)
                            mapping[key] = built[value_node]
                        built[node] = mapping
                    else:
                        self._collection(done)
                except KeyError:  # a child failed
                    self._fail(node, stack, self._failed_child(node))
                except _FAILURES as err:
                    self._fail(node, stack, err)
            else:  # pragma: no cover - a parser sends nothing else inside a document
                raise ComposerError(None, None, f"unexpected {event}", event.start_mark)
            if depth > max_depth:
                raise PayloadLimitError(f"nests deeper than {max_depth} levels", _line(event))
            if parent is None:
                break
            if depth > parent.deepest:
                parent.deepest = depth
            if not parent.is_map:
                parent.items.append(node)
            elif parent.key is None:
                parent.key = node
                if node.tag in _SPECIAL_KEYS:
                    parent.merges = True
            else:
                parent.items.append((parent.key, node))
                parent.key = None
        get_event()  # the document's end
        return node, self._value(node)

    # --- composing ----------------------------------------------------------------------------

    def _anchor(self, event: Any, node: Node, measured: tuple[int, int, int] | None) -> None:
        anchor = event.anchor
        if anchor in self.anchors:
            raise ComposerError(
                f"found duplicate anchor {anchor!r}; first occurrence",
                self.anchors[anchor].start_mark,
                "second occurrence",
                event.start_mark,
            )
        self.anchors[anchor] = node
        if measured is not None:
            self.measured[anchor] = measured

    def _alias(self, event: Any) -> tuple[Node, int]:
        anchor = event.anchor
        if anchor not in self.anchors:
            raise ComposerError(None, None, f"found undefined alias {anchor!r}", event.start_mark)
        if anchor not in self.measured:
            # PyYAML builds a cycle here; go-yaml: "anchor 'x' value contains itself".
            problem = f"uses the alias *{anchor} inside its own anchor"
            raise PayloadLimitError(problem, _line(event))
        nodes, chars, height = self.measured[anchor]
        self.aliased = True
        self.nodes += nodes
        self.chars += chars
        bounds = self.bounds
        if self.nodes > bounds.max_nodes or self.chars > bounds.max_expanded:
            self._beyond(event)
        return self.anchors[anchor], height

    def _beyond(self, event: Any) -> None:
        bounds = self.bounds
        if self.nodes > bounds.max_nodes:
            limit = f"{bounds.max_nodes:,} keys and values"
        else:
            limit = _amount(bounds.max_expanded)
        if self.aliased:
            problem = f"expands to more than {limit} through its aliases (*name)"
        elif self.nodes > bounds.max_nodes:
            problem = f"holds more than {limit}"
        else:
            problem = f"holds more than {limit} of data"
        raise PayloadLimitError(problem, _line(event))

    # --- constructing -------------------------------------------------------------------------

    def _value(self, node: Node) -> Any:
        if node in self.failed:
            raise self.failed[node]
        return self.constructed_objects[node]

    def _scalar(self, node: ScalarNode, stack: list[_Open]) -> None:
        read = _SCALAR_READERS.get(node.tag)
        try:
            if read is None:
                self.constructed_objects[node] = self._by_safe_constructor(node)
            else:
                self.constructed_objects[node] = read(node)
        except _FAILURES as err:
            self._fail(node, stack, err)

    def _fail(self, node: Node, stack: list[_Open], err: Exception) -> None:
        """Raise `err` now if PyYAML would build `node`, else keep it for when it is used.

        PyYAML builds every node below plain collections (tagged `!!seq`, `!!map`, `!!set`,
        `!!omap`, `!!pairs` or not at all) but merge keys, merged mappings (only their pairs)
        and the mappings of an `!!omap` (only their pair), so a document of 50,000 `!!int abc`
        fails at the first; below other tags, only what their constructor asks for.
        """
        # `stack` holds the collections that `node` is in, the innermost last.
        if not stack:
            raise err
        if all(open_.node.tag in _PLAIN_TAGS for open_ in stack):
            parent = stack[-1]
            if parent.is_map:
                used = node.tag != _MERGE if parent.key is None else parent.key.tag != _MERGE
            else:
                above = stack[-2] if len(stack) > 1 else None
                merged = above is not None and above.key is not None and above.key.tag == _MERGE
                used = not merged and parent.node.tag not in _PAIRS_TAGS
            if used:
                raise err
        self.failed[node] = err

    def _failed_child(self, node: Node) -> Exception:
        for child in _children(node):
            if child in self.failed:
                return self.failed[child]
        raise AssertionError("a child was neither built nor failed")  # pragma: no cover

    def _collection(self, done: _Open) -> None:
        """Build a collection other than a plain list or a plain mapping without merges."""
        node = done.node
        built = self.constructed_objects
        if isinstance(node, MappingNode) and node.tag in _MAPPING_TAGS:
            if done.merges:
                self.flatten_mapping(node)
            built[node] = self._mapping(node)
        elif type(node) is SequenceNode and node.tag in _PAIRS_TAGS:
            _check_pairs(node)
            pairs = [pair.value[0] for pair in node.value]
            built[node] = [(built[key], built[value]) for key, value in pairs]
        else:
            built[node] = self._by_safe_constructor(node)

    def _mapping(self, node: MappingNode) -> dict[Any, Any]:
        built = self.constructed_objects
        mapping: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = built[key_node]
            if type(key) is not str:
                _check_key(node, key_node, key)
            mapping[key] = built[value_node]
        return mapping

    def _by_safe_constructor(self, node: Node) -> Any:
        try:
            return self.construct_object(node, deep=True)
        except PayloadLimitError:
            raise
        except _UNREADABLE:
            raise _unreadable(node) from None
        finally:
            # What construct_object leaves behind when it raises.
            self.recursive_objects = {}
            self.deep_construct = False

    def construct_mapping(self, node: Node, deep: bool = False) -> dict[Any, Any]:
        """SafeConstructor's, with the checks of `_check_key` (for SafeConstructor's own use)."""
        if isinstance(node, MappingNode):
            self.flatten_mapping(node)
        else:
            problem = f"expected a mapping node, but found {_kind(node)}"
            raise ConstructorError(None, None, problem, node.start_mark)
        mapping: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=deep)
            _check_key(node, key_node, key)
            mapping[key] = self.construct_object(value_node, deep=deep)
        return mapping


def _children(node: Node) -> Iterator[Node]:
    for item in node.value:
        if isinstance(item, tuple):
            yield from item
        elif (
            type(node) is SequenceNode and isinstance(item, MappingNode) and node.tag in _PAIRS_TAGS
        ):
            yield from item.value[0]
        else:
            yield item


def _kind(node: Node) -> str:
    """How PyYAML names a node's kind in its messages."""
    return {ScalarNode: "scalar", SequenceNode: "sequence"}.get(type(node), "mapping")


def _check_pairs(node: SequenceNode) -> None:
    """SafeConstructor's checks of `!!omap` and `!!pairs` (which build none of their mappings)."""
    for subnode in node.value:
        if not isinstance(subnode, MappingNode):
            problem = f"expected a mapping of length 1, but found {_kind(subnode)}"
            raise ConstructorError(
                "while constructing an ordered map", node.start_mark, problem, subnode.start_mark
            )
        if len(subnode.value) != 1:
            problem = f"expected a single mapping item, but found {len(subnode.value)} items"
            raise ConstructorError(
                "while constructing an ordered map", node.start_mark, problem, subnode.start_mark
            )


def _check_key(node: Node, key_node: Node, key: Any) -> None:
    if isinstance(key, list | dict):
        raise ConstructorError(
            "while constructing a mapping",
            node.start_mark,
            "found unhashable key",
            key_node.start_mark,
        )
    if type(key) is int and key not in _INT_KEY_RANGE:
        raise PayloadLimitError("has an integer key beyond 64 bits", _line(key_node))


def _line(item: Event | Node) -> int | None:
    mark = item.start_mark
    return None if mark is None else mark.line + 1


# --- scalars ------------------------------------------------------------------------------------

_FAILURES = (yaml.YAMLError, PayloadLimitError)
"""What building a value may raise (an integer too large is a PayloadLimitError)."""

_UNREADABLE = (ValueError, KeyError, IndexError, TypeError, OverflowError)
"""What PyYAML's scalar readers raise on a value their tag cannot read (`!!int abc`, `0b_`,
an empty `!!int`) instead of a YAMLError."""

_PLAIN = SafeConstructor()
"""PyYAML's own readers, for `_Loader`'s (they use a constructor only for `construct_scalar`)."""


def _undefined(node: Node) -> ConstructorError:
    # What SafeConstructor.construct_undefined says.
    problem = f"could not determine a constructor for the tag {node.tag!r}"
    return ConstructorError(None, None, problem, node.start_mark)


def _unreadable(node: Node) -> ConstructorError:
    # Never quote the value: it may be a secret (env_vars).
    tag = node.tag.replace("tag:yaml.org,2002:", "!!")
    return ConstructorError(None, None, f"found a value that {tag} cannot read", node.start_mark)


def _too_large(node: Node) -> PayloadLimitError:
    return PayloadLimitError(
        f"holds an integer of more than {MAX_INT_DIGITS:,} digits", _line(node)
    )


def _read_int(node: Any) -> int:
    if type(node) is ScalarNode:
        text = node.value
        if text.isascii() and text.isdigit() and text[0] != "0" and len(text) <= MAX_INT_DIGITS:
            return int(text)  # the common case, as PyYAML reads it
    else:
        text = _PLAIN.construct_scalar(node)  # `!!int {=: 1}`: the value of the `=` key
    # Before converting: a sexagesimal integer (1:0:0:…) costs quadratic time in its length.
    # Any integer within MAX_INT_DIGITS is written in fewer characters than this (base 2, at
    # 3.33 characters per digit, being the longest).
    digits = text.replace("_", "")
    if len(digits) > 4 * MAX_INT_DIGITS:
        raise _too_large(node)
    try:
        value: int = _PLAIN.construct_yaml_int(ScalarNode(node.tag, text))
    except _UNREADABLE:
        if digits.lstrip("+-").isdigit():  # int() refuses more than MAX_INT_DIGITS digits
            raise _too_large(node) from None
        raise _unreadable(node) from None
    if not -_INT_LIMIT < value < _INT_LIMIT:
        raise _too_large(node)
    return value


def _read_bool(node: Any) -> bool:
    try:
        return bool(_PLAIN.construct_yaml_bool(node))
    except _UNREADABLE:
        raise _unreadable(node) from None


def _read_float(node: Any) -> float:
    if type(node) is ScalarNode and "_" not in node.value and ":" not in node.value:
        with contextlib.suppress(ValueError):
            return float(node.value)  # the common case, as PyYAML reads it (not .inf, .nan)
    try:
        return float(_PLAIN.construct_yaml_float(node))
    except _UNREADABLE:
        raise _unreadable(node) from None


def _read_binary(node: Any) -> str:
    decoded: bytes = _PLAIN.construct_yaml_binary(node)
    return decoded.decode("utf-8", "replace")


def _read_null(node: Any) -> None:
    _PLAIN.construct_scalar(node)  # which raises for a collection


def _read_timestamp(node: Any) -> str:
    return str(_PLAIN.construct_yaml_str(node))


_SCALAR_READERS: dict[str, Callable[[Node], Any]] = {
    "tag:yaml.org,2002:null": _read_null,
    "tag:yaml.org,2002:bool": _read_bool,
    "tag:yaml.org,2002:int": _read_int,
    "tag:yaml.org,2002:float": _read_float,
    "tag:yaml.org,2002:binary": _read_binary,
    "tag:yaml.org,2002:timestamp": _read_timestamp,
}
"""Per tag, how a scalar is read; SafeConstructor uses the same readers for a tagged node."""


def _as_constructor(read: Callable[[Any], Any]) -> Callable[[_Loader, Any], Any]:
    def construct(loader: _Loader, node: Any) -> Any:
        return read(node)

    return construct


def _construct_set(loader: _Loader, node: Any) -> Any:
    return loader.construct_yaml_map(node)


_Loader.yaml_constructors = {
    **SafeConstructor.yaml_constructors,
    **{tag: _as_constructor(read) for tag, read in _SCALAR_READERS.items()},
    "tag:yaml.org,2002:set": _construct_set,
}


# --- JSON and the rest --------------------------------------------------------------------------


def _check_length(text: str, bounds: Bounds) -> None:
    if bounds.max_bytes is None:
        return
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > bounds.max_bytes:
        raise PayloadLimitError(f"is larger than {_amount(bounds.max_bytes)} ({size:,} bytes)")


# A JSON string, escapes included; what is left outside strings holds the structure.
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_JSON_BRACKET = re.compile(r"[\[\]{}]")
_JSON_EMPTY = re.compile(r"\[\s*\]|\{\s*\}")


def _check_json_shape(text: str, bounds: Bounds) -> None:
    """Refuse JSON nested deeper than `bounds` or holding more keys and values, unparsed.

    From its punctuation outside strings: every `,` and `:` adds a value or a key, and every
    non-empty collection one more (exact for valid JSON; `json.loads` refuses the rest).
    Depth is followed bracket by bracket, but no further than the node bound allows brackets.
    """
    structure = _JSON_STRING.sub('""', text)
    depth = 0
    most = 2 * bounds.max_nodes + 2
    for count, bracket in enumerate(_JSON_BRACKET.finditer(structure)):
        if bracket.group() in "[{":
            depth += 1
            if depth > bounds.max_depth:
                raise PayloadLimitError(f"nests deeper than {bounds.max_depth} levels")
        else:
            depth -= 1
        if count > most:
            break
    opened = structure.count("[") + structure.count("{")
    empty = len(_JSON_EMPTY.findall(structure))
    nodes = 1 + structure.count(",") + structure.count(":") + opened - empty
    if nodes > bounds.max_nodes:
        raise PayloadLimitError(f"holds more than {bounds.max_nodes:,} keys and values")


def _json_int(text: str) -> int:
    # int() would raise ValueError, in Python's words, past this.
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise PayloadLimitError(f"holds a number of more than {MAX_INT_DIGITS:,} digits")
    return int(text)


def _reject_constant(name: str) -> Any:
    # Python's json accepts NaN and Infinity; Go's encoding/json does not.
    raise ValueError(f"{name} is not a JSON number")


def _amount(size: int) -> str:
    if size % _MIB == 0:
        return f"{size // _MIB} MiB"
    if size % _KIB == 0:
        return f"{size // _KIB} KiB"
    return f"{size:,} bytes"
