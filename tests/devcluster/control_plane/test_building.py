"""Which build inputs make which binaries stale, and what counts as built."""

from __future__ import annotations

from pathlib import Path

from devcluster.control_plane.building import BINARIES, STREAMS_SHIM, Build


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
