"""What the worst documents the payload bounds accept cost to validate, and the refused ones.

A CR's embedded documents (`runtimeEnvYAML`, `serveConfigV2`, `entrypointResources`,
`rayStartParams.resources`) are parsed in the workflow task by validation and on the worker's
event loop by activities, through `crds.payloads`; a whole CR is loaded into the models by the
read activities and validated again in the workflow task. For each shape a document can take
(flow and block collections, empty ones, keys, long scalars, comments, aliases, merges, tags,
the deepest nesting, JSON), this builds the largest one the bounds let through, and a few they
refuse, and times, best of `--repeat` runs, wall clock:

    YAML, JSON   validate  what validation runs (`formats.yaml_mapping_problem`,
                           `formats.json_number_map_problem`), the same parse the activities
                           run on the event loop (`parse_serve_config`, `runtime_env_of`,
                           `parse_resources_param`)
                 + dumps   then `json.dumps` of the result, as an activity sends it on
                           (the submitter's `--runtime-env-json`, the Serve PUT)
    whole RayJob read      the read activity on the event loop: the API server's answer
                           decoded (`activities.kube.decoding`), `parse_ray_object`, the
                           redacted spec encoded for Temporal
                 workflow  the workflow task: that spec decoded, then `validate`

    python -m benchmarks.payload_bounds             # prints a Markdown table
    python -m benchmarks.payload_bounds --repeat 9

Run it on an idle machine: another process on the same cores doubles every figure.
"""

from __future__ import annotations

import argparse
import itertools
import json
import platform
import string
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from temporalio.contrib.pydantic import pydantic_data_converter

from activities.kube.decoding import decode
from crds.loading import parse_ray_object
from crds.nesting import MAX_NODES
from crds.payloads import FIELD_BOUNDS, HAS_LIBYAML, Bounds, load_json, load_yaml
from crds.rayjob import RayJob, RayJobSpec
from crds.redaction import redacted_job_spec
from crds.validation import formats, validate
from crds.validation.sizes import MAX_WORKER_GROUPS
from crds.violations import InvalidObjectError

YAML_FIELDS = "runtimeEnvYAML, serveConfigV2"
JSON_FIELDS = "entrypointResources, rayStartParams.resources"
WHOLE_CR = "whole RayJob"


@dataclass(frozen=True)
class Case:
    """One document, and whether the bounds let it through."""

    group: str
    name: str
    document: str | dict[str, Any]
    accepted: bool


# --- YAML ------------------------------------------------------------------------------------


def short_keys(count: int) -> list[str]:
    """`count` distinct keys of four letters."""
    letters = itertools.product(string.ascii_lowercase, repeat=4)
    return ["".join(key) for key in itertools.islice(letters, count)]


def flow_list(items: Iterator[str] | list[str]) -> str:
    """`a: [...]`: a mapping (1), its key (1), the list (1) and the items."""
    return "a: [" + ",".join(items) + "]"


