"""Which build inputs make which binaries stale, and what counts as built."""

from __future__ import annotations

import concurrent.futures
import fcntl
import io
import tarfile
from pathlib import Path

import pytest

from devcluster.control_plane.building import (
    BINARIES,
    KUBECTL_RAY,
    KUBERAY_ARCHIVE,
    KUBERAY_E2E,
    KUBERAY_OPERATOR,
    KUBERAY_SOURCE_VARIABLE,
    KUBERAY_SUBMITTER,
    KUBERAY_VERSION,
    STREAMS_SHIM,
    Build,
    BuildError,
    build,
    default_kuberay_source,
    extract_kuberay,
)

TOP = "kuberay-1.7.0"
"""The top folder of KubeRay's source archive, as GitHub names a tag's archive."""


def archive(path: Path, files: dict[str, str], top: str = TOP) -> Path:
    """A .tar.gz of `files` below one top folder (KubeRay's tree, in small)."""
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


KUBERAY_TREE = {"go.mod": "module r\n", "ray-operator/go.mod": "module o\n"}


def module(tmp_path: Path) -> Build:
    root = tmp_path / "controlplane"
    (root / "cmd" / STREAMS_SHIM).mkdir(parents=True)
    (root / "go.mod").write_text("module m\n")
    (root / "go.sum").write_text("a v1 h1:x\n")
    (root / "cmd" / STREAMS_SHIM / "main.go").write_text("package main\n")
    (root / "cmd" / STREAMS_SHIM / "main_test.go").write_text("package main\n")
    source = archive(tmp_path / KUBERAY_ARCHIVE, KUBERAY_TREE)
    return Build(root, tmp_path / "cache", source)


def fake_go(tmp_path: Path, writes: str) -> Path:
    """A `go` that writes `writes` (shell words) into the binary named after -o."""
    go = tmp_path / "go"
    go.write_text(
        f'#!/bin/sh\nargs="$*"\nwhile [ "$1" != "-o" ]; do shift; done\necho {writes} > "$2"\n'
    )
    go.chmod(0o755)
    return go


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


def test_kuberay_is_keyed_by_its_source_archive_apart_from_the_control_plane(
    tmp_path: Path,
) -> None:
    build = module(tmp_path)
    kubernetes, kuberay = build.key, build.kuberay_key
    assert kuberay.startswith(f"kuberay-{KUBERAY_VERSION}-")
    for program in (KUBERAY_OPERATOR, KUBERAY_SUBMITTER, KUBECTL_RAY, *KUBERAY_E2E):
        assert build.dir_of(program) == tmp_path / "cache" / kuberay / "bin"
        assert program not in BINARIES  # built on request, not by make install
    tree = tmp_path / "cache" / kuberay / "src"
    assert build.module_of(KUBERAY_OPERATOR) == tree / "ray-operator"
    assert build.module_of(KUBERAY_E2E[0]) == tree / "ray-operator"
    assert build.module_of(KUBECTL_RAY) == tree  # KubeRay's root module
    assert build.module_of("kube-apiserver") == build.module_dir
    archive(build.kuberay_source, {**KUBERAY_TREE, "LICENSE": "x\n"})
    rebuilt = Build(build.module_dir, build.cache_dir, build.kuberay_source)
    assert rebuilt.key == kubernetes and rebuilt.kuberay_key != kuberay  # relinks KubeRay only


def test_a_missing_source_archive_says_where_it_was_looked_for(tmp_path: Path) -> None:
    target = Build(tmp_path, tmp_path / "cache", tmp_path / "nowhere.tar.gz")
    with pytest.raises(BuildError, match=f"nowhere.tar.gz .*{KUBERAY_SOURCE_VARIABLE}"):
        build(target, tmp_path / "no-go", quiet=True, names=(KUBERAY_OPERATOR,))


