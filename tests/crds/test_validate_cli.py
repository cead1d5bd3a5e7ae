"""`kuberay-temporal validate`: KubeRay's samples pass, bad input gets one clear line."""

from __future__ import annotations

import io
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from kuberay_temporal.cli import main
from tests.alias_bombs import alias_bomb
from tests.reference import KUBERAY_SAMPLES, REPO_ROOT, sample_files

CONSOLE_SCRIPT = Path(sys.executable).parent / "kuberay-temporal"

# Samples refused at KubeRay v1.7.0's default feature gates, with its messages (KubeRay refuses
# them too), and the one whose feature is not carried out here yet (README "KubeRay samples we
# do not accept"): sample path -> the exact INVALID lines.
_NOT_ADDED = (
    "INVALID RayCluster/raycluster-historyserver: spec.historyServerOptions: KubeRay's "
    "history-server collector sidecar is not added by kuberay-temporal yet; remove "
    "historyServerOptions"
)
KUBERAY_REJECTS: dict[str, list[str]] = {
    "ray-cluster.historyserver.yaml": [
        "INVALID RayCluster/raycluster-historyserver: spec.historyServerOptions: "
        "RayClusterHistoryServer feature gate is not enabled",
        _NOT_ADDED,
    ],
    "ray-cluster.embedded-gcs-ft.yaml": [
        "INVALID RayCluster/raycluster-embedded-gcs-ft: spec.gcsFaultToleranceOptions.backend: "
        "the embedded RocksDB GCS fault tolerance backend (GcsFaultToleranceOptions.Backend: "
        "'rocksdb') requires the GCSFaultToleranceEmbeddedStorage feature gate to be enabled"
    ],
    "ray-cluster.mtls.yaml": [
        "INVALID RayCluster/raycluster-mtls: spec.tlsOptions: requires the RayClusterMTLS "
        "feature gate to be enabled"
    ],
    "ray-cluster.network-policy-deny-all.yaml": [
        "INVALID RayCluster/raycluster-deny-all: spec.networkPolicy: requires the "
        "RayClusterNetworkPolicy feature gate to be enabled"
    ],
}

VALID_CLUSTER = """\
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: ok-cluster
spec:
  headGroupSpec:
    template:
      spec:
        containers:
        - name: ray-head
          image: rayproject/ray:2.46.0
"""


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], list[str]]:
    code = main(["validate", *args])
    captured = capsys.readouterr()
    return code, captured.out.splitlines(), captured.err.splitlines()


def write(tmp_path: Path, text: str, name: str = "manifest.yaml") -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def expected_lines(path: Path) -> list[str]:
    """What `validate` prints for a KubeRay sample, one line per document."""
    lines = []
    for doc in yaml.safe_load_all(path.read_text()):
        if not doc:
            continue
        ident = f"{doc['kind']}/{doc['metadata'].get('name') or doc['metadata']['generateName']}"
        if not doc["apiVersion"].startswith("ray.io/"):
            lines.append(f"SKIPPED {ident} (not a ray.io object)")
        else:
            lines.append(f"OK {ident}")
    return lines


@pytest.mark.parametrize(
    "path", sample_files(), ids=lambda p: str(p.relative_to(p.parents[1])).replace("/", ":")
)
def test_kuberay_sample(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, str(path))
    key = str(path.relative_to(sample_files()[0].parents[1]))
    rejected = KUBERAY_REJECTS.get(key, [])
    assert err == []
    assert [line for line in out if line.startswith("INVALID")] == rejected
    if not rejected:
        assert out == expected_lines(path)
    assert code == (1 if rejected else 0)


def test_with_their_gates_on_only_the_history_server_is_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    gates = "RayClusterMTLS=true,RayClusterNetworkPolicy=true,GCSFaultToleranceEmbeddedStorage=true"
    names = ("historyserver", "embedded-gcs-ft", "mtls", "network-policy-deny-all")
    paths = [str(KUBERAY_SAMPLES / f"ray-cluster.{name}.yaml") for name in names]
    history = f"{gates},RayClusterHistoryServer=true"
    code, out, err = run_cli(capsys, "--feature-gates", history, *paths)
    assert (code, err) == (1, [])
    assert [line for line in out if line.startswith("INVALID")] == [_NOT_ADDED]
    code, out, err = run_cli(capsys, "--feature-gates", "RayCronJob=maybe", *paths)
    assert (code, out) == (2, [])
    assert err == ["error: --feature-gates: invalid value of RayCronJob: maybe"]


