"""Simulated Ray Serve: the declarative config a head was given and its apps' status over time.

`SimulatedServe.apply` checks a `PUT /api/serve/applications/` body the way Ray's
ServeDeploySchema does for the mistakes that matter here (names, import paths, route
prefixes) and keeps each application's deploy time, which only moves when that
application's config changes. `details(now)` is the `GET ...?api_type=declarative` answer:
an application is DEPLOYING for `delay` seconds, then RUNNING with every deployment HEALTHY.
Pure: no clock, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from devcluster.ray_simulator.jobs import NODE_ID

JsonObject = dict[str, Any]
DEFAULT_HTTP_PORT = 8000


class InvalidServeConfig(ValueError):
    """The config would fail Ray's validation (a 400 with pydantic's text)."""


@dataclass
class ServedApp:
    """One applied application: its config and when that config was deployed."""

    config: JsonObject
    deployed_at: float


@dataclass
class SimulatedServe:
    """Serve on one head: off until the first PUT, off again after DELETE."""

    delay: float = 1.0
    started_at: float | None = None
    target_capacity: float | None = None
    http_options: JsonObject = field(default_factory=dict)
    apps: dict[str, ServedApp] = field(default_factory=dict)

    @property
    def http_port(self) -> int:
        """The port Serve's HTTP proxy listens on."""
        return int(self.http_options.get("port") or DEFAULT_HTTP_PORT)

    def apply(self, body: Any, now: float) -> None:
        """Take a new declarative config; raise InvalidServeConfig as Ray would answer 400."""
        apps = body.get("applications") if isinstance(body, dict) else None
        if not isinstance(apps, list) or not all(isinstance(a, dict) for a in apps):
            raise InvalidServeConfig(_pydantic("applications", "Input should be a valid list"))
        names = [a.get("name", "default") for a in apps]
        if any(not isinstance(n, str) or not n for n in names):
            raise InvalidServeConfig(
                _pydantic("applications", "Value error, Application names must be nonempty.")
            )
        if len(set(names)) != len(names):
            raise InvalidServeConfig(
                _pydantic("applications", "Value error, Application names must be unique.")
            )
        for app in apps:
            if not isinstance(app.get("import_path"), str):
                raise InvalidServeConfig(_pydantic("applications.import_path", "Field required"))
            problem = import_path_problem(app["import_path"])
            if problem is not None:
                raise InvalidServeConfig(_pydantic("applications.import_path", problem))
        if self.started_at is None:
            self.started_at = now
        self.http_options = dict(body.get("http_options") or {})
        self.target_capacity = body.get("target_capacity")
        kept = {}
        for name, app in zip(names, apps, strict=True):
            old = self.apps.get(name)
            kept[name] = old if old and old.config == app else ServedApp(app, now)
        self.apps = kept

    def shutdown(self) -> None:
        """`DELETE /api/serve/applications/`: Serve and every application go away."""
        self.started_at, self.target_capacity, self.apps = None, None, {}
        self.http_options = {}

    def details(self, now: float) -> JsonObject:
        """The declarative status, with the keys and value types of Ray 2.60."""
        if self.started_at is None:
            return {
                "controller_info": {},
                "proxies": {},
                "applications": {},
                "target_capacity": None,
            }
        proxy_up = now >= self.started_at + self.delay
        return {
            "controller_info": _actor("SERVE_CONTROLLER_ACTOR"),
            "proxy_location": "EveryNode",
            "http_options": {"host": "0.0.0.0", **self.http_options, "port": self.http_port},
            "proxies": {
                NODE_ID: {
                    **_actor("SERVE_PROXY_ACTOR"),
                    "status": "HEALTHY" if proxy_up else "STARTING",
                }
            },
            "applications": {n: self._app(n, a, now) for n, a in self.apps.items()},
            "target_capacity": self.target_capacity,
        }

    def _app(self, name: str, app: ServedApp, now: float) -> JsonObject:
        ready = now >= app.deployed_at + self.delay
        deployments = [d.get("name") for d in app.config.get("deployments") or [] if d.get("name")]
        if not deployments:  # Ray names them after the bound class; the import path is all we know
            deployments = [app.config["import_path"].rsplit(":", 1)[-1].rsplit(".", 1)[-1]]
        return {
            "name": name,
            "route_prefix": app.config.get("route_prefix", "/"),
            "docs_path": None,
            "status": "RUNNING" if ready else "DEPLOYING",
            "message": "",
            "last_deployed_time_s": app.deployed_at,
            "deployed_app_config": app.config,
            "source": "declarative",
            "deployments": {
                d: {
                    "name": d,
                    "status": "HEALTHY" if ready else "UPDATING",
                    "status_trigger": "CONFIG_UPDATE_COMPLETED"
                    if ready
                    else "CONFIG_UPDATE_STARTED",
                    "message": "",
                    "target_num_replicas": 1,
                    "replicas": [],
                }
                for d in deployments
            },
        }

    def serving(self, path: str, now: float) -> str | None:
        """The RUNNING application whose route prefix is the longest match for `path`."""
        best: tuple[int, str] | None = None
        for name, app in self.apps.items():
            prefix = str(app.config.get("route_prefix", "/"))
            if now < app.deployed_at + self.delay or not path.startswith(prefix):
                continue
            if best is None or len(prefix) > best[0]:
                best = (len(prefix), name)
        return best[1] if best else None


def _actor(name: str) -> JsonObject:
    return {
        "node_id": NODE_ID,
        "node_ip": "127.0.0.1",
        "node_instance_id": "",
        "actor_id": "simulated",
        "actor_name": name,
        "worker_id": "simulated",
        "log_file_path": "/serve/simulated.log",
    }


def import_path_problem(path: str) -> str | None:
    """Why Ray refuses an application's import path, or None.

    Ray takes `module:attribute` (one colon, inside) and `module.attribute` (a dot, inside):
    KubeRay's samples use the second form (`fruit.deployment_graph`).
    """
    separator = ":" if ":" in path else "."
    if separator == ":" and path.count(":") > 1:
        return f"Value error, import path {path!r} has more than one colon"
    if separator not in path:
        return f"Value error, import path {path!r} names no attribute after a dot or a colon"
    if path.startswith(separator) or path.endswith(separator):
        return f"Value error, import path {path!r} starts or ends with {separator!r}"
    return None


def _pydantic(location: str, message: str) -> str:
    return f"1 validation error for ServeDeploySchema\n{location}\n  {message} [type=value_error]"
