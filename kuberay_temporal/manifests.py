"""`kuberay-temporal crds`: write the CRDs generated from the models as YAML.

`deploy/crds/` holds the output of `kuberay-temporal crds --output-dir deploy/crds`, committed
so that a cluster can be set up with plain `kubectl apply -f deploy/crds/`; a test fails when
the committed files drift from the models. The rendering lives here rather than in `crds/`
because it is about files and text, which the model layer has no business with.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

from crds.common import JSONObject
from crds.manifests import crd_manifests

REGENERATE_COMMAND = "kuberay-temporal crds --output-dir deploy/crds"

_HEADER = (
    f"# Generated from the pydantic models in crds/ by `{REGENERATE_COMMAND}`.\n# Do not edit.\n"
)


def file_name(crd: JSONObject) -> str:
    """Return the file a CRD is written to, named like KubeRay's (`ray.io_rayjobs.yaml`)."""
    spec = crd["spec"]
    return f"{spec['group']}_{spec['names']['plural']}.yaml"


def render(crd: JSONObject) -> str:
    """Return one CRD as a YAML document with a do-not-edit header."""
    # Sorted keys and a fixed width make the output byte-stable across runs and machines.
    body = yaml.safe_dump(crd, sort_keys=True, default_flow_style=False, width=100)
    return _HEADER + body


def rendered_files() -> dict[str, str]:
    """Return every CRD file's name and content, as `crds --output-dir` writes them."""
    return {file_name(crd): render(crd) for crd in crd_manifests()}


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `crds` subcommand."""
    parser = subparsers.add_parser(
        "crds",
        help="print or write the RayCluster, RayJob, RayService and RayCronJob CRDs",
        description="Generate the ray.io/v1 CustomResourceDefinitions from the models. "
        "Without --output-dir, print them to stdout as one multi-document YAML stream "
        "(pipe it to `kubectl apply -f -`).",
    )
    parser.add_argument(
        "--output-dir",
        type=Path,
        metavar="DIR",
        help="write one file per CRD into DIR (created if missing) instead of printing",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Print the CRDs, or write them under `args.output_dir`; return the exit code."""
    files = rendered_files()
    output_dir: Path | None = args.output_dir
    if output_dir is None:
        sys.stdout.write("---\n".join(files.values()))
        return 0
    try:
        output_dir.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (output_dir / name).write_text(text, encoding="utf-8")
    except OSError as err:
        print(f"error: cannot write CRDs to {output_dir}: {err.strerror or err}", file=sys.stderr)
        return 1
    for name in files:
        print(output_dir / name)
    return 0
