"""`crds.payloads`: YAML and JSON from CR fields load within bounds, or are refused unexpanded."""

from __future__ import annotations

import gc
import json
from collections.abc import Callable
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from crds import payloads
from crds.payloads import (
    FIELD_BOUNDS,
    HAS_LIBYAML,
    MANIFEST_BOUNDS,
    Bounds,
    PayloadLimitError,
    load_json,
    load_yaml,
    load_yaml_documents,
)
from tests.alias_bombs import BOMB_398, BOMB_584, SMALL_BOMB, alias_bomb, expanded_strings


@pytest.mark.parametrize("bomb", [BOMB_398, BOMB_584, SMALL_BOMB], ids=["398", "584", "small"])
def test_an_alias_bomb_is_refused_at_the_line_that_crosses_the_bound(bomb: str) -> None:
    with pytest.raises(PayloadLimitError) as err:
        load_yaml(bomb)
    assert err.value.problem == (
        "expands to more than 25,000 keys and values through its aliases (*name)"
    )
    # a0..a3 hold 8,306 keys and values; a4 (9**5 strings more) is the first anchor past it.
    assert err.value.line == 5 and str(err.value).endswith("(line 5)")


def test_the_584_byte_bomb_names_billions_of_strings() -> None:
    assert len(BOMB_584.encode()) == 584 and expanded_strings(10) > 3 * 10**10
    assert len(BOMB_398.encode()) == 398


def test_moderate_aliasing_is_accepted_as_in_kuberay() -> None:
    # KubeRay's go-yaml accepts anchors; a shared runtime_env in every application is fine.
    env = "runtime_env: &env {pip: [requests], env_vars: {A: '1'}}\n"
    apps = "".join(f"  - {{name: app{i}, runtime_env: *env}}\n" for i in range(200))
    loaded = load_yaml(f"{env}applications:\n{apps}")
    assert len(loaded["applications"]) == 200
    assert loaded["applications"][199]["runtime_env"] == {
        "pip": ["requests"],
        "env_vars": {"A": "1"},
    }
    assert load_yaml(alias_bomb(3))["a3"][0][0][0] == ["lol"] * 9


def test_merge_keys_count_as_expansion() -> None:
    levels = ["m0: &m0 {" + ", ".join(f"k{i}: {'x' * 200}" for i in range(20)) + "}"]
    levels += [
        f"m{n}: &m{n} {{<<: [{', '.join([f'*m{n - 1}'] * 9)}], k{n}: y}}" for n in range(1, 6)
    ]
    with pytest.raises(PayloadLimitError, match="through its aliases"):
        load_yaml("\n".join(levels))
    assert load_yaml("a: &a {x: 1}\nb: {<<: *a, y: 2}")["b"] == {"x": 1, "y": 2}


def test_an_anchor_that_contains_itself_is_refused() -> None:
    with pytest.raises(PayloadLimitError, match=r"alias \*x inside its own anchor"):
        load_yaml("a: &x {b: *x}\n")


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("[" * 2000 + "]" * 2000, id="flow"),
        pytest.param("".join(f"{'  ' * i}k:\n" for i in range(400)), id="block"),
        pytest.param(
            "a: &a [[[[[[[[[[1]]]]]]]]]]\n" + "b: " + "[" * 60 + "*a" + "]" * 60, id="alias"
        ),
    ],
)
def test_deep_nesting_is_refused_instead_of_exhausting_the_stack(text: str) -> None:
    with pytest.raises(PayloadLimitError, match="nests deeper than 64 levels"):
        load_yaml(text)


def test_nesting_up_to_the_bound_loads() -> None:
    assert load_yaml("[" * 63 + "1" + "]" * 63) is not None


def test_size_is_bounded_in_bytes() -> None:
    text = "a: " + "é" * (FIELD_BOUNDS.max_bytes or 0)
    with pytest.raises(PayloadLimitError, match=r"is larger than 256 KiB \(524,291 bytes\)"):
        load_yaml(text)
    assert load_yaml("a: " + "x" * 200_000) == {"a": "x" * 200_000}


