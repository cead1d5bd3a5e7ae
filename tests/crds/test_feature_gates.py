"""KubeRay's feature gates: v1.7.0's names and defaults, its flag's syntax, the specs refused."""

from __future__ import annotations

import re
import tarfile
from typing import Any

import pytest

from crds.feature_gates import DEFAULTS, UNSUPPORTED, FeatureGates, Gate, parse_feature_gates
from crds.loading import parse_ray_object
from crds.validation.gates import gate_violations
from devcluster.control_plane.building import default_kuberay_source
from tests.crds.test_validation_support import cluster_spec as minimal_cluster_spec

_FEATURES_GO = "ray-operator/pkg/features/features.go"


def _v170_defaults() -> dict[str, bool]:
    """`defaultFeatureGates` as KubeRay v1.7.0's source declares it."""
    with tarfile.open(default_kuberay_source()) as archive:
        member = next(m for m in archive.getmembers() if m.name.endswith(_FEATURES_GO))
        file = archive.extractfile(member)
        assert file is not None
        text = file.read().decode()
    table = text.split("var defaultFeatureGates", 1)[1].split("\n}", 1)[0]
    return {
        name: default == "true"
        for name, default in re.findall(r"(\w+):\s*\{Default:\s*(true|false)", table)
    }


def test_the_names_and_defaults_are_kuberay_v1_7_0s() -> None:
    assert {gate.value: on for gate, on in DEFAULTS.items()} == _v170_defaults()


def test_nothing_set_is_the_defaults_and_says_nothing() -> None:
    assert parse_feature_gates("") == FeatureGates()
    assert Gate.RAY_CRON_JOB not in FeatureGates()
    assert Gate.RAY_JOB_DELETION_POLICY in FeatureGates()
    assert FeatureGates().text() == ""


def test_the_flag_syntax_sets_gates_over_the_defaults() -> None:
    gates = parse_feature_gates(" RayCronJob=true , RayJobDeletionPolicy=false,RayClusterMTLS=1")

    assert Gate.RAY_CRON_JOB in gates and Gate.RAY_CLUSTER_MTLS in gates
    assert Gate.RAY_JOB_DELETION_POLICY not in gates
    assert gates.text() == "RayJobDeletionPolicy=false,RayCronJob=true,RayClusterMTLS=true"
    assert parse_feature_gates(gates.text()) == gates
    # A default restated changes nothing.
    assert parse_feature_gates("RayCronJob=false").text() == ""


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("RayCronjob=true", "unrecognized feature gate: RayCronjob"),
        ("RayCronJob", "missing bool value for RayCronJob"),
        ("RayCronJob=yes", "invalid value of RayCronJob: yes"),
        (
            "SidecarSubmitterRestart=true",
            "SidecarSubmitterRestart=true is not supported: kuberay-temporal does not restart",
        ),
        ("RayClusterStatusConditions=false", "RayClusterStatusConditions=false is not supported"),
    ],
)
def test_a_bad_setting_is_refused_with_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_feature_gates(text)


def test_every_unsupported_setting_is_the_one_away_from_the_default() -> None:
    for gate in UNSUPPORTED:
        parse_feature_gates(f"{gate.value}={str(DEFAULTS[gate]).lower()}")
        with pytest.raises(ValueError, match="is not supported"):
            parse_feature_gates(f"{gate.value}={str(not DEFAULTS[gate]).lower()}")


def _cluster(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "c", "namespace": "ns"},
        "spec": minimal_cluster_spec() | spec,
    }


_ALPHA_FIELDS: dict[str, tuple[dict[str, Any], Gate, str]] = {
    "networkPolicy": (
        {"networkPolicy": {}},
        Gate.RAY_CLUSTER_NETWORK_POLICY,
        "spec.networkPolicy: requires the RayClusterNetworkPolicy feature gate to be enabled",
    ),
    "tlsOptions": (
        {"tlsOptions": {"enabled": True}},
        Gate.RAY_CLUSTER_MTLS,
        "spec.tlsOptions: requires the RayClusterMTLS feature gate to be enabled",
    ),
    "historyServerOptions": (
        {"historyServerOptions": {}},
        Gate.RAY_CLUSTER_HISTORY_SERVER,
        "spec.historyServerOptions: RayClusterHistoryServer feature gate is not enabled",
    ),
    "rocksdb": (
        {"gcsFaultToleranceOptions": {"backend": "rocksdb"}},
        Gate.GCS_FAULT_TOLERANCE_EMBEDDED_STORAGE,
        "spec.gcsFaultToleranceOptions.backend: the embedded RocksDB GCS fault tolerance "
        "backend (GcsFaultToleranceOptions.Backend: 'rocksdb') requires the "
        "GCSFaultToleranceEmbeddedStorage feature gate to be enabled",
    ),
}


@pytest.mark.parametrize("field", sorted(_ALPHA_FIELDS))
def test_an_alpha_field_is_refused_with_kuberays_message_until_its_gate_is_on(field: str) -> None:
    spec, gate, message = _ALPHA_FIELDS[field]
    cluster = parse_ray_object(_cluster(**spec))

    assert [str(v) for v in gate_violations(cluster, FeatureGates())] == [message]
    on = FeatureGates(FeatureGates().enabled | {gate})
    assert gate_violations(cluster, on) == []


def test_a_spec_without_gated_fields_needs_no_gate() -> None:
    assert gate_violations(parse_ray_object(_cluster()), FeatureGates()) == []


def test_every_kind_is_held_to_the_gates_of_the_cluster_it_describes() -> None:
    cluster_spec = minimal_cluster_spec() | {"networkPolicy": {}}
    job = {"entrypoint": "python x.py", "rayClusterSpec": cluster_spec}
    objects = {
        "RayJob": ({"spec": job}, "spec.rayClusterSpec.networkPolicy"),
        "RayService": ({"spec": {"rayClusterConfig": cluster_spec}}, "spec.rayClusterConfig"),
        "RayCronJob": (
            {"spec": {"schedule": "* * * * *", "jobTemplate": job}},
            "spec.jobTemplate.rayClusterSpec.networkPolicy",
        ),
    }
    for kind, (body, path) in objects.items():
        obj = parse_ray_object(
            {"apiVersion": "ray.io/v1", "kind": kind, "metadata": {"name": "x"}} | body
        )
        (found,) = gate_violations(obj, FeatureGates())
        assert found.path.startswith(path), kind


def test_without_the_deletion_policy_gate_deletion_rules_and_suspended_groups_are_refused() -> None:
    off = parse_feature_gates("RayJobDeletionPolicy=false")
    job = parse_ray_object(
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayJob",
            "metadata": {"name": "j"},
            "spec": {
                "entrypoint": "python x.py",
                "deletionStrategy": {"deletionRules": []},
                "rayClusterSpec": minimal_cluster_spec(),
            },
        }
    )
    assert [str(v) for v in gate_violations(job, off)] == [
        "spec.deletionStrategy: RayJobDeletionPolicy feature gate must be enabled to use "
        "DeletionStrategy"
    ]
    spec = minimal_cluster_spec()
    spec["workerGroupSpecs"][0]["suspend"] = True
    name = spec["workerGroupSpecs"][0]["groupName"]
    assert [str(v) for v in gate_violations(parse_ray_object(_cluster(**spec)), off)] == [
        f"spec.workerGroupSpecs[0].suspend: worker group {name} can be suspended only when the "
        "RayJobDeletionPolicy feature gate is enabled"
    ]
    assert gate_violations(job, FeatureGates()) == []
