"""GitHub's archive URLs and their local files, and the server that answers for GitHub."""

from __future__ import annotations

import hashlib
import re
import socket
import ssl
import zipfile
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
import pytest_asyncio
from aiohttp.abc import AbstractResolver, ResolveResult

from devcluster.networking import archives, hosts
from tests.reference import KUBERAY_DIR

COMMIT = "78b4a5da38796123d9f9ffff59bab2792a043e95"
REFERENCE = KUBERAY_DIR / "archives"


def test_a_commits_archive_and_a_branchs_head_map_to_githubs_urls(tmp_path: Path) -> None:
    commit = archives.archive_for(f"test_dag-{COMMIT}.zip", "AB" * 32, tmp_path)
    assert commit is not None
    assert commit.url == f"https://github.com/ray-project/test_dag/archive/{COMMIT}.zip"
    assert commit.codeload_path == f"/ray-project/test_dag/zip/{COMMIT}"
    assert (commit.file, commit.sha256) == (tmp_path / f"test_dag-{COMMIT}.zip", "ab" * 32)
    branch = archives.archive_for("serve_config_examples-master.zip", "0" * 64, tmp_path)
    assert branch is not None
    assert branch.url == (
        "https://github.com/ray-project/serve_config_examples/archive/refs/heads/master.zip"
    )
    assert branch.codeload_path == "/ray-project/serve_config_examples/zip/refs/heads/master"
    for other in ("README.md", "SHA256SUMS", "test_dag.zip", "a-b.tar.gz", "../x-y.zip"):
        assert archives.archive_for(other, "0" * 64, tmp_path) is None


def test_sums_list_the_archives_and_nothing_else(tmp_path: Path) -> None:
    text = (
        f"{'1' * 64}  test_dag-{COMMIT}.zip\n"
        f"{'2' * 64} *serve_workloads-master.zip\n"  # sha256sum's binary mode
        "# a comment\n"
        f"{'3' * 64}  README.md\n"
        f"not-a-digest  test_dag-{COMMIT}.zip\n"
    )
    found = archives.parse_sums(text, tmp_path)
    assert [(a.repo, a.ref, a.sha256) for a in found] == [
        ("test_dag", COMMIT, "1" * 64),
        ("serve_workloads", "refs/heads/master", "2" * 64),
    ]


def test_the_reference_folder_has_every_url_its_readme_maps() -> None:
    """The file names are the mapping; the README's full URLs must all be among them."""
    readme = (REFERENCE / "README.md").read_text()
    listed = set(re.findall(r"`(https://github\.com/ray-project/[\w/]+\.zip)`", readme))
    served = {a.url for a in archives.parse_sums((REFERENCE / "SHA256SUMS").read_text(), REFERENCE)}
    assert listed, "the README lists no URL"
    assert listed <= served
    sums = [line for line in (REFERENCE / "SHA256SUMS").read_text().splitlines() if line]
    assert len(served) == len(sums)


def test_a_file_missing_or_unlike_its_sum_is_not_served(tmp_path: Path) -> None:
    good, bad = tmp_path / f"test_dag-{COMMIT}.zip", tmp_path / "test_dag-master.zip"
    good.write_bytes(b"the archive")
    bad.write_bytes(b"truncated")
    (tmp_path / "SHA256SUMS").write_text(
        f"{hashlib.sha256(b'the archive').hexdigest()}  {good.name}\n"
        f"{hashlib.sha256(b'the whole archive').hexdigest()}  {bad.name}\n"
        f"{'0' * 64}  serve_workloads-master.zip\n"
    )
    assert [a.file for a in archives.load_archives(tmp_path)] == [good]
    assert archives.load_archives(tmp_path / "absent") == []


def test_the_certificates_are_made_once(tmp_path: Path) -> None:
    first = archives.issue_certificates(tmp_path / "pki")
    made = [p.read_bytes() for p in (first.ca, first.cert, first.key)]
    again = archives.issue_certificates(tmp_path / "pki")
    assert again == first
    assert [p.read_bytes() for p in (again.ca, again.cert, again.key)] == made
    assert first.key.stat().st_mode & 0o077 == 0
    assert not list((tmp_path / "pki").glob("ca.key"))  # nothing else can ever be signed


def test_the_bundle_is_the_systems_cas_then_the_nodes(tmp_path: Path) -> None:
    system = archives.system_bundle()
    assert system is not None, "no system CA bundle on this machine"
    ca = archives.issue_certificates(tmp_path).ca
    bundle = archives.write_bundle(system, ca, tmp_path / "bundle.pem")
    assert bundle.read_bytes().startswith(system.read_bytes())
    assert bundle.read_bytes().endswith(ca.read_bytes())