def test_values_are_what_sigs_k8s_io_yaml_gives_json() -> None:
    loaded = load_yaml("day: 2024-01-01\nat: 2024-01-01T10:00:00Z\nb: !!binary aGk=\ns: !!set {x}")
    assert loaded == {
        "day": "2024-01-01",
        "at": "2024-01-01T10:00:00Z",
        "b": "hi",
        "s": {"x": None},
    }


def test_syntax_errors_stay_yaml_errors() -> None:
    with pytest.raises(yaml.YAMLError):
        load_yaml("a: [1")
    with pytest.raises(yaml.YAMLError):
        load_yaml("a: *undefined")
    assert load_yaml("") is None


def test_json_is_bounded_in_depth_and_size() -> None:
    with pytest.raises(PayloadLimitError, match="nests deeper than 64 levels"):
        load_json("[" * 100_000)
    assert load_json('{"a": "' + "[" * 1000 + '"}') == {"a": "[" * 1000}
    assert load_json('{"a": "\\"[[[["}') == {"a": '"[[[['}
    with pytest.raises(PayloadLimitError, match="larger than 256 KiB"):
        load_json('"' + "x" * 300_000 + '"')
    with pytest.raises(ValueError, match="NaN is not a JSON number"):
        load_json('{"a": NaN}')


def test_manifest_bounds_apply_per_document() -> None:
    def shared(times: int) -> str:  # about `times` × 100 KB once expanded
        return f"a: &a {'x' * 100_000}\nb: [{', '.join(['*a'] * times)}]\n"

    with pytest.raises(PayloadLimitError):
        load_yaml(shared(30))  # a CR field's bound is 1 MiB of data
    documents = list(load_yaml_documents(f"{shared(30)}---\n{shared(30)}", MANIFEST_BOUNDS))
    assert [(line, len(doc["b"])) for line, doc in documents] == [(1, 30), (4, 30)]
    with pytest.raises(PayloadLimitError, match="expands to more than 4 MiB"):
        load_yaml(shared(50), MANIFEST_BOUNDS)


def test_a_document_without_aliases_says_it_holds_too_much() -> None:
    with pytest.raises(PayloadLimitError, match="holds more than 1 KiB of data"):
        bounds = Bounds(max_bytes=None, max_nodes=100, max_expanded=1024, max_depth=8)
        load_yaml("a: " + "x" * 2000, bounds)


# --- the node bound --------------------------------------------------------------------------

NODES = FIELD_BOUNDS.max_nodes


def test_the_finding_is_refused_at_the_node_bound() -> None:
    # 125,000 numbers in 256 KiB: 6.9 s to load before the bound.
    text = "a: [" + ",".join(["1"] * 125_000) + "]"
    assert len(text.encode()) <= (FIELD_BOUNDS.max_bytes or 0)
    with pytest.raises(PayloadLimitError) as err:
        load_yaml(text)
    assert str(err.value) == "holds more than 25,000 keys and values (line 1)"


def test_keys_and_values_up_to_the_bound_load_and_one_more_is_refused() -> None:
    # A mapping (1), its key (1), the list (1) and its items.
    items = NODES - 3
    assert len(load_yaml("a:\n" + "- x\n" * items)["a"]) == items
    with pytest.raises(PayloadLimitError, match=r"holds more than 25,000 keys and values"):
        load_yaml("a:\n" + "- x\n" * (items + 1))
    # Refused at the line that crosses the bound: the first item is on line 2.
    with pytest.raises(PayloadLimitError) as err:
        load_yaml("a:\n" + "- x\n" * (items + 100))
    assert err.value.line == items + 2


def test_keys_count_as_values_do() -> None:
    pairs = (NODES - 1) // 2
    assert len(load_yaml("".join(f"k{i}: 1\n" for i in range(pairs)))) == pairs
    with pytest.raises(PayloadLimitError, match="keys and values"):
        load_yaml("".join(f"k{i}: 1\n" for i in range(pairs + 1)))


