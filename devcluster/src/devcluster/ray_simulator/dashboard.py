"""A simulated Ray head's HTTP side: the dashboard's Jobs and Serve API and Serve's proxy.

`SimulatedHead` holds one head's jobs and Serve state and answers as Ray 2.60 does, down to
the status codes and content types clients branch on: a duplicate submission id is a 500
whose text says "Please use a different submission_id", an unknown job a plain-text 404,
a bad Serve config a 400. With `token` set, every dashboard call but `/api/gcs_healthz`
needs `x-ray-authorization: Bearer <token>`, as with `RAY_AUTH_MODE=token`. With `faults`,
some proxied calls fail (see `faults`).

With `state_file`, jobs and Serve state are written there on every change and read back on
`start`, so a head outlives a devcluster restart as a real head outlives its control plane's.

Each head listens on 127.0.0.1, on an ephemeral port for its dashboard and, once Serve is
started, another for Serve's HTTP proxy; the simulated runtime maps the pod's dashboard and
Serve ports onto them (see `SimulatedHeads`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import secrets
import string
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aiohttp import web

from devcluster.ray_simulator.faults import DashboardFaults
from devcluster.ray_simulator.jobs import Plan, SimulatedJob, plan
from devcluster.ray_simulator.serve import InvalidServeConfig, ServedApp, SimulatedServe

Clock = Callable[[], float]
AUTH_HEADER = "x-ray-authorization"
RAY_VERSION = "2.60.0"
_ALPHABET = string.ascii_letters + string.digits


def _text(status: int, text: str) -> web.Response:
    return web.Response(status=status, text=text, content_type="text/plain")


def _json(data: Any) -> web.Response:
    return web.Response(text=json.dumps(data), content_type="application/json")


_INDEX = "<!doctype html><title>Ray Dashboard (simulated)</title><div id=root></div>\n"


class SimulatedHead:
    """One Ray head's dashboard and Serve proxy, with no Ray behind them (a test double)."""

    def __init__(
        self,
        *,
        token: str | None = None,
        serve_delay: float = 1.0,
        job_seconds: float | None = None,
        clock: Clock = time.time,
        state_file: Path | None = None,
        faults: DashboardFaults | None = None,
    ) -> None:
        self.jobs: dict[str, SimulatedJob] = {}
        self.faults = faults
        self.serve = SimulatedServe(delay=serve_delay)
        self._token = token
        self._job_seconds = job_seconds
        self._clock = clock
        self._state_file = state_file
        self._runners: dict[str, web.AppRunner] = {}
        self.ports: dict[str, int] = {}  # "dashboard" / "serve" -> local port

    # --- the dashboard -------------------------------------------------------------------

    def dashboard_app(self) -> web.Application:
        """The dashboard's routes (Jobs, Serve, version, GCS health)."""
        faulty = [self.faults.middleware] if self.faults is not None else []
        app = web.Application(middlewares=[*faulty, self._auth])
        app.router.add_get("/", self._index)
        app.router.add_get("/api/gcs_healthz", self._healthz)
        app.router.add_get("/api/version", self._version)
        app.router.add_post("/api/jobs/", self._submit)
        app.router.add_get("/api/jobs/", self._list)
        app.router.add_get("/api/jobs/{id}", self._info)
        app.router.add_delete("/api/jobs/{id}", self._delete)
        app.router.add_post("/api/jobs/{id}/stop", self._stop)
        app.router.add_get("/api/jobs/{id}/logs", self._logs)
        app.router.add_get("/api/serve/applications/", self._serve_get)
        app.router.add_put("/api/serve/applications/", self._serve_put)
        app.router.add_delete("/api/serve/applications/", self._serve_delete)
        return app

    @web.middleware
    async def _auth(self, request: web.Request, handler: Any) -> web.StreamResponse:
        # Public without a token, as in Ray: the web page and the GCS health check.
        if self._token and request.path not in ("/", "/api/gcs_healthz"):
            # Ray also reads `Authorization`; through the API server's proxy only ours arrives.
            given = request.headers.get(AUTH_HEADER) or request.headers.get("Authorization")
            if not given:
                return _text(401, "Unauthorized: Missing authentication token")
            if given != f"Bearer {self._token}":
                return _text(403, "Forbidden: Invalid authentication token")
        response: web.StreamResponse = await handler(request)
        return response

    async def _index(self, _: web.Request) -> web.Response:
        # The dashboard's web page: `kubectl ray job submit` waits for it to answer.
        return web.Response(text=_INDEX, content_type="text/html")

    async def _healthz(self, _: web.Request) -> web.Response:
        return web.Response(text="success", content_type="application/text")

    async def _version(self, _: web.Request) -> web.Response:
        return _json(
            {
                "version": "4",
                "ray_version": RAY_VERSION,
                "ray_commit": "simulator",
                "session_name": "session_simulated",
            }
        )

    def submit(self, body: Any) -> tuple[int, str | None, str]:
        """Submit a job: (status code, submission id, error text)."""
        if not isinstance(body, dict) or not isinstance(body.get("entrypoint"), str):
            return (
                400,
                None,
                "TypeError: JobSubmitRequest.__init__() missing 1 required "
                "positional argument: 'entrypoint'",
            )
        job_id = body.get("submission_id") or "raysubmit_" + "".join(
            secrets.choice(_ALPHABET) for _ in range(16)
        )
        if job_id in self.jobs:
            return (
                500,
                job_id,
                (
                    f"ValueError: Job with submission_id {job_id} already exists. "
                    "Please use a different submission_id."
                ),
            )
        entrypoint = body["entrypoint"]
        default = self._job_seconds
        self.jobs[job_id] = SimulatedJob(
            submission_id=job_id,
            entrypoint=entrypoint,
            submitted_at=self._clock(),
            plan=plan(entrypoint) if default is None else plan(entrypoint, default),
            metadata=body.get("metadata"),
            runtime_env=body.get("runtime_env"),
        )
        self._save()
        return 200, job_id, ""

    async def _submit(self, request: web.Request) -> web.Response:
        try:
            body = await request.json()
        except ValueError:
            return _text(400, "JSONDecodeError: the request body is not JSON")
        status, job_id, error = self.submit(body)
        if status != 200:
            return _text(status, error)
        return _json({"job_id": job_id, "submission_id": job_id})

    def _job(self, request: web.Request) -> SimulatedJob:
        job = self.jobs.get(request.match_info["id"])
        if job is None:
            text = f"Job {request.match_info['id']} does not exist"
            raise web.HTTPNotFound(text=text, content_type="text/plain")
        return job

    async def _list(self, _: web.Request) -> web.Response:
        now = self._clock()
        return _json([job.info(now) for job in self.jobs.values()])

    async def _info(self, request: web.Request) -> web.Response:
        return _json(self._job(request).info(self._clock()))

    async def _stop(self, request: web.Request) -> web.Response:
        stopped = self._job(request).stop(self._clock())
        self._save()
        return _json({"stopped": stopped})

    async def _logs(self, request: web.Request) -> web.Response:
        return _json({"logs": self._job(request).logs(self._clock())})

    async def _delete(self, request: web.Request) -> web.Response:
        job, now = self._job(request), self._clock()
        if not job.terminal(now):
            return _text(
                500,
                f"RuntimeError: Attempted to delete job '{job.submission_id}', but it is in a "
                f"non-terminal state {job.status(now)}.",
            )
        del self.jobs[job.submission_id]
        self._save()
        return _json({"deleted": True})

    async def _serve_get(self, _: web.Request) -> web.Response:
        return _json(self.serve.details(self._clock()))

    async def _serve_put(self, request: web.Request) -> web.Response:
        try:
            self.serve.apply(await request.json(), self._clock())
        except (ValueError, InvalidServeConfig) as err:
            return _text(400, str(err))
        self._save()
        if "serve" not in self.ports:  # Ray starts Serve's proxy with the first config
            await self._open("serve", self.serve_app())
        return web.Response(status=200)

    async def _serve_delete(self, _: web.Request) -> web.Response:
        self.serve.shutdown()
        self._save()
        await self._close("serve")
        return web.Response(status=200)

    # --- Serve's HTTP proxy ----------------------------------------------------------------

    def serve_app(self) -> web.Application:
        """Serve's HTTP proxy: `/-/healthz`, and each RUNNING application under its prefix."""
        app = web.Application()
        app.router.add_get("/-/healthz", self._serve_healthz)
        app.router.add_route("*", "/{tail:.*}", self._serve_request)
        return app

    async def _serve_healthz(self, _: web.Request) -> web.Response:
        started = self.serve.started_at
        if started is None or self._clock() < started + self.serve.delay:
            return _text(503, "This node is being drained or Serve is starting.")
        return _text(200, "success")

    async def _serve_request(self, request: web.Request) -> web.Response:
        name = self.serve.serving(request.path, self._clock())
        if name is None:
            return _text(
                404,
                f"Path '{request.path}' not found. Ping http://.../-/routes for available routes.",
            )
        return _text(200, f"simulated response of Serve application {name}")

    # --- listening -----------------------------------------------------------------------

    async def start(self) -> int:
        """Read the saved state, serve the dashboard on 127.0.0.1 (an ephemeral port, returned)."""
        self._load()
        if self.serve.started_at is not None:
            await self._open("serve", self.serve_app())
        return await self._open("dashboard", self.dashboard_app())

    def serve_port(self) -> int | None:
        """The local port of Serve's proxy, None while Serve is not running."""
        return self.ports.get("serve")

    async def stop(self) -> None:
        """Stop listening (the head pod is gone; its jobs and apps go with it)."""
        for name in list(self._runners):
            await self._close(name)

    async def _open(self, name: str, app: web.Application) -> int:
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        self._runners[name] = runner
        self.ports[name] = int(runner.addresses[0][1])
        return self.ports[name]

    async def _close(self, name: str) -> None:
        runner = self._runners.pop(name, None)
        self.ports.pop(name, None)
        if runner is not None:
            await runner.cleanup()

    # --- surviving a restart ---------------------------------------------------------------

    def _save(self) -> None:
        if self._state_file is None:
            return
        serve = self.serve
        state = {
            "jobs": [dataclasses.asdict(job) for job in self.jobs.values()],
            "serve": {
                "started_at": serve.started_at,
                "target_capacity": serve.target_capacity,
                "http_options": serve.http_options,
                "apps": {n: dataclasses.asdict(a) for n, a in serve.apps.items()},
            },
        }
        partial = self._state_file.with_suffix(".tmp")
        partial.parent.mkdir(parents=True, exist_ok=True)
        partial.write_text(json.dumps(state))
        os.replace(partial, self._state_file)

    def _load(self) -> None:
        if self._state_file is None or not self._state_file.exists():
            return
        state = json.loads(self._state_file.read_text())
        for job in state["jobs"]:
            job["plan"] = Plan(**{**job["plan"], "output": tuple(job["plan"]["output"])})
            self.jobs[job["submission_id"]] = SimulatedJob(**job)
        serve = state["serve"]
        self.serve.started_at = serve["started_at"]
        self.serve.target_capacity = serve["target_capacity"]
        self.serve.http_options = serve["http_options"]
        self.serve.apps = {n: ServedApp(**a) for n, a in serve["apps"].items()}
