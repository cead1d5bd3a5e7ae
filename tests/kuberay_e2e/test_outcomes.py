"""The account covers KubeRay v1.7.0's e2e tests: every package, every top-level test function."""

from __future__ import annotations

import re
import tarfile
from collections import defaultdict

from devcluster.control_plane.building import KUBERAY_E2E_PACKAGES, default_kuberay_source
from tests.kuberay_e2e.outcomes import CASES, NOT_APPLICABLE

# `ray-operator/test/<package>/<file>_test.go` below the archive's one top folder.
_TEST_FILE = re.compile(r"^[^/]+/ray-operator/test/([^/]+)/[^/]+_test\.go$")
_TEST_FUNCTION = re.compile(r"^func (Test\w*)\(t \*testing\.T\)", re.MULTILINE)
_SUPPORT = '"github.com/ray-project/kuberay/ray-operator/test/support"'
"""What an end-to-end test imports for its cluster (`test/utils` holds a unit test)."""


def _v170_tests() -> dict[str, set[str]]:
    """Each end-to-end test package of KubeRay v1.7.0's source, with its test functions."""
    found: dict[str, set[str]] = defaultdict(set)
    with tarfile.open(default_kuberay_source()) as archive:
        for member in archive.getmembers():
            matched = _TEST_FILE.match(member.name)
            if not matched or not member.isfile():
                continue
            file = archive.extractfile(member)
            assert file is not None
            text = file.read().decode()
            if _SUPPORT in text:
                found[matched[1]].update(_TEST_FUNCTION.findall(text))
    return {package: names for package, names in found.items() if names}


def test_every_package_is_run_or_says_why_not() -> None:
    packages = set(_v170_tests())

    assert "e2e" in packages and "sampleyaml" in packages  # the archive was read
    assert packages == set(KUBERAY_E2E_PACKAGES) | set(NOT_APPLICABLE)
    assert not set(KUBERAY_E2E_PACKAGES) & set(NOT_APPLICABLE)


def test_every_test_function_has_a_case_and_every_case_a_test_function() -> None:
    tests = _v170_tests()
    wanted = {(package, name) for package in KUBERAY_E2E_PACKAGES for name in tests[package]}

    assert {(case.package, case.name) for case in CASES} == wanted


def test_a_test_function_run_in_parts_names_each_part_once() -> None:
    """A test run as several cases (a subtest apart with `only`) runs each subtest once: the
    case without `only` skips what the others run."""
    parts: dict[tuple[str, str], list[str]] = defaultdict(list)
    for case in CASES:
        parts[(case.package, case.name)].append(case.only)
    for (package, name), onlys in parts.items():
        assert len(onlys) == len(set(onlys)), (package, name)
        if len(onlys) > 1:
            (whole,) = [c for c in CASES if (c.package, c.name, c.only) == (package, name, "")]
            for only in filter(None, onlys):
                assert re.search(whole.skip, f"{name}/{only}"), (name, only)