def test_nodes_are_counted_with_aliases_expanded() -> None:
    # An anchored list of 999 items is 1,000 keys and values each time it is named.
    shared = "[" + ",".join(["1"] * 999) + "]"

    def document(aliases: int) -> str:
        return f"b: &b {shared}\nc: [" + ",".join(["*b"] * aliases) + "]\n"

    # b, its list, c, its list: 1 + 2 × 1,000 + 2 + 1,000 per alias.
    loaded = load_yaml(document(22))
    assert len(loaded["c"]) == 22 and loaded["c"][21] is loaded["b"]
    with pytest.raises(PayloadLimitError) as err:
        load_yaml(document(24))
    assert err.value.problem == (
        "expands to more than 25,000 keys and values through its aliases (*name)"
    )
    assert err.value.line == 2


def test_merge_keys_count_what_they_merge() -> None:
    base = "b: &b {" + ", ".join(f"k{i}: 1" for i in range(100)) + "}\n"
    merges = lambda count: base + "c: [" + ",".join(["{<<: *b}"] * count) + "]\n"  # noqa: E731
    assert len(load_yaml(merges(100))["c"]) == 100  # 100 × 203
    with pytest.raises(PayloadLimitError, match="through its aliases"):
        load_yaml(merges(130))


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("a: [" + ",".join(["[]"] * 30_000) + "]", id="empty-lists"),
        pytest.param("a: [" + ",".join(["{}"] * 30_000) + "]", id="empty-mappings"),
        pytest.param("a: [" + ",".join(f"&{i:x} 1" for i in range(26_000)) + "]", id="anchors"),
        pytest.param("a: !!omap [" + ",".join(["{k: 1}"] * 10_000) + "]", id="omap"),
    ],
)
def test_every_shape_counts(text: str) -> None:
    with pytest.raises(PayloadLimitError, match="holds more than 25,000 keys and values"):
        load_yaml(text)


def serve_config(applications: int) -> str:
    """Applications shaped as in KubeRay's `ray-service.sample.yaml` (about 55 nodes each)."""
    app = """\
  - name: app{i}
    import_path: fruit.deployment_graph
    route_prefix: /app{i}
    runtime_env:
      working_dir: "https://github.com/ray-project/test_dag/archive/78b4a5d.zip"
      pip: [requests, numpy]
      env_vars: {{MODEL: m{i}, LOG_LEVEL: info}}
    deployments:
      - name: MangoStand
        num_replicas: 1
        user_config: {{price: 3}}
        ray_actor_options: {{num_cpus: 0.1}}
      - name: OrangeStand
        num_replicas: 1
        user_config: {{price: 2}}
        ray_actor_options: {{num_cpus: 0.1}}
      - name: FruitMarket
        num_replicas: 1
        ray_actor_options: {{num_cpus: 0.1}}
"""
    return "applications:\n" + "".join(app.format(i=i) for i in range(applications))


def test_large_real_documents_load() -> None:
    # A Serve config of 200 applications, and a runtime env of 1,000 requirements and 1,000
    # env vars: several times what real ones hold, well within the bound.
    assert len(load_yaml(serve_config(200))["applications"]) == 200
    pip = "".join(f"  - package-{i}==1.{i}.0\n" for i in range(1000))
    env = "".join(f"  VARIABLE_{i}: value-{i}\n" for i in range(1000))
    runtime_env = load_yaml(f"working_dir: s3://bucket/app.zip\npip:\n{pip}env_vars:\n{env}")
    assert len(runtime_env["pip"]) == len(runtime_env["env_vars"]) == 1000


def test_json_is_bounded_in_keys_and_values() -> None:
    pairs = (NODES - 1) // 2
    assert len(load_json(json.dumps({f"r{i}": 1 for i in range(pairs)}))) == pairs
    with pytest.raises(PayloadLimitError, match="holds more than 25,000 keys and values"):
        load_json(json.dumps({f"r{i}": 1 for i in range(pairs + 1)}))
    with pytest.raises(PayloadLimitError, match="holds more than 25,000 keys and values"):
        load_json("[" + ",".join(["1"] * 100_000) + "]")
    # Punctuation inside strings is no structure; empty collections are one value each.
    assert load_json('{"a": "[,:{", "b": [], "c": {}, "d": [[], {}]}')["a"] == "[,:{"