def test_kuberays_raycronjob_samples_are_ok(capsys: pytest.CaptureFixture[str]) -> None:
    samples = [str(p) for p in sample_files() if p.name.startswith("ray-cronjob")]
    code, out, err = run_cli(capsys, *samples)
    assert (code, err) == (0, [])
    assert [line for line in out if "RayCronJob" in line] == [
        "OK RayCronJob/raycronjob-timezone-sample",
        "OK RayCronJob/raycronjob-sample",
    ]


RAYCRONJOB = """\
apiVersion: ray.io/v1
kind: RayCronJob
metadata:
  name: nightly
spec:
  schedule: "{schedule}"
  timeZone: {time_zone}
  jobTemplate:
    entrypoint: python train.py
    shutdownAfterJobFinishes: true
    suspend: {suspend}
"""


def test_raycronjob_problems_each_get_a_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = RAYCRONJOB.format(schedule="0 3 * * 7", time_zone="Europe/Pariss", suspend="true")
    code, out, err = run_cli(capsys, write(tmp_path, text))
    assert (code, err) == (1, [])
    assert out == [
        "INVALID RayCronJob/nightly: spec.schedule: invalid cron schedule '0 3 * * 7': in the "
        "day-of-week field, '7' goes above 6 (it allows 0-6)",
        "INVALID RayCronJob/nightly: spec.timeZone: timeZone must name a zone of the IANA "
        "database, such as Asia/Taipei or UTC (names are case-sensitive), got 'Europe/Pariss'",
        "INVALID RayCronJob/nightly: spec.jobTemplate.rayClusterSpec: set rayClusterSpec, or "
        "clusterSelector to run on an existing RayCluster",
    ]


def test_a_raycronjob_firing_every_second_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = RAYCRONJOB.format(schedule="@every 1s", time_zone="UTC", suspend="false")
    text += "    clusterSelector: {ray.io/cluster: shared}\n"
    code, out, err = run_cli(capsys, write(tmp_path, text))
    assert (code, err) == (1, [])
    assert out == [
        "INVALID RayCronJob/nightly: spec.schedule: invalid cron schedule '@every 1s': it fires "
        "every 1s, more often than once a minute (the shortest interval is 1m: each tick's "
        "RayJob is named for its minute)"
    ]


def test_raycronjob_schema_errors_name_the_template_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = RAYCRONJOB.format(schedule="@daily", time_zone="UTC", suspend="'yes'")
    code, out, err = run_cli(capsys, write(tmp_path, text))
    assert (code, err) == (1, [])
    assert out == [
        "INVALID RayCronJob/nightly: spec.jobTemplate.suspend: must be a boolean, got str 'yes'"
    ]


def test_console_script_checks_files_and_stdin(tmp_path: Path) -> None:
    samples = [str(p) for p in sample_files() if p.name.startswith("ray-job.")][:3]
    result = subprocess.run(
        [str(CONSOLE_SCRIPT), "validate", *samples, "-"],
        input=VALID_CLUSTER,
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        check=False,
    )
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.splitlines()[-1] == "OK RayCluster/ok-cluster"
    assert any(line.startswith("OK RayJob/") for line in result.stdout.splitlines())


def test_console_script_malformed_yaml_is_one_line(tmp_path: Path) -> None:
    path = write(tmp_path, "apiVersion: ray.io/v1\nkind: RayJob\nmetadata: [name: x\n")
    result = subprocess.run(
        [str(CONSOLE_SCRIPT), "validate", path], capture_output=True, text=True, check=False
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith(f"error: {path}:4:1: invalid YAML:")
    assert "Traceback" not in result.stderr


def test_malformed_yaml_after_valid_documents_reports_only_the_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, VALID_CLUSTER + "---\nkind: RayJob\n  bad: indent\n")
    code, out, err = run_cli(capsys, path)
    assert (code, out) == (2, [])
    [line] = err
    assert line.startswith(f"error: {path}:14:6: invalid YAML:")
    assert "mapping values are not allowed" in line


def test_wrong_api_version(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, VALID_CLUSTER.replace("ray.io/v1", "ray.io/v1alpha1"))
    code, out, err = run_cli(capsys, path)
    assert (code, out) == (2, [])
    assert err == [
        f"error: {path}:1: RayCluster/ok-cluster: apiVersion 'ray.io/v1alpha1' is not served, "
        "use ray.io/v1"
    ]


