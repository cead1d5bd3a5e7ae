"""The identity of one custom resource, and the workflow id derived from it.

Workflow ids are `<kind>/<namespace>/<name>/<uid>` with the kind in lower case:
"/" cannot occur in a name or namespace, and the uid keeps a CR re-created under the same name
off the old workflow's history.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from crds.common import ObjectMeta
from crds.constants import KINDS


class ObjectRef(BaseModel):
    """kind, namespace, name and uid of a ray.io object."""

    model_config = ConfigDict(frozen=True)

    kind: str
    namespace: str
    name: str
    uid: str

    @property
    def workflow_id(self) -> str:
        """The id of the workflow that manages this object."""
        return f"{self.kind.lower()}/{self.namespace}/{self.name}/{self.uid}"

    def meta(
        self, generation: int, labels: dict[str, str], annotations: dict[str, str]
    ) -> ObjectMeta:
        """The object's metadata as a workflow keeps it, to validate the object.

        Empty maps count as absent, as the API server stores them.
        """
        return ObjectMeta(
            name=self.name,
            namespace=self.namespace,
            uid=self.uid,
            generation=generation,
            labels=labels or None,
            annotations=annotations or None,
        )

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"

    @classmethod
    def from_workflow_id(cls, workflow_id: str) -> ObjectRef:
        """Parse a workflow id back into a reference."""
        kind, namespace, name, uid = workflow_id.split("/")
        canonical = next((k for k in KINDS if k.lower() == kind), kind)
        return cls(kind=canonical, namespace=namespace, name=name, uid=uid)