# --- scalars -----------------------------------------------------------------------------------


def test_integers_past_4300_digits_are_refused_whatever_their_base() -> None:
    assert load_yaml("a: " + "9" * 4300)["a"] == int("9" * 4300)
    for text in ("1" * 4301, "0x" + "f" * 3600, "0b" + "1" * 15_000, "1" + ":0" * 3000):
        with pytest.raises(PayloadLimitError, match="holds an integer of more than 4,300 digits"):
            load_yaml(f"a: {text}")
    # A sexagesimal integer costs quadratic time in its length: refused before it is read.
    with pytest.raises(PayloadLimitError, match="4,300 digits"):
        load_yaml("a: 1" + ":0" * 120_000)
    with pytest.raises(PayloadLimitError, match="holds a number of more than 4,300 digits"):
        load_json('{"a": ' + "1" * 5000 + "}")


def test_integer_keys_beyond_64_bits_are_refused() -> None:
    # Python hashes integers modulo 2**61 - 1: such keys can all collide.
    assert load_yaml(f"{2**64 - 1}: a\n{-(2**63)}: b") == {2**64 - 1: "a", -(2**63): "b"}
    for key in (2**64, -(2**63) - 1, (2**61 - 1) * 2**8):
        with pytest.raises(PayloadLimitError, match="has an integer key beyond 64 bits"):
            load_yaml(f"x: 1\n{key}: a")


@pytest.mark.parametrize(
    "text",
    [
        "a: !!bool maybe",
        "a: !!int abc",
        "a: !!float x",
        "a: 0b_",
        "a: 0x_",
        "a: !!int",
        "a: !!int 1.5",
    ],
)
def test_a_scalar_its_tag_cannot_read_is_a_yaml_error(text: str) -> None:
    # PyYAML raised KeyError, ValueError or IndexError, which no parse-error handler caught.
    with pytest.raises(yaml.constructor.ConstructorError, match="cannot read"):
        load_yaml(text)


# --- the same documents as PyYAML --------------------------------------------------------------


class Reference(yaml.SafeLoader):
    """PyYAML's own SafeLoader, with the values sigs.k8s.io/yaml gives (as load_yaml does)."""


Reference.add_constructor(
    "tag:yaml.org,2002:timestamp", lambda loader, node: str(loader.construct_yaml_str(node))
)
Reference.add_constructor(
    "tag:yaml.org,2002:binary",
    lambda loader, node: loader.construct_yaml_binary(node).decode("utf-8", "replace"),
)
Reference.add_constructor(
    "tag:yaml.org,2002:set", lambda loader, node: loader.construct_yaml_map(node)
)

SAME_AS_PYYAML = [
    "",
    "# only a comment",
    "---\n...",
    "a: [1, 2.5, yes, No, ~, null, '', 2024-01-01, 1:30, 0o17, 017, 0x1F, 0b101, +1, -.inf, 1_000]",
    "a: [.nan, 1e3, 2001-12-14t21:59:43.10-05:00, !!binary aGk=, !!set {x, y}, '1', \"2\"]",
    "a: !!omap [{a: 1}, {b: 2}]\nb: !!pairs [{a: 1}, {a: 2}]\nc: !!str {=: x}\nd: !!int {=: 5}",
    "b: &x {c: 1}\nd: {<<: *x, e: 2}\nf: {<<: [*x, {c: 2, z: 1}], g: 3}",
    "a: &a {x: 1, xx: 1}\nb: &b {x: 2, xx: 2}\nc: {<<: [*a, *b]}",
    "a: {<<: [{a: 1}, !foo {b: 2}]}\nb: {<<: !foo {c: 1}}",
    "a: !!str {=: x, b: [!!int abc]}\nb: !!omap [{a: 1}, {b: [1]}]\nc: !!omap [{[1]: 2}]",
    "=: 1\nx: [<<, 2]\n? |\n  block key\n: v",
    "a: &a [1]\nb: *a\nc: [*a, *a]\n&k key: *k",
    "- ? a\n  : b\n- {? c}\n- [? d : e]",
    'a: |2\n   x\n  y\nb: >-\n  folded\n\n  text\nc: "\\x41\\u00e9\\U0001F600"',
    "a: ! 1\nb: !\nc: !<tag:yaml.org,2002:str> 2\n%TAG !e! tag:example.com,2000:\n",
    "a: 1\n---\nb: 2",
    "a: !!bool {=: yes}\n[1, 2]: 3",
    "a: !foo x",
    "a: =",
    "a: *undefined",
    "a: &a 1\nb: &a 2",
    "{[a]: 1}",
    "a:\n  - b\n  -\n  - c\nd: e: f",
    "\ta: 1",
]


