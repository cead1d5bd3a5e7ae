"""Which build inputs make which binaries stale, and what counts as built."""

from __future__ import annotations

import concurrent.futures
import fcntl
from pathlib import Path

from devcluster.control_plane.building import (
    BINARIES,
    KUBECTL_RAY,
    KUBECTL_RAY_VERSION,
    KUBERAY_E2E,
    KUBERAY_MODULE,
    KUBERAY_OPERATOR,
    KUBERAY_SUBMITTER,
    KUBERAY_VERSION,
    STREAMS_SHIM,
    Build,
    build,
)


def module(tmp_path: Path) -> Build:
    root = tmp_path / "controlplane"
    (root / "cmd" / STREAMS_SHIM).mkdir(parents=True)
    (root / "go.mod").write_text("module m\n")
    (root / "go.sum").write_text("a v1 h1:x\n")
    (root / "cmd" / STREAMS_SHIM / "main.go").write_text("package main\n")
    (root / "cmd" / STREAMS_SHIM / "main_test.go").write_text("package main\n")
    return Build(root, tmp_path / "cache")


def test_the_shim_source_keys_only_the_shim(tmp_path: Path) -> None:
    build = module(tmp_path)
    kubernetes, shim = build.key, build.shim_key
    (build.module_dir / "cmd" / STREAMS_SHIM / "main_test.go").write_text("package main // t\n")
    assert (build.key, build.shim_key) == (kubernetes, shim)  # tests do not change a binary
    (build.module_dir / "cmd" / STREAMS_SHIM / "main.go").write_text("package main // x\n")
    assert build.key == kubernetes and build.shim_key != shim
    (build.module_dir / "go.sum").write_text("a v2 h1:y\n")
    assert build.key != kubernetes


def test_a_binary_counts_as_built_only_with_its_stamp(tmp_path: Path) -> None:
    build = module(tmp_path)
    assert not build.is_complete()
    for name in BINARIES:
        build.dir_of(name).mkdir(parents=True, exist_ok=True)
        build.path(name).write_bytes(b"binary")
    assert not any(build.is_built(name) for name in BINARIES)  # a build cut short
    for name in BINARIES:
        (build.dir_of(name) / f"{name}.complete").write_text("v1.37.2\n")
    assert build.is_complete()
    assert build.dir_of(STREAMS_SHIM) != build.dir_of("kube-apiserver")


def test_kuberay_is_keyed_by_its_own_module_apart_from_the_control_plane(tmp_path: Path) -> None:
    build = module(tmp_path)
    (build.module_dir / KUBERAY_MODULE).mkdir()
    (build.module_dir / KUBERAY_MODULE / "go.mod").write_text("module k\n")
    (build.module_dir / KUBERAY_MODULE / "go.sum").write_text("k v1 h1:x\n")
    kubernetes, kuberay = build.key, build.kuberay_key
    assert kuberay.startswith(f"{KUBERAY_OPERATOR}-{KUBERAY_VERSION}-")
    assert build.dir_of(KUBERAY_OPERATOR) == tmp_path / "cache" / kuberay / "bin"
    assert build.module_of(KUBERAY_OPERATOR) == build.module_dir / KUBERAY_MODULE
    assert build.module_of("kube-apiserver") == build.module_dir
    (build.module_dir / KUBERAY_MODULE / "go.sum").write_text("k v2 h1:y\n")
    assert build.key == kubernetes and build.kuberay_key != kuberay  # relinks KubeRay only
    assert KUBERAY_OPERATOR not in BINARIES  # built on request, not by make install


def test_kuberays_e2e_tests_are_built_from_its_module_beside_its_operator(tmp_path: Path) -> None:
    build = module(tmp_path)
    (build.module_dir / KUBERAY_MODULE).mkdir()
    for pin in ("go.mod", "go.sum"):
        (build.module_dir / KUBERAY_MODULE / pin).write_text("module k\n")

    assert len(KUBERAY_E2E) == 6
    for binary in (*KUBERAY_E2E, KUBERAY_SUBMITTER):
        assert build.module_of(binary) == build.module_dir / KUBERAY_MODULE
        assert build.dir_of(binary) == build.dir_of(KUBERAY_OPERATOR)
        assert binary not in BINARIES


def test_the_repository_pins_kuberay_as_a_tool_of_its_own_module() -> None:
    go_mod = Path(__file__).resolve().parents[3] / "controlplane" / KUBERAY_MODULE / "go.mod"
    text = go_mod.read_text()
    tools = text.split("\ntool (\n", 1)[1].split(")", 1)[0].split()
    operator = "github.com/ray-project/kuberay/ray-operator"
    assert tools == [operator, f"{operator}/rayjob-submitter/cmd"]  # the submitter's go.sum
    assert f"github.com/ray-project/kuberay/ray-operator {KUBERAY_VERSION}" in text