def test_unknown_ray_kind(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, VALID_CLUSTER.replace("kind: RayCluster", "kind: RayClustr"))
    code, out, err = run_cli(capsys, path)
    assert (code, out) == (2, [])
    assert err == [
        f"error: {path}:1: unknown ray.io kind 'RayClustr': expected one of "
        "RayCluster, RayJob, RayService, RayCronJob"
    ]


def test_missing_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "---\n" + VALID_CLUSTER.replace("name: ok-cluster", "labels: {}"))
    code, out, err = run_cli(capsys, path)
    assert (code, out) == (2, [])
    assert err == [f"error: {path}:2: RayCluster: metadata.name is required"]


def test_mixed_valid_and_invalid_objects(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(
        tmp_path,
        VALID_CLUSTER
        + """\
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
---
apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: broken-job
spec:
  entrypoint: python train.py
  backoffLimit: "three"
  shutdownAfterJobFinish: true
""",
    )
    code, out, err = run_cli(capsys, path)
    assert code == 1
    assert err == []
    assert out[:2] == [
        "OK RayCluster/ok-cluster",
        "SKIPPED ConfigMap/settings (not a ray.io object)",
    ]
    # The wording of schema messages belongs to crds.loading; the path and value are ours.
    assert out[2].startswith("INVALID RayJob/broken-job: spec.backoffLimit: ")
    assert "'three'" in out[2]
    assert out[3:] == ["INVALID RayJob/broken-job: spec.shutdownAfterJobFinish: unknown field"]


def test_semantic_violations_are_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A manifest with the right shape can still break KubeRay's rules (crds.validation)."""
    too_long = "x" * 64
    path = write(tmp_path, VALID_CLUSTER.replace("name: ok-cluster", f"name: {too_long}"))
    code, out, err = run_cli(capsys, path)
    assert (code, err) == (1, [])
    [line] = out
    assert line.startswith(f"INVALID RayCluster/{too_long}: metadata.name: ")


def test_an_external_name_head_service_is_refused_with_its_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An HTTPMode RayJob whose head Service is a DNS alias to another namespace's head."""
    manifest = """\
        apiVersion: ray.io/v1
        kind: RayJob
        metadata:
          name: hop
        spec:
          entrypoint: python -c "print(1)"
          submissionMode: HTTPMode
          rayClusterSpec:
            headGroupSpec:
              headService:
                spec:
                  type: ExternalName
                  externalName: victim-head-svc.victim.svc.cluster.local
              template:
                spec:
                  containers:
                  - name: ray-head
                    image: rayproject/ray:2.52.0
        """
    code, out, err = run_cli(capsys, write(tmp_path, manifest))
    assert (code, err) == (1, [])
    prefix = "INVALID RayJob/hop: spec.rayClusterSpec.headGroupSpec.headService.spec."
    assert [line[: len(prefix) + 12] for line in out] == [
        f"{prefix}type: Extern",
        f"{prefix}externalName",
    ]


def test_empty_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "# nothing here\n---\n")
    code, out, err = run_cli(capsys, path)
    assert (code, out) == (2, [])
    assert err == [f"error: {path}: no YAML documents (the file is empty)"]


def test_missing_file_does_not_stop_the_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = str(tmp_path / "nope.yaml")
    code, out, err = run_cli(capsys, missing, write(tmp_path, VALID_CLUSTER))
    assert code == 2
    assert out == ["OK RayCluster/ok-cluster"]
    assert err == [f"error: {missing}: cannot read: No such file or directory"]


def test_document_that_is_not_an_object(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "- just\n- a list\n")
    code, _, err = run_cli(capsys, path)
    assert code == 2
    assert err == [f"error: {path}:1: expected a Kubernetes object (a mapping), got a list"]


def test_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(VALID_CLUSTER))
    assert run_cli(capsys, "-") == (0, ["OK RayCluster/ok-cluster"], [])


def test_timestamps_stay_strings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`kubectl get -o yaml` output carries unquoted timestamps; they must load as strings."""
    text = VALID_CLUSTER.replace(
        "  name: ok-cluster\n", "  name: ok-cluster\n  creationTimestamp: 2025-01-02T03:04:05Z\n"
    )
    text += "status:\n  lastUpdateTime: 2025-01-02T03:04:05Z\n"
    assert run_cli(capsys, write(tmp_path, text)) == (0, ["OK RayCluster/ok-cluster"], [])


RAYJOB_WITH_RUNTIME_ENV = """\
apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: laughs
spec:
  entrypoint: python train.py
  runtimeEnvYAML: |
{runtime_env}  rayClusterSpec:
    headGroupSpec:
      template:
        spec:
          containers:
          - name: ray-head
            image: rayproject/ray:2.46.0
