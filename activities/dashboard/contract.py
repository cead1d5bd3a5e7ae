"""What goes to and comes back from the Ray dashboard, as typed models.

The dashboard's answers carry many more keys than KubeRay reads, and newer Ray releases add
statuses and fields, so every model here ignores unknown keys and keeps statuses as open
strings (compare them with `crds.enums`, never assume the set is closed). Results are plain
pydantic models with snake_case fields so they can travel through Temporal's pydantic data
converter; they are kept apart from the client so the workflow sandbox can import them without
httpx.

Epoch-millisecond timestamps become timezone-aware UTC datetimes, and Ray's "unset" (0 or
null) becomes None. Ray's messages are clipped to a status message's limit: they travel into
histories and CR statuses, and whatever answers on a cluster's dashboard port chooses them. A
job's `runtime_env` is deliberately not part of `JobInfo`: it may hold credentials in
`env_vars`, and activity results are written into workflow history.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from crds.common import StatusMessage
from crds.constants import DEFAULT_SERVE_APP_NAME
from crds.enums import ApplicationStatus, JobStatus

_TERMINAL_JOB_STATUSES = frozenset(s.value for s in JobStatus if s.is_terminal)


class _Wire(BaseModel):
    """Base for models read from the dashboard: unknown keys are dropped, not errors."""

    model_config = ConfigDict(extra="ignore", frozen=True)


def _epoch_ms(value: Any) -> Any:
    """Ray's epoch milliseconds to an aware datetime; 0 and null mean "not yet"."""
    if value is None or value == 0:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return datetime.fromtimestamp(value / 1000, tz=UTC)
    # An ISO string or a datetime: a model coming back from a Temporal payload.
    return value


def _text(value: Any) -> Any:
    """Ray sends null for an empty message; callers want a plain string."""
    return "" if value is None else value


def _mapping(value: Any) -> Any:
    """Ray sends null for an empty map."""
    return {} if value is None else value


EpochMs = Annotated[datetime | None, BeforeValidator(_epoch_ms)]
Text = Annotated[str, BeforeValidator(_text)]
Message = Annotated[StatusMessage, BeforeValidator(_text)]
"""A message Ray wrote, which goes into a CR's status: clipped to a status message's limit
(the Ray cluster, and so its answers, are the CR owner's to shape)."""


class JobSubmission(BaseModel):
    """One Ray job to submit (`POST /api/jobs/`).

    `submission_id` is mandatory: the caller chooses it before submitting, so a retried
    submission is recognised as a duplicate rather than run twice (J2, J7). Fields
    left as None are not sent, like KubeRay's `omitempty`.
    """

    model_config = ConfigDict(frozen=True)

    entrypoint: str
    submission_id: str
    runtime_env: dict[str, Any] | None = None
    metadata: dict[str, str] | None = None
    entrypoint_num_cpus: float | None = None
    entrypoint_num_gpus: float | None = None
    entrypoint_resources: dict[str, float] | None = None

    def to_wire(self) -> dict[str, Any]:
        """The request body, without the fields left unset."""
        return self.model_dump(exclude_none=True)


class SubmitResult(BaseModel):
    """The outcome of a submission; `duplicate` means the id was already taken."""

    submission_id: str
    duplicate: bool = False


class JobInfo(_Wire):
    """One job as `GET /api/jobs/<id>` (and each entry of `GET /api/jobs/`) reports it."""

    submission_id: str | None = None
    job_id: str | None = None
    """The driver's job id; Ray 2.60 reports null for submitted jobs even after they ran."""
    type: Text = ""
    status: str
    """PENDING, RUNNING, STOPPED, SUCCEEDED, FAILED (see `crds.enums.JobStatus`), or newer."""
    entrypoint: Text = ""
    message: Message = ""
    error_type: str | None = None
    start_time: EpochMs = None
    end_time: EpochMs = None
    metadata: Annotated[dict[str, str], BeforeValidator(_mapping)] = Field(default_factory=dict)
    driver_exit_code: int | None = None

    @property
    def is_terminal(self) -> bool:
        """Whether Ray will never change this job's status again."""
        return self.status in _TERMINAL_JOB_STATUSES


class ServeDeploymentStatus(_Wire):
    """One deployment of a Serve application."""

    name: Text = ""
    status: str
    """UPDATING, HEALTHY, UNHEALTHY (see `crds.enums.DeploymentStatus`), or newer."""
    message: Message = ""


class ServeApplicationStatus(_Wire):
    """One Serve application, as the declarative status API reports it."""

    name: Text = ""
    status: str
    """NOT_STARTED, DEPLOYING, RUNNING, … (see `crds.enums.ApplicationStatus`), or newer."""
    message: Message = ""
    route_prefix: str | None = None
    docs_path: str | None = None
    deployments: Annotated[dict[str, ServeDeploymentStatus], BeforeValidator(_mapping)] = Field(
        default_factory=dict
    )


class ServeStatus(_Wire):
    """`GET /api/serve/applications/?api_type=declarative`, reduced to what operators read.

    Applications are keyed by name; an unnamed application is keyed "default", as in KubeRay
    (older Ray allowed an empty name; Ray 2.60 rejects it at PUT time).
    """

    applications: dict[str, ServeApplicationStatus] = Field(default_factory=dict)
    target_capacity: float | None = None
    deploy_mode: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _name_the_default_app(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not isinstance(data.get("applications"), dict | None):
            return data
        apps = {}
        for name, app in (data.get("applications") or {}).items():
            key = name or DEFAULT_SERVE_APP_NAME
            if isinstance(app, dict) and not app.get("name"):
                app = {**app, "name": key}
            apps[key] = app
        return {**data, "applications": apps}

    @property
    def all_running(self) -> bool:
        """KubeRay's readiness rule (S5): at least one application, and all are RUNNING."""
        return bool(self.applications) and all(
            app.status == ApplicationStatus.RUNNING for app in self.applications.values()
        )