def yaml_cases(bounds: Bounds = FIELD_BOUNDS) -> list[Case]:
    """The largest document of each shape the bounds accept, then some they refuse."""
    nodes = bounds.max_nodes
    size = bounds.max_bytes or 0
    depth = bounds.max_depth
    items = nodes - 3  # in `a: [...]`
    pairs = (nodes - 1) // 2  # in a top-level mapping
    keys = short_keys(pairs)
    unit = "[" * (depth - 3) + "1" + "]" * (depth - 3)  # the deepest: `a: [` is 2 levels
    shared = "[" + ",".join(["1"] * 999) + "]"
    merged = "{" + ", ".join(f"k{i}: 1" for i in range(10)) + "}"
    apps = min((nodes - 3) // 56, size // len(serve_config(1)))
    accepted = {
        "flow list of numbers": flow_list(["1"] * items),
        "block list of strings": "a:\n" + "- x\n" * items,
        "flow mapping, 4-letter keys": "{" + ", ".join(f"{key}: 1" for key in keys) + "}",
        "block mapping, 4-letter keys": "".join(f"{key}: 1\n" for key in keys),
        "integer keys": "".join(f"{number}: x\n" for number in range(pairs)),
        "empty lists": flow_list(["[]"] * items),
        "empty mappings": flow_list(["{}"] * items),
        "one-item lists": flow_list(["[1]"] * (items // 2)),
        "nested block mappings": "a:\n"
        + "".join(f" {key}:\n  b: 1\n" for key in keys[: items // 4]),
        f"lists nested {depth} deep": flow_list([unit] * (items // (depth - 2))),
        "aliases to a 1,000-item list": (
            f"b: &b {shared}\nc: [" + ",".join(["*b"] * ((nodes - 1006) // 1000)) + "]"
        ),
        "aliases to one scalar": "b: &b 1\nc: [" + ",".join(["*b"] * (nodes - 6)) + "]",
        "an anchor on every item": flow_list(f"&{i:x} 1" for i in range(items)),
        "merge keys (<<: *base)": (
            f"b: &b {merged}\nc: [" + ",".join(["{<<: *b, x: 1}"] * ((nodes - 30) // 25)) + "]"
        ),
        "floats": flow_list(["1.5e10"] * min(items, size // 7 - 2)),
        "integers": flow_list(["1234567890"] * min(items, size // 11 - 2)),
        "timestamps (kept as strings)": flow_list(["2001-12-14t21:59:43.10-05:00"] * (size // 30)),
        "!!str tags": flow_list(["!!str 1"] * min(items, size // 8 - 2)),
        "!!omap pairs": "a: !!omap [" + ",".join(f"{{k{i}: 1}}" for i in range(items // 3)) + "]",
        "JSON": '{"a": [' + ", ".join(["1"] * items) + "]}",
        "runtime env: pip and env_vars": runtime_env(nodes, size),
        "Serve config: applications": serve_config(apps),
        "long plain scalar": "a: " + "x" * (size - 4),
        "long double-quoted scalar, escapes": 'a: "' + "\\u00e9" * ((size - 6) // 6) + '"',
        "literal block scalar, short lines": "a: |\n" + "  x\n" * ((size - 6) // 4),
        "folded block scalar": "a: >\n" + "  x y\n" * ((size - 6) // 6),
        "comments": "# c\n" * ((size - 10) // 4) + "a: 1",
        "!!binary": "a: !!binary " + "aGk=" * ((size - 13) // 4),
        "sexagesimal integer (1:0:0:…)": "a: 1" + ":0" * 2380,
    }
    refused = {
        "256 KiB of [1,1,…] (125,000 numbers)": flow_list(["1"] * ((size - 6) // 2)),
        "one node past the bound": flow_list(["1"] * (items + 1)),
        "a 584-byte billion laughs": billion_laughs(10, 584),
        "aliases past the bound": (
            f"b: &b {shared}\nc: [" + ",".join(["*b"] * (nodes // 1000 + 1)) + "]"
        ),
        "256 KiB of [": "a: " + "[" * (size - 4),
        "block nesting past the bound": "".join(f"{'  ' * i}k:\n" for i in range(depth + 1)),
        "larger than 256 KiB": "a: " + "x" * size,
        "sexagesimal integer of 240 KB": "a: 1" + ":0" * 120_000,
        "integer keys past 64 bits": "".join(
            f"{(2**61 - 1) * (k + 2**8)}: x\n" for k in range(min(10_000, size // 27))
        ),
        "!!int abc on every item": flow_list(["!!int abc"] * (size // 11)),
    }
    return [Case(YAML_FIELDS, name, text, True) for name, text in accepted.items()] + [
        Case(YAML_FIELDS, name, text, False) for name, text in refused.items()
    ]


def runtime_env(nodes: int, size: int) -> str:
    """A runtime env of pip requirements and env vars, as large as `nodes` and `size` allow."""
    # 1 mapping, 3 keys (pip, env_vars, working_dir), their list, mapping and value; then
    # each entry a requirement, an env var's key and its value (about 60 bytes).
    count = min((nodes - 7) // 3, (size - 100) // 60)
    pip = "".join(f"  - package-{i}==1.{i}.0\n" for i in range(count))
    env = "".join(f"  VARIABLE_{i}: value-{i}\n" for i in range(count))
    return f"working_dir: s3://bucket/app.zip\npip:\n{pip}env_vars:\n{env}"


def serve_config(applications: int) -> str:
    """Serve applications of KubeRay's sample's shape (56 nodes each), as many as given."""
    app = (
        "  - name: app{i}\n"
        "    import_path: fruit.deployment_graph\n"
        "    route_prefix: /app{i}\n"
        "    runtime_env:\n"
        "      working_dir: https://github.com/ray-project/test_dag/archive/78b4a5d.zip\n"
        "      pip: [requests, numpy]\n"
        "    deployments:\n"
        "      - name: MangoStand\n"
        "        num_replicas: 1\n"
        "        max_replicas_per_node: 1\n"
        "        user_config: {price: 3}\n"
        "        ray_actor_options: {num_cpus: 0.1}\n"
        "      - name: OrangeStand\n"
        "        num_replicas: 1\n"
        "        user_config: {price: 2}\n"
        "        ray_actor_options: {num_cpus: 0.1}\n"
        "      - name: FruitMarket\n"
        "        num_replicas: 1\n"
        "        ray_actor_options: {num_cpus: 0.1}\n"
    )
    return "applications:\n" + "".join(app.replace("{i}", str(i)) for i in range(applications))


def billion_laughs(levels: int, size: int) -> str:
    """The YAML "billion laughs": each anchor names nine of the one before, padded to `size`."""
    lines = [f"a0: &a0 [{','.join(['lol'] * 9)}]"]
    lines += [f"a{n}: &a{n} [{','.join([f'*a{n - 1}'] * 9)}]" for n in range(1, levels + 1)]
    text = "".join(f"{line}\n" for line in lines)
    return text + "#" + "~" * (size - len(text) - 2) + "\n"


# --- JSON ------------------------------------------------------------------------------------


def json_cases(bounds: Bounds = FIELD_BOUNDS) -> list[Case]:
    """`entrypointResources` / `rayStartParams.resources`: objects of numbers."""
    size = bounds.max_bytes or 0
    pairs = (bounds.max_nodes - 1) // 2
    long_key = "r" * 1000
    accepted = {
        "object of numbers at the bound": json.dumps({f"r{i}": 1 for i in range(pairs)}),
        "long keys": json.dumps({f"{long_key}{i}": 1.5 for i in range(size // 1020)}),
    }
    refused = {
        "a number of more than 4,300 digits": '{"r": ' + "1" * (size - 10) + "}",
        "256 KiB of [1,1,…]": "[" + ",".join(["1"] * ((size - 2) // 2)) + "]",
        "an object past the bound": json.dumps({f"r{i}": 1 for i in range(pairs + 1)}),
        "256 KiB of [": "[" * size,
    }
    return [Case(JSON_FIELDS, name, text, True) for name, text in accepted.items()] + [
        Case(JSON_FIELDS, name, text, False) for name, text in refused.items()
    ]


# --- whole CRs -------------------------------------------------------------------------------

_API_SERVER_LIMIT = int(1.5 * 1024 * 1024)


def rayjob(head_containers: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A small RayJob to grow."""
    image = "rayproject/ray:2.46.0"
    worker = {"name": "ray-worker", "image": image}
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "big", "namespace": "default", "uid": "u", "generation": 1},
        "spec": {
            "entrypoint": "python -c 'print(1)'",
            "rayClusterSpec": {
                "headGroupSpec": {
                    "rayStartParams": {},
                    "template": {
                        "spec": {
                            "containers": head_containers or [{"name": "ray-head", "image": image}]
                        }
                    },
                },
                "workerGroupSpecs": [
                    {
                        "groupName": "workers",
                        "replicas": 1,
                        "minReplicas": 0,
                        "maxReplicas": 5,
                        "rayStartParams": {},
                        "template": {"spec": {"containers": [worker]}},
                    }
                ],
            },
        },
    }


def count_nodes(value: Any) -> int:
    """Keys and values, as `crds.nesting.size_violations` counts them."""
    nodes, pending = 1, [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            nodes += 2 * len(item)
            pending += item.values()
        elif isinstance(item, list):
            nodes += len(item)
            pending += item
    return nodes


def grown(add: Callable[[dict[str, Any], int], None], nodes: int | None) -> dict[str, Any]:
    """A RayJob grown by `add(job, 0)`, `add(job, 1)`… to just under `nodes` keys and values,
    or without `nodes` to just under the API server's 1.5 MiB."""

    def build(count: int) -> dict[str, Any]:
        job = rayjob()
        for i in range(count):
            add(job, i)
        return job

    def over(job: dict[str, Any]) -> float:
        """How many adds too many `job` holds (negative: how many more would fit)."""
        if nodes is not None:
            return (count_nodes(job) - nodes) / per_node
        return (len(json.dumps(job, separators=(",", ":"))) - _API_SERVER_LIMIT) / per_byte

    # Measured from the first add on: that one may also lay out what the others fill.
    sample, first = build(1000), build(1)
    per_node = (count_nodes(sample) - count_nodes(first)) / 999
    size = len(json.dumps(sample, separators=(",", ":"))) - len(json.dumps(first))
    per_byte = size / 999
    count = 1000 - int(over(sample))
    while True:
        job = build(count)
        extra = over(job)
        if extra <= 0:
            return job
        count -= max(1, int(extra + 1))


def _head(job: dict[str, Any]) -> dict[str, Any]:
    head: dict[str, Any] = job["spec"]["rayClusterSpec"]["headGroupSpec"]
    return head


def add_container(job: dict[str, Any], i: int) -> None:
    env = [{"name": f"VARIABLE_{j}", "value": "v"} for j in range(20)]
    _head(job)["template"]["spec"]["containers"].append(
        {"name": f"c{i}", "image": "busybox", "env": env}
    )


def add_env_var(job: dict[str, Any], i: int) -> None:
    container = _head(job)["template"]["spec"]["containers"][0]
    container.setdefault("env", []).append({"name": f"VARIABLE_{i}", "value": "v"})


def add_worker_group(job: dict[str, Any], i: int) -> None:
    image = "rayproject/ray:2.46.0"
    job["spec"]["rayClusterSpec"]["workerGroupSpecs"].append(
        {
            "groupName": f"group-{i}",
            "replicas": 1,
            "minReplicas": 0,
            "maxReplicas": 5,
            "rayStartParams": {"num-cpus": "1"},
            "template": {"spec": {"containers": [{"name": "ray-worker", "image": image}]}},
        }
    )


def add_group_env_var(job: dict[str, Any], i: int) -> None:
    """An env var in each of the most worker groups a spec may have, in turn."""
    groups = job["spec"]["rayClusterSpec"]["workerGroupSpecs"]
    while len(groups) < MAX_WORKER_GROUPS:
        add_worker_group(job, len(groups))
    container = groups[i % MAX_WORKER_GROUPS]["template"]["spec"]["containers"][0]
    container.setdefault("env", []).append({"name": f"VARIABLE_{i}", "value": "v"})


def add_annotation(job: dict[str, Any], i: int) -> None:
    job["metadata"].setdefault("annotations", {})[f"example.com/annotation-{i}"] = "v"


def add_tiny_list(job: dict[str, Any], i: int) -> None:
    # A field Kubernetes does not know, kept in the pod template (`x-...` is as good as any).
    _head(job)["template"].setdefault("x-data", []).append([0])


def cr_cases(max_nodes: int = MAX_NODES) -> list[Case]:
    """RayJobs at the node bound in several shapes, and at the API server's 1.5 MiB beyond it."""
    growers = {
        "head containers with 20 env vars each": add_container,
        "env vars of one container": add_env_var,
        "env vars across 100 worker groups": add_group_env_var,
        "annotations": add_annotation,
        "a preserved list of one-item lists": add_tiny_list,
    }
    cases = [Case(WHOLE_CR, name, grown(add, max_nodes), True) for name, add in growers.items()]
    with_env = rayjob()
    bounds = FIELD_BOUNDS
    with_env["spec"]["runtimeEnvYAML"] = runtime_env(bounds.max_nodes, bounds.max_bytes or 0)
    cases.append(Case(WHOLE_CR, "runtimeEnvYAML at its bound", with_env, True))
    for name, add in (
        ("worker groups", add_worker_group),
        ("a preserved list of one-item lists", add_tiny_list),
    ):
        cases.append(Case(WHOLE_CR, f"1.5 MiB of {name}", grown(add, None), False))
    return cases


# --- timing ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Timing:
    """One case's figures, in ms; `outcome` is "accepted" or the refusal."""

    case: Case
    size: int
    nodes: int | None
    first_ms: float
    second_ms: float | None
    outcome: str


def best_ms(run: Callable[[], object], repeat: int) -> float:
    """The fastest of `repeat` runs, in ms."""
    fastest = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        fastest = min(fastest, time.perf_counter() - start)
    return fastest * 1000


def time_case(case: Case, repeat: int) -> Timing:
    """Time one case (see the module docstring for what each column holds)."""
    if case.group == WHOLE_CR:
        return _time_cr(case, repeat)
    text = case.document
    assert isinstance(text, str)
    size = len(text.encode())
    if case.group == YAML_FIELDS:
        problem = formats.yaml_mapping_problem(text)
        first = best_ms(lambda: formats.yaml_mapping_problem(text), repeat)
        loaded = None if problem else load_yaml(text)
    else:
        problem = formats.json_number_map_problem(text)
        first = best_ms(lambda: formats.json_number_map_problem(text), repeat)
        loaded = None if problem else load_json(text)
    second = None if problem else best_ms(lambda: json.dumps(loaded), repeat)
    nodes = None if problem else count_nodes(loaded)
    return Timing(case, size, nodes, first, second, problem or "accepted")


def _time_cr(case: Case, repeat: int) -> Timing:
    doc = case.document
    assert isinstance(doc, dict)
    body = json.dumps(doc, separators=(",", ":"))
    converter = pydantic_data_converter.payload_converter

    def read() -> Any:
        try:
            job = parse_ray_object(decode(body.encode()))
        except InvalidObjectError as err:
            return err
        assert isinstance(job, RayJob)
        return job, converter.to_payloads([redacted_job_spec(job.spec)])

    first = best_ms(read, repeat)
    result = read()
    if isinstance(result, InvalidObjectError):
        outcome = "; ".join(str(violation) for violation in result.violations)
        return Timing(case, len(body), count_nodes(doc), first, None, outcome)
    job, payloads = result

    def workflow() -> list[str]:
        [spec] = converter.from_payloads(payloads, [RayJobSpec])
        return [str(v) for v in validate(RayJob(metadata=job.metadata, spec=spec))]

    second = best_ms(workflow, repeat)
    violations = workflow()
    outcome = "; ".join(violations) if violations else "accepted"
    return Timing(case, len(body), count_nodes(doc), first, second, outcome)


# --- the report --------------------------------------------------------------------------------


def table(timings: list[Timing]) -> str:
    """The Markdown table of the README."""
    heads = {
        YAML_FIELDS: ("validate", "+ dumps"),
        JSON_FIELDS: ("validate", "+ dumps"),
        WHOLE_CR: ("read", "workflow"),
    }
    lines: list[str] = []
    for group, (first, second) in heads.items():
        lines += [
            "",
            f"| {group} | KiB | keys and values | {first} ms | {second} ms | outcome |",
            "|---|---:|---:|---:|---:|---|",
        ]
        for timing in (t for t in timings if t.case.group == group):
            nodes = "" if timing.nodes is None else f"{timing.nodes:,}"
            second_ms = "" if timing.second_ms is None else f"{timing.second_ms:.1f}"
            outcome = timing.outcome if len(timing.outcome) < 90 else timing.outcome[:87] + "…"
            lines.append(
                f"| {timing.case.name} | {timing.size / 1024:,.0f} | {nodes} "
                f"| {timing.first_ms:.1f} | {second_ms} | {outcome} |"
            )
    return "\n".join(lines[1:])


def main() -> None:
    """Build every case, time it and print the table, with the commit and the machine."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per case; the best counts")
    args = parser.parse_args()
    cases = yaml_cases() + json_cases() + cr_cases()
    timings = [time_case(case, args.repeat) for case in cases]
    wrong = [t.case.name for t in timings if (t.outcome == "accepted") != t.case.accepted]
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    print(
        f"{time.strftime('%Y-%m-%d')}, commit {commit or '?'}, Python "
        f"{platform.python_version()}, libyaml {'yes' if HAS_LIBYAML else 'NO'}, "
        f"best of {args.repeat}"
    )
    print(table(timings))
    if wrong:
        raise SystemExit(f"not as the bounds say: {', '.join(wrong)}")


if __name__ == "__main__":
    main()