def test_a_second_build_waits_for_the_first_and_finds_its_binaries(tmp_path: Path) -> None:
    target = module(tmp_path)
    target.cache_dir.mkdir()
    never_run = tmp_path / "no-go-here"  # the waiting caller must not start a build of its own
    with (target.cache_dir / ".build.lock").open("a") as first:
        fcntl.flock(first, fcntl.LOCK_EX)  # the first build, in progress
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            second = pool.submit(build, target, never_run, quiet=True)
            for name in BINARIES:  # the first build ends: binaries and stamps, then unlock
                target.dir_of(name).mkdir(parents=True, exist_ok=True)
                target.path(name).write_bytes(b"binary")
                (target.dir_of(name) / f"{name}.complete").write_text("v1.37.2\n")
            fcntl.flock(first, fcntl.LOCK_UN)
            assert second.result(timeout=30) == target.bin_dir


def test_pins_edited_during_a_build_leave_the_stamp_beside_the_binary(tmp_path: Path) -> None:
    """Regression: the stamp's folder was named again after `go build`, from pins edited
    meanwhile (a `go get` beside a running build), and writing it failed: no such folder."""
    target = module(tmp_path)
    kuberay = target.module_dir / KUBERAY_MODULE
    kuberay.mkdir()
    (kuberay / "go.mod").write_text("module k\n")
    (kuberay / "go.sum").write_text("k v1 h1:x\n")
    go = tmp_path / "go"  # writes the binary named after -o, then edits the pins
    go.write_text(
        "#!/bin/sh\n"
        'while [ "$1" != "-o" ]; do shift; done\n'
        'echo binary > "$2"\n'
        f"echo 'k v2 h1:y' >> {kuberay / 'go.sum'}\n"
    )
    go.chmod(0o755)
    folder = target.dir_of(KUBERAY_OPERATOR)
    build(target, go, quiet=True, names=(KUBERAY_OPERATOR,))
    assert (folder / f"{KUBERAY_OPERATOR}.complete").read_text() == f"{KUBERAY_VERSION}\n"
    assert target.dir_of(KUBERAY_OPERATOR) != folder  # the next build makes a fresh one


def test_kuberays_test_binaries_keep_their_source_paths(tmp_path: Path) -> None:
    """Regression: built with -trimpath, sampleyaml's path to config/samples (from
    runtime.Caller) was relative and did not resolve where `go test` runs a package's binary;
    a test binary built that way counts as unbuilt, so it is built again."""
    target = module(tmp_path)
    kuberay = target.module_dir / KUBERAY_MODULE
    kuberay.mkdir()
    for pin in ("go.mod", "go.sum"):
        (kuberay / pin).write_text("module k\n")
    go = tmp_path / "go"  # writes the binary named after -o, with the GOFLAGS it was given
    go.write_text(
        '#!/bin/sh\nwhile [ "$1" != "-o" ]; do shift; done\necho "GOFLAGS=$GOFLAGS" > "$2"\n'
    )
    go.chmod(0o755)
    e2e, stale = KUBERAY_E2E[0], target.dir_of(KUBERAY_E2E[0]) / f"{KUBERAY_E2E[0]}.complete"
    target.dir_of(e2e).mkdir(parents=True)
    target.path(e2e).write_text("built with -trimpath\n")
    stale.write_text(f"{KUBERAY_VERSION}\n")  # the stamp such a build wrote
    assert not target.is_built(e2e)
    build(target, go, quiet=True, names=(e2e, KUBERAY_OPERATOR))
    assert target.path(e2e).read_text() == "GOFLAGS=-mod=readonly\n"
    assert target.path(KUBERAY_OPERATOR).read_text() == "GOFLAGS=-mod=readonly -trimpath\n"
    assert target.is_built(e2e) and target.is_built(KUBERAY_OPERATOR)


def test_the_kubectl_plugin_is_built_in_its_own_module_with_its_version(tmp_path: Path) -> None:
    target = module(tmp_path)
    plugin = target.module_dir / KUBECTL_RAY
    plugin.mkdir()
    for pin in ("go.mod", "go.sum"):
        (plugin / pin).write_text("module p\n")
    go = tmp_path / "go"  # writes where it ran and how, into the binary named after -o
    go.write_text(
        '#!/bin/sh\nargs="$*"\nwhile [ "$1" != "-o" ]; do shift; done\necho "$(pwd) $args" > "$2"\n'
    )
    go.chmod(0o755)
    build(target, go, quiet=True, names=(KUBECTL_RAY,))
    ran = target.path(KUBECTL_RAY).read_text()
    assert ran.startswith(f"{plugin} build ")
    assert f"version.Version={KUBECTL_RAY_VERSION}" in ran
    assert target.dir_of(KUBECTL_RAY).parent.name.startswith(f"kubectl-ray-{KUBECTL_RAY_VERSION}-")
    assert target.is_built(KUBECTL_RAY)