def test_the_hosts_files_name_the_node_for_github_only_while_it_serves() -> None:
    served = archives.ServedArchives("10.244.0.1", 4321, Path("/b.pem"), "/etc/ssl/x.crt")
    text = hosts.hosts_file([], [], [], node_names=served.node_names())
    assert "10.244.0.1\tgithub.com codeload.github.com" in text.splitlines()
    assert "github" not in hosts.hosts_file([], [], [])
    assert served.env() == {
        "SSL_CERT_FILE": "/etc/ssl/x.crt",
        "REQUESTS_CA_BUNDLE": "/etc/ssl/x.crt",
    }


class _ToServer(AbstractResolver):
    """Resolves every name to the test server, as the pods' hosts file and redirect do."""

    def __init__(self, port: int) -> None:
        self.port = port

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        return [
            ResolveResult(
                hostname=host,
                host="127.0.0.1",
                port=self.port,
                family=socket.AF_INET,
                proto=0,
                flags=socket.AI_NUMERICHOST,
            )
        ]

    async def close(self) -> None:
        pass


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """An archives folder of one real zip, with its SHA256SUMS."""
    directory = tmp_path / "archives"
    directory.mkdir()
    zip_path = directory / f"test_dag-{COMMIT}.zip"
    with zipfile.ZipFile(zip_path, "w") as archive:
        archive.writestr(f"test_dag-{COMMIT}/fruit.py", "deployment_graph = None\n")
    digest = hashlib.sha256(zip_path.read_bytes()).hexdigest()
    (directory / "SHA256SUMS").write_text(f"{digest}  {zip_path.name}\n")
    return directory


@pytest_asyncio.fixture
async def served(
    folder: Path, tmp_path: Path
) -> AsyncIterator[tuple[archives.ServedArchives, aiohttp.ClientSession]]:
    server = archives.ArchiveServer(folder, tmp_path / "state")
    found = await server.start("127.0.0.1")
    assert found is not None
    # Trust the archive CA alone: the answers must verify against it, not a public CA.
    tls = ssl.create_default_context(cafile=str(tmp_path / "state" / "ca.crt"))
    connector = aiohttp.TCPConnector(resolver=_ToServer(found.port), ssl=tls)
    try:
        async with aiohttp.ClientSession(connector=connector) as session:
            yield found, session
    finally:
        await server.stop()


async def test_a_listed_url_answers_with_its_zip_through_codeload(
    served: tuple[archives.ServedArchives, aiohttp.ClientSession], folder: Path
) -> None:
    _, session = served
    url = f"https://github.com/ray-project/test_dag/archive/{COMMIT}.zip"
    async with session.get(url) as response:
        assert response.status == 200
        assert [str(r.url) for r in response.history] == [url]
        assert str(response.url) == f"https://codeload.github.com/ray-project/test_dag/zip/{COMMIT}"
        body = await response.read()
    assert response.headers["Content-Type"] == "application/zip"
    wanted = (folder / "SHA256SUMS").read_text().split()[0]
    assert hashlib.sha256(body).hexdigest() == wanted


async def test_every_other_path_is_not_found(
    served: tuple[archives.ServedArchives, aiohttp.ClientSession],
) -> None:
    _, session = served
    for url in (
        "https://github.com/",
        "https://github.com/ray-project/test_dag",
        "https://github.com/ray-project/test_dag/archive/master.zip",
        "https://github.com/ray-project/kuberay/archive/master.zip",
        f"https://github.com/ray-project/test_dag/archive/{COMMIT}.tar.gz",
        f"https://codeload.github.com/ray-project/test_dag/zip/{COMMIT}.zip",
        f"https://github.com/ray-project/test_dag/zip/{COMMIT}",  # codeload's path, wrong host
        f"https://codeload.github.com/ray-project/test_dag/archive/{COMMIT}.zip",
    ):
        async with session.get(url, allow_redirects=False) as response:
            assert response.status == 404, url
    async with session.post(f"https://github.com/ray-project/test_dag/archive/{COMMIT}.zip") as r:
        assert r.status == 404


async def test_the_certificate_is_for_githubs_names_only(
    served: tuple[archives.ServedArchives, aiohttp.ClientSession],
) -> None:
    _, session = served
    with pytest.raises(aiohttp.ClientConnectorCertificateError, match=r"pypi\.org"):
        await session.get("https://pypi.org/simple/")
