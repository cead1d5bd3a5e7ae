"""What a call to the Ray dashboard can fail with, so callers decide by type, not by text.

The dashboard client raises only these, with the httpx or HTTP cause chained:

    DashboardError              also raised directly for an unusable base URL
    ├── DashboardUnavailable    connection refused, timeouts, 408/429/5xx: retry later
    │   └── DashboardBadResponse   a 2xx whose body is not the JSON we expect
    ├── DashboardRejected       any other 4xx: the request itself is wrong
    │   ├── DashboardUnauthorized  401/403 from Ray: the auth token is missing or wrong
    │   ├── ProxyDenied         401/403 from the API server's proxy: RBAC or credentials
    │   └── JobNotFound         404 on a job (HTTPMode re-submits on it, J7)
    ├── DuplicateSubmission     the submission id is taken (`submit_job` reports it instead)
    └── JobNotStopped           stop was refused and the job is still running
"""

from __future__ import annotations


class DashboardError(Exception):
    """Any failure talking to a Ray dashboard."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


class DashboardUnavailable(DashboardError):
    """The dashboard could not be reached, or it failed; asking again later may work."""


class DashboardBadResponse(DashboardUnavailable):
    """The dashboard said yes but sent something unreadable (a half-started head, a proxy page)."""


class DashboardRejected(DashboardError):
    """The dashboard answered no to this request."""


class DashboardUnauthorized(DashboardRejected):
    """401 or 403: token authentication is on and our token is missing or wrong."""


class ProxyDenied(DashboardRejected):
    """401 or 403 from the API server itself: the request never reached Ray.

    The worker's Kubernetes account lacks the `services/proxy` or `pods/proxy` rule for this
    call (or its credentials were refused); Ray's token has nothing to do with it.
    """


class JobNotFound(DashboardRejected):
    """404 on a job: Ray has no job with this submission id."""


class DuplicateSubmission(DashboardError):
    """A job with this submission id already exists: the earlier submission went through."""


class JobNotStopped(DashboardError):
    """Ray declined to stop a job that is still not in a terminal state."""

    def __init__(self, message: str, job_status: str) -> None:
        super().__init__(message)
        self.job_status = job_status
