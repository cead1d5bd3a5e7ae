"""The RayJob of one RayCronJob firing, as KubeRay's RayCronJob controller builds it.

Its name is `<raycronjob>-<scheduled time in Unix minutes>`: one name per tick, so a firing
that runs twice (a retry, a made-up firing for a tick that did fire) finds the RayJob it
created instead of creating a second. It carries KubeRay's label and annotation, the job
template as its spec, and the RayCronJob as its controller (deleted with it).
"""

from __future__ import annotations

import copy
from datetime import datetime

from activities.builders.names import controller_reference
from crds import constants as k
from crds.common import JSONObject, format_time


def scheduled_rayjob_name(cronjob: str, scheduled_at: datetime) -> str:
    """`<raycronjob>-<minutes since the epoch>` of the tick."""
    return f"{cronjob}-{int(scheduled_at.timestamp()) // 60}"


def build_scheduled_rayjob(cronjob: JSONObject, scheduled_at: datetime) -> JSONObject:
    """The RayJob a RayCronJob (as read from the API) creates for the tick at `scheduled_at`."""
    meta = cronjob["metadata"]
    name = meta["name"]
    return {
        "apiVersion": k.API_VERSION,
        "kind": "RayJob",
        "metadata": {
            "name": scheduled_rayjob_name(name, scheduled_at),
            "namespace": meta["namespace"],
            "labels": {k.LABEL_CRONJOB_NAME: name},
            "annotations": {k.ANNOTATION_CRONJOB_SCHEDULED_TIMESTAMP: format_time(scheduled_at)},
            "ownerReferences": [controller_reference("RayCronJob", name, meta.get("uid"))],
        },
        "spec": copy.deepcopy(cronjob["spec"]["jobTemplate"]),
    }
