"""With a payload key, the Temporal server stores only ciphertext; our clients still read it.

A RayCluster workflow runs on the real dev server with the in-memory cluster of the workflow
tests behind its activities (the test double of layer 2; what matters here is what goes
through Temporal). The spec carries a marker string, and one status write fails once with
the marker in its message, so specs, results and failure messages are all covered.
"""

from __future__ import annotations

import asyncio
import base64
import os
import re
import sys
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
import pytest_asyncio
from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.common import RetryPolicy, SearchAttributePair, TypedSearchAttributes
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from crds.refs import ObjectRef
from kuberay_temporal.binaries import temporal_cli
from runtime.codec import ENCODING, EncryptionCodec, parse_keys
from runtime.settings import Settings
from runtime.temporal_client import data_converter
from tests.eventually import eventually
from tests.history_scan import decoded_history, raw_history
from tests.workflows.raycluster.fake_cluster import FakeCluster
from tests.workflows.raycluster.test_workflow import SPEC
from worker.codec_server import serving_codec
from worker.running import build_workflow_runner
from workflows import messages
from workflows.messages import RAY_KIND, RAY_NAME, RAY_NAMESPACE
from workflows.raycluster.state import RayClusterInput
from workflows.raycluster.workflow import RayClusterWorkflow

MARKER = f"marker-{uuid.uuid4().hex}"


@activity.defn(name="refused_once")
async def refused_once() -> None:
    """Fails its first attempt with the marker in the message (the started event keeps it)."""
    if activity.info().attempt == 1:
        raise RuntimeError(f"status write refused for image {MARKER}")


@workflow.defn(name="FailingOnce", sandboxed=False)
class FailingOnce:
    """Runs `refused_once` to its success (a test workflow: no sandbox needed)."""

    @workflow.run
    async def run(self) -> None:
        retry = RetryPolicy(initial_interval=timedelta(milliseconds=10))
        timeout = timedelta(seconds=10)
        await workflow.execute_activity(
            refused_once, start_to_close_timeout=timeout, retry_policy=retry
        )


@dataclass
class Encrypted:
    key: str
    client: Client
    workflow_id: str
    cluster: FakeCluster
    name: str


@pytest_asyncio.fixture
async def encrypted(local_env: WorkflowEnvironment, task_queue: str) -> AsyncIterator[Encrypted]:
    key = new_key()
    settings = Settings.from_env({"KUBERAY_TEMPORAL_PAYLOAD_KEY": key})
    client = Client(
        local_env.client.service_client,
        namespace=local_env.client.namespace,
        data_converter=data_converter(settings),
    )
    name = f"enc{uuid.uuid4().hex[:6]}"
    spec: dict[str, Any] = {
        **SPEC,
        "headGroupSpec": {
            "rayStartParams": {},
            "template": {"spec": {"containers": [{"name": "h", "image": f"reg/{MARKER}:1"}]}},
        },
    }
    cluster = FakeCluster(name, spec)
    ref = ObjectRef(kind="RayCluster", namespace="default", name=name, uid=str(uuid.uuid4()))
    async with Worker(
        client,
        task_queue=task_queue,
        workflows=[RayClusterWorkflow],
        activities=cluster.activities(),
        workflow_runner=build_workflow_runner(),
    ):
        handle = await client.start_workflow(
            RayClusterWorkflow.run,
            RayClusterInput(ref=ref),
            id=ref.workflow_id,
            task_queue=task_queue,
            search_attributes=TypedSearchAttributes(
                [
                    SearchAttributePair(RAY_KIND, "RayCluster"),
                    SearchAttributePair(RAY_NAMESPACE, "default"),
                    SearchAttributePair(RAY_NAME, name),
                ]
            ),
        )
        await eventually(lambda: len(cluster.live()) == 3, message="three pods")
        cluster.make_ready()
        await eventually(lambda: cluster.status_writes > 0, within=30, message="a status write")
        yield Encrypted(key, client, handle.id, cluster, name)
        await handle.terminate("test finished")