def test_the_source_archive_is_found_beside_the_checkout_unless_set(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(KUBERAY_SOURCE_VARIABLE, raising=False)
    checkout = Path(__file__).resolve().parents[3]
    expected = checkout.parent / "shared" / "kuberay" / "src" / f"kuberay-{KUBERAY_VERSION}.tar.gz"
    assert default_kuberay_source() == expected
    monkeypatch.setenv(KUBERAY_SOURCE_VARIABLE, str(tmp_path / "k.tar.gz"))
    assert default_kuberay_source() == tmp_path / "k.tar.gz"


def test_the_tree_is_extracted_once_with_its_top_folder_removed(tmp_path: Path) -> None:
    target = module(tmp_path)
    tree = extract_kuberay(target)
    assert tree == target.kuberay_tree
    assert (tree / "ray-operator" / "go.mod").read_text() == "module o\n"
    (tree / "go.mod").write_text("edited\n")
    assert extract_kuberay(target) == tree and (tree / "go.mod").read_text() == "edited\n"


def test_an_archive_that_is_not_kuberays_tree_is_refused(tmp_path: Path) -> None:
    target = module(tmp_path)
    archive(target.kuberay_source, {"go.mod": "module r\n"})  # no ray-operator/
    fresh = Build(target.module_dir, target.cache_dir, target.kuberay_source)
    with pytest.raises(BuildError, match="not KubeRay's source"):
        extract_kuberay(fresh)
    assert not (fresh.kuberay_tree.parent / "src.complete").exists()  # tried again next time


def test_an_archive_reaching_out_of_its_folder_is_refused(tmp_path: Path) -> None:
    target = module(tmp_path)
    with tarfile.open(target.kuberay_source, "w:gz") as tar:
        info = tarfile.TarInfo(f"{TOP}/go.mod")
        info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(info)
    fresh = Build(target.module_dir, target.cache_dir, target.kuberay_source)
    with pytest.raises(BuildError, match="cannot extract"):
        extract_kuberay(fresh)


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


def test_a_source_edited_during_a_build_leaves_the_stamp_beside_the_binary(
    tmp_path: Path,
) -> None:
    """Regression: the stamp's folder was named again after `go build`, from inputs edited
    meanwhile, and writing it failed: no such folder."""
    target = module(tmp_path)
    go = tmp_path / "go"  # writes the binary named after -o, then changes the archive
    go.write_text(
        "#!/bin/sh\n"
        'while [ "$1" != "-o" ]; do shift; done\n'
        'echo binary > "$2"\n'
        f"echo more >> {target.kuberay_source}\n"
    )
    go.chmod(0o755)
    folder = target.dir_of(KUBERAY_OPERATOR)
    build(target, go, quiet=True, names=(KUBERAY_OPERATOR,))
    assert (folder / f"{KUBERAY_OPERATOR}.complete").read_text() == f"{KUBERAY_VERSION}\n"
    fresh = Build(target.module_dir, target.cache_dir, target.kuberay_source)
    assert fresh.dir_of(KUBERAY_OPERATOR) != folder  # the next build makes a fresh one


def test_kuberays_test_binaries_keep_their_source_paths(tmp_path: Path) -> None:
    """Regression: built with -trimpath, sampleyaml's path to config/samples (from
    runtime.Caller) was relative and did not resolve where `go test` runs a package's binary;
    a test binary built that way counts as unbuilt, so it is built again."""
    target = module(tmp_path)
    go = fake_go(tmp_path, '"GOFLAGS=$GOFLAGS"')
    e2e, stale = KUBERAY_E2E[0], target.dir_of(KUBERAY_E2E[0]) / f"{KUBERAY_E2E[0]}.complete"
    target.dir_of(e2e).mkdir(parents=True)
    target.path(e2e).write_text("built with -trimpath\n")
    stale.write_text(f"{KUBERAY_VERSION}\n")  # the stamp such a build wrote
    assert not target.is_built(e2e)
    build(target, go, quiet=True, names=(e2e, KUBERAY_OPERATOR))
    assert target.path(e2e).read_text() == "GOFLAGS=-mod=readonly\n"
    assert target.path(KUBERAY_OPERATOR).read_text() == "GOFLAGS=-mod=readonly -trimpath\n"
    assert target.is_built(e2e) and target.is_built(KUBERAY_OPERATOR)


def test_every_kuberay_program_is_built_in_the_extracted_tree(tmp_path: Path) -> None:
    target = module(tmp_path)
    go = fake_go(tmp_path, '"$(pwd) $args"')  # where it ran and how
    programs = (KUBERAY_OPERATOR, KUBERAY_SUBMITTER, KUBECTL_RAY, KUBERAY_E2E[0])
    build(target, go, quiet=True, names=programs)
    tree = target.kuberay_tree
    ran = {name: target.path(name).read_text() for name in programs}
    assert ran[KUBERAY_OPERATOR].startswith(f"{tree / 'ray-operator'} build ")
    assert ran[KUBERAY_OPERATOR].rstrip().endswith(" .")
    assert ran[KUBERAY_SUBMITTER].rstrip().endswith(" ./rayjob-submitter/cmd")
    assert ran[KUBERAY_E2E[0]].startswith(f"{tree / 'ray-operator'} test -c ")
    assert ran[KUBERAY_E2E[0]].rstrip().endswith(" ./test/e2e")
    assert ran[KUBECTL_RAY].startswith(f"{tree} build ")  # the root module
    assert f"version.Version={KUBERAY_VERSION} " in ran[KUBECTL_RAY]
    assert all(target.is_built(name) for name in programs)
