"""`crds.payloads`: YAML and JSON from CR fields load within bounds, or are refused unexpanded."""

from __future__ import annotations

import pytest
import yaml

from crds.payloads import (
    FIELD_BOUNDS,
    MANIFEST_BOUNDS,
    BoundedLoader,
    Bounds,
    PayloadLimitError,
    load_json,
    load_yaml,
)
from tests.alias_bombs import BOMB_398, BOMB_584, SMALL_BOMB, alias_bomb, expanded_strings


@pytest.mark.parametrize("bomb", [BOMB_398, BOMB_584, SMALL_BOMB], ids=["398", "584", "small"])
def test_an_alias_bomb_is_refused_at_the_line_that_crosses_the_bound(bomb: str) -> None:
    with pytest.raises(PayloadLimitError) as err:
        load_yaml(bomb)
    assert err.value.problem == "expands to more than 1 MiB through its aliases (*name)"
    # a0..a4 stay under 1 MiB; a5 (9**6 strings) is the first anchor past it.
    assert err.value.line == 6 and str(err.value).endswith("(line 6)")


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
    class ManifestLoader(BoundedLoader):
        bounds = MANIFEST_BOUNDS

    def shared(times: int) -> str:  # about `times` × 100 KB once expanded
        return f"a: &a {'x' * 100_000}\nb: [{', '.join(['*a'] * times)}]\n"

    with pytest.raises(PayloadLimitError):
        load_yaml(shared(30))  # a CR field's bound is 1 MiB
    loader = ManifestLoader(f"{shared(30)}---\n{shared(30)}")
    try:
        documents = [loader.get_data() for _ in range(2)]
    finally:
        loader.dispose()
    assert [len(doc["b"]) for doc in documents] == [30, 30]
    with pytest.raises(PayloadLimitError, match="expands to more than 4 MiB"):
        yaml.load(shared(50), Loader=ManifestLoader)


def test_a_document_without_aliases_says_it_holds_too_much() -> None:
    with pytest.raises(PayloadLimitError, match="holds more than 1 KiB of data"):
        load_yaml("a: " + "x" * 2000, Bounds(max_bytes=None, max_expanded=1024, max_depth=8))