async def test_the_server_stores_no_readable_payload(
    encrypted: Encrypted, local_env: WorkflowEnvironment
) -> None:
    settings = Settings.from_env({"KUBERAY_TEMPORAL_PAYLOAD_KEY": encrypted.key})
    codec = data_converter(settings).payload_codec
    assert isinstance(codec, EncryptionCodec)

    async def recorded() -> bool:
        # A pass's local activities reach the history with the workflow task that ran them,
        # after their calls: the status write the fixture waited for may not be there yet.
        decoded = await decoded_history(local_env.client, encrypted.workflow_id, codec)
        return MARKER.encode() in decoded

    await eventually(recorded, message="the pass's payloads in the history")
    # The plain client is what anyone without the key has: the server, its database, the UI.
    raw = await raw_history(local_env.client, encrypted.workflow_id)
    assert ENCODING in raw
    assert MARKER.encode() not in raw
    decoded = await decoded_history(local_env.client, encrypted.workflow_id, codec)
    assert ENCODING not in decoded


async def test_a_failure_message_is_stored_encrypted(
    encrypted: Encrypted, local_env: WorkflowEnvironment, task_queue: str
) -> None:
    failing_queue = f"{task_queue}-failing"
    async with Worker(
        encrypted.client,
        task_queue=failing_queue,
        workflows=[FailingOnce],
        activities=[refused_once],
    ):
        workflow_id = f"failing-{uuid.uuid4().hex[:6]}"
        await encrypted.client.execute_workflow(
            FailingOnce.run, id=workflow_id, task_queue=failing_queue
        )
    raw = await raw_history(local_env.client, workflow_id)
    assert b"status write refused" not in raw and MARKER.encode() not in raw

    settings = Settings.from_env({"KUBERAY_TEMPORAL_PAYLOAD_KEY": encrypted.key})
    codec = data_converter(settings).payload_codec
    assert isinstance(codec, EncryptionCodec)
    decoded = await decoded_history(local_env.client, workflow_id, codec)
    assert f"status write refused for image {MARKER}".encode() in decoded


async def test_our_client_reads_the_workflow_and_a_plain_one_cannot(
    encrypted: Encrypted, local_env: WorkflowEnvironment
) -> None:
    progress = await encrypted.client.get_workflow_handle(encrypted.workflow_id).query(
        messages.PROGRESS, result_type=messages.Progress
    )
    assert progress.last_decisions

    plain = local_env.client.get_workflow_handle(encrypted.workflow_id)
    with pytest.raises(KeyError, match="binary/encrypted") as caught:
        await plain.query(messages.PROGRESS, result_type=messages.Progress)
    assert MARKER not in str(caught.value)


def new_key() -> str:
    return base64.b64encode(os.urandom(32)).decode()


async def cli(
    *args: str, env: dict[str, str], base: dict[str, str] | None = None
) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "kuberay_temporal",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**(os.environ if base is None else base), **env},
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_the_cli_shows_status_with_the_key(
    encrypted: Encrypted, local_env: WorkflowEnvironment, task_queue: str
) -> None:
    env = {
        "TEMPORAL_ADDRESS": local_env.client.service_client.config.target_host,
        "KUBERAY_TEMPORAL_TASK_QUEUE": task_queue,
        "KUBERAY_TEMPORAL_PAYLOAD_KEY": encrypted.key,
    }
    target = f"RayCluster/default/{encrypted.name}"

    async def listed() -> str | None:
        code, out, _ = await cli("ls", "--kind", "RayCluster", env=env)
        return out if code == 0 and encrypted.name in out else None

    await eventually(listed, within=20, message="the workflow in `ls`")
    code, out, err = await cli("status", target, env=env)
    assert code == 0, err
    assert f"RayCluster default/{encrypted.name}:" in out and "decided" in out

    # Without the key, or with another one: one clear line, nothing decrypted.
    others = {k: v for k, v in os.environ.items() if k != "KUBERAY_TEMPORAL_PAYLOAD_KEY"}
    cases = [
        ({k: v for k, v in env.items() if k != "KUBERAY_TEMPORAL_PAYLOAD_KEY"}, "are encrypted"),
        ({**env, "KUBERAY_TEMPORAL_PAYLOAD_KEY": new_key()}, "not among the keys"),
    ]
    for case, phrase in cases:
        code, out, err = await cli("status", target, env=case, base=others)
        assert code == 1 and phrase in err and len(err.strip().splitlines()) == 1, err
        assert MARKER not in out + err and "KUBERAY_TEMPORAL_PAYLOAD_KEY" in err


