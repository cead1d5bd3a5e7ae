# syntax=docker/dockerfile:1
# One image for both processes: `docker run IMAGE worker` or `docker run IMAGE bridge`.
#
# Reproducible within what an offline build machine allows: the base is pinned by tag, not
# by digest (no registry can be asked for a digest here; pin `PYTHON_IMAGE` to
# `python:3.11.14-slim-bookworm@sha256:…` when you build with network access), and every
# Python package, the build tools included, is pinned by version and by the hashes of its
# files in deploy/image/*requirements.txt and installed with --require-hashes --no-deps, so
# the build resolves nothing and takes no file other than the ones hashed there. Only our
# own wheel, built here, goes in without a hash. SOURCE_DATE_EPOCH fixes file times in the
# wheel. No `ray` in the image: the worker reaches Ray only through the dashboard's HTTP API.
ARG PYTHON_IMAGE=python:3.11.14-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ARG SOURCE_DATE_EPOCH=0
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
COPY deploy/image/build-requirements.txt /build-requirements.txt
RUN python -m pip install --require-hashes --no-deps -r /build-requirements.txt
COPY pyproject.toml README.md ./
COPY kuberay_temporal/ kuberay_temporal/
COPY crds/ crds/
COPY bridge/ bridge/
COPY workflows/ workflows/
COPY activities/ activities/
COPY runtime/ runtime/
COPY worker/ worker/
# --no-isolation: the build backend pinned above, not whatever setuptools is newest.
RUN python -m build --wheel --no-isolation --outdir /dist .
COPY deploy/image/requirements.txt /requirements.txt
RUN python -m venv /venv \
    && /venv/bin/pip install --require-hashes --no-deps --require-virtualenv -r /requirements.txt \
    && /venv/bin/pip install --no-deps --require-virtualenv /dist/*.whl \
    && /venv/bin/pip uninstall --yes pip \
    && find /venv -name "__pycache__" -type d -prune -exec rm -rf {} +

FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="kuberay-temporal" \
      org.opencontainers.image.description="KubeRay's CRDs driven by Temporal workflows: worker and bridge" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV PATH=/venv/bin:$PATH PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
COPY --from=build /venv /venv
# A numeric, unprivileged user, so `runAsNonRoot` can verify it without a passwd lookup.
USER 65532:65532
# The container's own network is its boundary: the probe port answers on its every address
# (the manifests narrow it to the pod's IP).
ENV KUBERAY_TEMPORAL_HEALTH_ADDRESS=0.0.0.0
EXPOSE 8080
ENTRYPOINT ["kuberay-temporal"]
CMD ["worker", "--health-port", "8080"]