@pytest.mark.parametrize("text", SAME_AS_PYYAML)
@pytest.mark.parametrize("libyaml", [True, False], ids=["libyaml", "pure-python"])
def test_the_same_values_and_errors_as_pyyaml(
    text: str, libyaml: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not libyaml:
        monkeypatch.setattr(payloads, "CParser", None)
    expected = outcome(lambda: yaml.load(text, Loader=Reference))
    assert outcome(lambda: load_yaml(text)) == expected


def outcome(load: Callable[[], Any]) -> tuple[str, Any]:
    try:
        return "ok", load()
    except yaml.YAMLError as err:
        return "error", type(err).__name__


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_generated_documents_load_as_pyyaml_loads_them(data: st.DataObject) -> None:
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**70), 2**70),
        st.floats(allow_nan=False),
        st.text(max_size=12),
        st.sampled_from(["yes", "~", "=", "<<", "1:30", "0x1F", "2001-01-01", "- a", "a: b"]),
    )
    keys = st.one_of(st.text(max_size=8), st.integers(-(2**63), 2**63), st.booleans(), st.none())
    values = st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
        max_leaves=30,
    )
    shared = data.draw(values)
    doc = {"s": shared, "t": [shared, data.draw(values), shared], "u": data.draw(values)}
    style = data.draw(st.sampled_from([None, True, False]))
    text = yaml.safe_dump(doc, default_flow_style=style, allow_unicode=data.draw(st.booleans()))
    assert load_yaml(text, MANIFEST_BOUNDS) == yaml.load(text, Loader=Reference)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        # Tabs as separators and inside plain scalars: go-yaml reads these as libyaml does.
        pytest.param("a:\tb c\td", {"a": "b c\td"}, id="tabs"),
        pytest.param("a: |#c\n  x\n", {"a": "x\n"}, id="comment-after-indicator"),
        # A ? inside a plain scalar of a flow collection: go-yaml and PyYAML refuse it.
        pytest.param("[a?]", ["a?"], id="question-mark-in-flow"),
        # An implicit key with no value in a flow list: PyYAML read [{a: null}], go-yaml ["a:"].
        pytest.param("[a:]", None, id="empty-value-in-flow"),
    ],
)
def test_where_libyaml_reads_otherwise_than_pyyaml(text: str, value: Any) -> None:
    assert outcome(lambda: yaml.load(text, Loader=Reference))[0] == (
        "ok" if value is None else "error"
    )
    if value is None:
        with pytest.raises(yaml.YAMLError):
            load_yaml(text)
    else:
        assert load_yaml(text) == value


def test_documents_are_read_with_libyaml() -> None:
    # The image's PyYAML wheel carries it; without it, parsing is several times slower.
    assert HAS_LIBYAML


def test_the_garbage_collector_is_left_as_it_was() -> None:
    assert gc.isenabled()
    load_yaml("a: [1, 2]")
    assert gc.isenabled()
    gc.disable()
    try:
        load_yaml("a: [1, 2]")
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_lone_surrogate_is_a_reader_error() -> None:
    with pytest.raises(yaml.reader.ReaderError):
        load_yaml("a: \ud800")


def test_every_document_of_a_manifest_with_its_line() -> None:
    text = "a: 1\n---\n# nothing\n---\nb: [2]\n"
    assert list(load_yaml_documents(text)) == [(1, {"a": 1}), (4, None), (5, {"b": [2]})]