@pytest.mark.parametrize("token", [None, f"token-{uuid.uuid4().hex}"])
async def test_the_temporal_cli_reads_the_history_through_the_codec_server(
    encrypted: Encrypted, local_env: WorkflowEnvironment, token: str | None
) -> None:
    """Temporal's own client of the remote codec protocol, as the UI uses it.

    With a token, the CLI sends it with `--codec-auth`, and without it reads no clear text.
    """
    address = local_env.client.service_client.config.target_host
    codec = EncryptionCodec(parse_keys(encrypted.key))

    async def run_show(*extra: str) -> tuple[int | None, str]:
        process = await asyncio.create_subprocess_exec(
            str(temporal_cli()),
            *("workflow", "show", "-w", encrypted.workflow_id, "--output", "json"),
            *("--address", address, *extra),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(process.communicate(), 60)
        return process.returncode, out.decode() + err.decode()

    async def show(*extra: str) -> str:
        code, output = await run_show(*extra)
        assert code == 0, output
        return output

    def payload_data(history_json: str) -> bytes:
        """Every payload's data in the JSON history (protobuf JSON keeps it base64)."""
        found = re.findall(r'"data": "([A-Za-z0-9+/=]*)"', history_json)
        return b"\n".join(base64.b64decode(data) for data in found)

    encrypted_encoding = base64.b64encode(ENCODING).decode()
    async with serving_codec(codec, [], 0, token=token) as port:
        endpoint = ("--codec-endpoint", f"http://127.0.0.1:{port}")
        auth = () if token is None else ("--codec-auth", f"Bearer {token}")
        decoded = await show(*endpoint, *auth)
        if token is not None:
            code, refused = await run_show(*endpoint)
            assert code != 0 or MARKER not in refused, refused
            assert MARKER not in refused and token not in refused
    assert encrypted_encoding not in decoded
    opened = payload_data(decoded)
    assert MARKER.encode() in opened

    undecoded = await show()
    assert encrypted_encoding in undecoded
    assert MARKER.encode() not in payload_data(undecoded)


async def test_turning_encryption_on_keeps_a_running_workflow_going(
    local_env: WorkflowEnvironment, task_queue: str
) -> None:
    """A workflow started without a key continues under a worker with one (mixed history)."""
    name = f"mix{uuid.uuid4().hex[:6]}"
    spec = {**SPEC, "headGroupSpec": {**SPEC["headGroupSpec"], "rayStartParams": {"x": MARKER}}}
    cluster = FakeCluster(name, spec)
    ref = ObjectRef(kind="RayCluster", namespace="default", name=name, uid=str(uuid.uuid4()))

    def worker(client: Client) -> Worker:
        return Worker(
            client,
            task_queue=task_queue,
            workflows=[RayClusterWorkflow],
            activities=cluster.activities(),
            workflow_runner=build_workflow_runner(),
        )

    async with worker(local_env.client):
        handle = await local_env.client.start_workflow(
            RayClusterWorkflow.run,
            RayClusterInput(ref=ref),
            id=ref.workflow_id,
            task_queue=task_queue,
        )
        await eventually(lambda: len(cluster.live()) == 3, message="three pods, unencrypted")

    settings = Settings.from_env({"KUBERAY_TEMPORAL_PAYLOAD_KEY": new_key()})
    encrypted = Client(
        local_env.client.service_client,
        namespace=local_env.client.namespace,
        data_converter=data_converter(settings),
    )
    async with worker(encrypted):
        cluster.make_ready()
        # As the bridge tells of the pods' change, through a client that encrypts too.
        pods_changed = messages.OwnedChanged(kinds=["Pod"])
        await encrypted.get_workflow_handle(handle.id).signal(messages.OWNED_CHANGED, pods_changed)

        async def ready() -> bool:
            progress = await encrypted.get_workflow_handle(handle.id).query(
                messages.PROGRESS, result_type=messages.Progress
            )
            return progress.state == "ready"

        # The first task may wait for the stopped worker's sticky queue to time out.
        await eventually(ready, within=60, message="ready under the encrypting worker")
        await handle.terminate("test finished")

    raw = await raw_history(local_env.client, handle.id)
    assert MARKER.encode() in raw  # written before the key: stays plaintext
    assert ENCODING in raw  # written after: encrypted