"""

RAYSERVICE_WITH_SERVE_CONFIG = """\
apiVersion: ray.io/v1
kind: RayService
metadata:
  name: laughs
spec:
  serveConfigV2: |
{serve_config}  rayClusterConfig:
    headGroupSpec:
      template:
        spec:
          containers:
          - name: ray-head
            image: rayproject/ray:2.46.0
"""


@pytest.mark.parametrize("size", [398, 584])
def test_alias_bombs_in_cr_fields_are_invalid_and_name_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], size: int
) -> None:
    bomb = alias_bomb(7 if size == 398 else 10, size=size, indent="    ")
    job = RAYJOB_WITH_RUNTIME_ENV.format(runtime_env=bomb)
    service = RAYSERVICE_WITH_SERVE_CONFIG.format(serve_config=bomb)
    code, out, err = run_cli(capsys, write(tmp_path, f"{job}---\n{service}"))
    assert (code, err) == (1, [])
    expands = "expands to more than 25,000 keys and values through its aliases (*name) (line 5)"
    assert out == [
        f"INVALID RayJob/laughs: spec.runtimeEnvYAML: runtimeEnvYAML {expands}",
        f"INVALID RayService/laughs: spec.serveConfigV2: serveConfigV2 {expands}",
    ]


def test_documents_past_the_node_bound_are_invalid_and_name_the_field_and_bound(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 125,000 numbers: 256 KiB, within the size bound, and seconds to parse before this one.
    numbers = "    a: [" + ",".join(["1"] * 125_000) + "]\n"
    job = RAYJOB_WITH_RUNTIME_ENV.format(runtime_env=numbers)
    service = RAYSERVICE_WITH_SERVE_CONFIG.format(serve_config=numbers)
    code, out, err = run_cli(capsys, write(tmp_path, f"{job}---\n{service}"))
    assert (code, err) == (1, [])
    bound = "holds more than 25,000 keys and values (line 1)"
    assert out == [
        f"INVALID RayJob/laughs: spec.runtimeEnvYAML: runtimeEnvYAML {bound}",
        f"INVALID RayService/laughs: spec.serveConfigV2: serveConfigV2 {bound}",
    ]


def test_an_object_past_the_node_bound_is_invalid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    annotations = "".join(f"    example.com/a{i}: x\n" for i in range(30_000))
    job = RAYJOB_WITH_RUNTIME_ENV.format(runtime_env="    pip: [requests]\n")
    job = job.replace("  name: laughs\n", f"  name: laughs\n  annotations:\n{annotations}")
    code, out, err = run_cli(capsys, write(tmp_path, job))
    assert (code, err) == (1, [])
    assert out == [
        "INVALID RayJob/laughs: <root>: the object holds more than 50,000 keys and values "
        "(metadata.managedFields aside), more than the controller takes"
    ]


def test_shared_anchors_in_cr_fields_are_fine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runtime_env = "    env_vars: &env {A: '1'}\n    config: {env: *env}\n"
    path = write(tmp_path, RAYJOB_WITH_RUNTIME_ENV.format(runtime_env=runtime_env))
    assert run_cli(capsys, path) == (0, ["OK RayJob/laughs"], [])


def test_an_alias_bomb_in_the_manifest_itself_is_one_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    laughs = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: laughs\nlaughs:\n"
    laughs += alias_bomb(10, size=584, indent="  ")
    path = write(tmp_path, f"{VALID_CLUSTER}---\n{laughs}")
    code, out, err = run_cli(capsys, path)
    assert (code, out) == (2, [])
    assert err == [
        f"error: {path}:24: refused: the document expands to more than 1,000,000 keys and "
        "values through its aliases (*name)"
    ]


def test_a_manifest_nested_too_deep_is_one_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, VALID_CLUSTER + "status:\n  deep: " + "[" * 3000 + "]" * 3000 + "\n")
    code, out, err = run_cli(capsys, path)
    assert (code, out) == (2, [])
    assert err == [f"error: {path}:13: refused: the document nests deeper than 100 levels"]
