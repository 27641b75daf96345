# Fleetgate developer entry points. `make render` and `make test` are the two
# commands the README names; both install what they need (a virtualenv, the
# pinned Crossplane CLI, the pinned upstream CRDs) on a fresh machine with
# Python >= 3.11 and Go >= 1.25.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
BIN := .cache/bin
CROSSPLANE := $(BIN)/crossplane
XRDCHECK := $(BIN)/xrdcheck
CRDS := .cache/crds
SHARED_CRDS := ../shared/crds
SOURCES := functions tests e2e oracles plane schemas tools sim package bench

.PHONY: render examples generate apis examples-update bench test lint typecheck pytest tools crds deps nix-parser clean

## render: walk the example fleet (examples/fleet) from nothing to a routed model through the
## functions and the real Crossplane CLI; print each pass, the routing table, facts and drills
render: deps
	$(PY) -m e2e.walk

## examples: render every single-XR example under examples/ and print what each composes
examples: deps
	$(PY) -m e2e.render

## generate: everything written from the code, after any change to it: the XRDs, then the
## examples; `make test` fails while a regeneration would change any of it
generate: examples-update

## apis: write each XRD's spec (apis/*/definition.yaml) from the kinds' models (schemas/xrds.py)
apis: $(VENV)/.installed
	$(PY) -m schemas.xrds

## examples-update: regenerate the examples' observed.yaml and expect.yaml from the functions
## (e2e/snapshots.py), through the XRDs as `make apis` writes them
examples-update: apis
	$(PY) -m e2e.render --update

## bench: measure every function on reference workloads up to the API's maxima (a few minutes);
## results into bench/results/ (JSON + a Markdown table), compared with the last recorded run
bench: $(VENV)/.installed
	$(PY) -m bench

## test: lint, type check, unit, gRPC, render + validate against pinned CRDs, then the example
## fleet on the real control plane (make e2e)
# On a fresh machine the control plane's Go builds (half an hour of two cores) run beside
# the checks, which leave a core idle, instead of after them: two chains, each one job at a
# time, so the checks start as soon as deps are there. The builds run at a lower priority
# (GOBUILD), so the tests keep their pace.
test:
	$(MAKE) --jobs=2 deps
	$(MAKE) --jobs=2 checks e2e-prerequisites
	$(MAKE) e2e

.PHONY: checks e2e-prerequisites
checks:
	$(MAKE) --jobs=1 lint typecheck pytest
e2e-prerequisites:
	$(MAKE) --jobs=1 controlplane-bins packages upgrade-packages redis-server

lint: deps
	$(VENV)/bin/ruff check $(SOURCES)
	$(VENV)/bin/ruff format --check $(SOURCES)

typecheck: deps
	$(VENV)/bin/mypy

pytest: deps
	$(PY) -m pytest

deps: $(VENV)/.installed $(CROSSPLANE) $(XRDCHECK) crds nix-parser

# The Nix files are only parsed here (nix-instantiate --parse); Debian's
# nix-bin provides the parser. Installed when missing and we may (CI runs as
# root on Debian); elsewhere the parse test says what is missing.
nix-parser:
	@command -v nix-instantiate >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	  { apt-get install -y -qq nix-bin >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq nix-bin >/dev/null; }; }; } || true

# Exactly the versions of uv.lock, hash-checked by pip; uv, pinned here, only
# reads and writes the lock.
UV_VERSION := 0.13.9
UV := $(VENV)/bin/uv
$(VENV)/.installed: pyproject.toml uv.lock
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python >= 3.11 is required"'
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet 'uv==$(UV_VERSION)'
	$(UV) export --quiet --frozen --extra dev --no-emit-project --output-file $(VENV)/requirements.txt
	$(PY) -m pip install --quiet --no-deps --require-hashes -r $(VENV)/requirements.txt
	$(PY) -m pip install --quiet --no-deps --editable .
	touch $@

## tools: the Crossplane CLI at the version pinned in tools/go.mod (checksummed by go.sum)
tools: $(CROSSPLANE)
$(CROSSPLANE): tools/go.mod tools/go.sum
	mkdir -p $(BIN)
	cd tools && GOBIN=$(CURDIR)/$(BIN) nice -n 10 go install github.com/crossplane/crossplane/v2/cmd/crank
	mv $(BIN)/crank $@

## xrdcheck: the API server's own CRD validation (structural schema, defaults, CEL rules and
## their estimated cost), run on the XRDs by tests/e2e/test_xrds.py; pinned by schemas/xrdcheck/go.mod
$(XRDCHECK): schemas/xrdcheck/main.go schemas/xrdcheck/go.mod schemas/xrdcheck/go.sum
	mkdir -p $(BIN)
	cd schemas/xrdcheck && nice -n 10 go build -o $(CURDIR)/$@ .

## Binaries of the real control plane (make e2e) and of Envoy Gateway's translator, each built
## from the Go module proxy at the version its tools/**/go.mod pins (checksummed by go.sum) and
## cached under .cache/bin/<component>-<version>/, so a version bump builds anew and nothing else does.
pinned = $(shell sed -nE 's@^(require |\t)$(2) (v[^ ]+).*@\2@p' $(1) | head -n 1)
K8S_VERSION := $(call pinned,tools/controlplane/kubernetes/go.mod,k8s.io/kubernetes)
ETCD_VERSION := $(call pinned,tools/controlplane/etcd/go.mod,go.etcd.io/etcd/server/v3)
XP_VERSION := $(call pinned,tools/controlplane/crossplane/go.mod,github.com/crossplane/crossplane/v2)
# The CLI's line (tools/go.mod), whose core is the oldest release the Configuration supports
XP_CLI_VERSION := $(call pinned,tools/go.mod,github.com/crossplane/crossplane/v2)
PK_VERSION := $(call pinned,tools/controlplane/provider-kubernetes/go.mod,github.com/crossplane-contrib/provider-kubernetes)
REGISTRY_VERSION := $(call pinned,tools/controlplane/registry/go.mod,github.com/distribution/distribution/v3)
TM_VERSION := $(call pinned,tools/controlplane/trust-manager/go.mod,github.com/cert-manager/trust-manager)
EG_VERSION := $(call pinned,tools/egctl/go.mod,github.com/envoyproxy/gateway)
HELM_VERSION := $(call pinned,tools/controlplane/helm/go.mod,helm.sh/helm/v3)
RATELIMIT_VERSION := $(call pinned,tools/ratelimit/go.mod,github.com/envoyproxy/ratelimit)
KUBE_APISERVER := $(BIN)/kubernetes-$(K8S_VERSION)/kube-apiserver
KUBE_CONTROLLER_MANAGER := $(BIN)/kubernetes-$(K8S_VERSION)/kube-controller-manager
KUBECTL := $(BIN)/kubernetes-$(K8S_VERSION)/kubectl
ETCD := $(BIN)/etcd-$(ETCD_VERSION)/etcd
CROSSPLANE_CORE := $(BIN)/crossplane-$(XP_VERSION)/crossplane
CROSSPLANE_CORE_OLDEST := $(BIN)/crossplane-$(XP_CLI_VERSION)/crossplane
PROVIDER_KUBERNETES := $(BIN)/provider-kubernetes-$(PK_VERSION)/provider
REGISTRY := $(BIN)/registry-$(REGISTRY_VERSION)/registry
TRUST_MANAGER := $(BIN)/trust-manager-$(TM_VERSION)/trust-manager
EGCTL := $(BIN)/egctl-$(EG_VERSION)/egctl
ENVOY_GATEWAY := $(BIN)/envoy-gateway-$(EG_VERSION)/envoy-gateway
HELM := $(BIN)/helm-$(HELM_VERSION)/helm
RATELIMIT := $(BIN)/ratelimit-$(RATELIMIT_VERSION)/ratelimit
CONTROLPLANE_BINS := $(ETCD) $(KUBE_APISERVER) $(KUBE_CONTROLLER_MANAGER) $(KUBECTL) $(CROSSPLANE_CORE) \
	$(PROVIDER_KUBERNETES) $(REGISTRY) $(TRUST_MANAGER) $(HELM) $(ENVOY_GATEWAY) $(RATELIMIT)
GOBUILD := nice -n 10 go build -trimpath

.PHONY: controlplane-bins egctl
controlplane-bins: $(CONTROLPLANE_BINS)
egctl: $(EGCTL)
# The tests run Envoy Gateway's translator (tests/e2e/test_translate.py). Here, not on the
# deps line above: a prerequisite is expanded where it is read, before EGCTL is set.
deps: $(EGCTL)

# The component-base stamps make /version report the release, as upstream's builds do.
$(KUBE_CONTROLLER_MANAGER) $(KUBECTL): $(KUBE_APISERVER)
$(KUBE_APISERVER): tools/controlplane/kubernetes/go.mod tools/controlplane/kubernetes/go.sum
	mkdir -p $(@D)
	cd tools/controlplane/kubernetes && $(GOBUILD) -o $(CURDIR)/$(@D)/ \
	  -ldflags "-X k8s.io/component-base/version.gitVersion=$(K8S_VERSION) \
	    -X k8s.io/component-base/version.gitMajor=$(word 1,$(subst ., ,$(K8S_VERSION:v%=%))) \
	    -X k8s.io/component-base/version.gitMinor=$(word 2,$(subst ., ,$(K8S_VERSION:v%=%))) \
	    -X k8s.io/component-base/version.gitTreeState=clean" \
	  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kubectl
$(ETCD): tools/controlplane/etcd/go.mod tools/controlplane/etcd/go.sum tools/controlplane/etcd/main.go
	cd tools/controlplane/etcd && $(GOBUILD) -o $(CURDIR)/$@ .
# Crossplane refuses packages ("Invalid Semantic Version") unless its version is stamped; from
# v2.3 the stamp lives in crossplane-runtime (cmd/crossplane/main.go imports its pkg/version).
$(CROSSPLANE_CORE): tools/controlplane/crossplane/go.mod tools/controlplane/crossplane/go.sum
	cd tools/controlplane/crossplane && $(GOBUILD) -o $(CURDIR)/$@ \
	  -ldflags "-X github.com/crossplane/crossplane-runtime/v2/pkg/version.version=$(XP_VERSION)" \
	  github.com/crossplane/crossplane/v2/cmd/crossplane
# The oldest supported core, the CLI's release: `make e2e CROSSPLANE_LINE=oldest` runs the fleet on it.
$(CROSSPLANE_CORE_OLDEST): tools/go.mod tools/go.sum
	cd tools && $(GOBUILD) -o $(CURDIR)/$@ \
	  -ldflags "-X github.com/crossplane/crossplane/v2/internal/version.version=$(XP_CLI_VERSION)" \
	  github.com/crossplane/crossplane/v2/cmd/crossplane
$(PROVIDER_KUBERNETES): tools/controlplane/provider-kubernetes/go.mod tools/controlplane/provider-kubernetes/go.sum
	cd tools/controlplane/provider-kubernetes && $(GOBUILD) -o $(CURDIR)/$@ github.com/crossplane-contrib/provider-kubernetes/cmd/provider
$(REGISTRY): tools/controlplane/registry/go.mod tools/controlplane/registry/go.sum
	cd tools/controlplane/registry && $(GOBUILD) -o $(CURDIR)/$@ github.com/distribution/distribution/v3/cmd/registry
$(TRUST_MANAGER): tools/controlplane/trust-manager/go.mod tools/controlplane/trust-manager/go.sum
	cd tools/controlplane/trust-manager && $(GOBUILD) -o $(CURDIR)/$@ github.com/cert-manager/trust-manager/cmd/trust-manager
$(HELM): tools/controlplane/helm/go.mod tools/controlplane/helm/go.sum
	cd tools/controlplane/helm && $(GOBUILD) -o $(CURDIR)/$@ helm.sh/helm/v3/cmd/helm
# Both static, as upstream builds them: the controller runs under a root directory of its
# own (plane/envoygateway.py), and the two share every compiled package.
$(EGCTL): tools/egctl/go.mod tools/egctl/go.sum
	cd tools/egctl && CGO_ENABLED=0 $(GOBUILD) -o $(CURDIR)/$@ github.com/envoyproxy/gateway/cmd/egctl
$(ENVOY_GATEWAY): tools/egctl/go.mod tools/egctl/go.sum
	cd tools/egctl && CGO_ENABLED=0 $(GOBUILD) -o $(CURDIR)/$@ github.com/envoyproxy/gateway/cmd/envoy-gateway
# Envoy's rate-limit service at the version Envoy Gateway's go.mod requires, static too: it
# runs under the root directory of the pod Envoy Gateway provisions (plane/ratelimit.py).
$(RATELIMIT): tools/ratelimit/go.mod tools/ratelimit/go.sum
	cd tools/ratelimit && CGO_ENABLED=0 $(GOBUILD) -o $(CURDIR)/$@ github.com/envoyproxy/ratelimit/src/service_cmd

# Envoy AI Gateway's controller and external processor at the tag tools/aigateway/go.mod pins,
# static as upstream ships them (the external processor runs under the root directory of the
# Envoy pod it joins, plane/proxies.py). Built in a scratch copy of that go.mod: the
# module is downloaded (and checked against the checksum database) where the proxy serves it;
# where it is refused, as here, the copy takes the same tag's source from ../shared/upstream.
AIGW_VERSION := $(call pinned,tools/aigateway/go.mod,github.com/envoyproxy/ai-gateway)
AIGW_SOURCE := $(abspath ../shared/upstream/ai-gateway-$(AIGW_VERSION))
AIGW_BUILD := .cache/aigateway-build
AI_GATEWAY_CONTROLLER := $(BIN)/ai-gateway-$(AIGW_VERSION)/controller
AI_GATEWAY_EXTPROC := $(BIN)/ai-gateway-$(AIGW_VERSION)/extproc
controlplane-bins: $(AI_GATEWAY_CONTROLLER) $(AI_GATEWAY_EXTPROC)
# $(call aigw_module,folder): that scratch copy, in folder, ready to build in.
aigw_module = rm -rf $(1) && mkdir -p $(1) && cp tools/aigateway/go.mod tools/aigateway/go.sum $(1)/ && \
  cd $(1) && { go mod download github.com/envoyproxy/ai-gateway 2>/dev/null || \
  go mod edit -replace github.com/envoyproxy/ai-gateway=$(AIGW_SOURCE); }
$(AI_GATEWAY_CONTROLLER) $(AI_GATEWAY_EXTPROC) &: tools/aigateway/go.mod tools/aigateway/go.sum
	mkdir -p $(@D)
	$(call aigw_module,$(AIGW_BUILD)) && CGO_ENABLED=0 $(GOBUILD) -o $(CURDIR)/$(@D)/ \
	    github.com/envoyproxy/ai-gateway/cmd/controller github.com/envoyproxy/ai-gateway/cmd/extproc

## llmcostcel: AI Gateway's own CEL for cost expressions (internal/llmcostcel at the same tag),
## which the tests evaluate every cost expression Fleetgate writes with
## (oracles/llmcostcel.py). An internal package is importable only from inside its module, so
## tools/aigateway/_llmcostcel/main.go is laid into the module for the build (-overlay),
## never written there.
LLMCOSTCEL := $(BIN)/llmcostcel-$(AIGW_VERSION)/llmcostcel
LLMCOSTCEL_BUILD := .cache/llmcostcel-build
$(LLMCOSTCEL): tools/aigateway/go.mod tools/aigateway/go.sum tools/aigateway/_llmcostcel/main.go
	mkdir -p $(@D)
	$(call aigw_module,$(LLMCOSTCEL_BUILD)) && \
	  printf '{"Replace": {"%s/cmd/fleetgate-llmcostcel/main.go": "%s"}}' \
	    "$$(go list -m -f '{{.Dir}}' github.com/envoyproxy/ai-gateway)" \
	    "$(CURDIR)/tools/aigateway/_llmcostcel/main.go" > overlay.json && \
	  CGO_ENABLED=0 $(GOBUILD) -overlay overlay.json -o $(CURDIR)/$@ \
	    github.com/envoyproxy/ai-gateway/cmd/fleetgate-llmcostcel
deps: $(LLMCOSTCEL)

## promtool: Prometheus's rule checker and rule unit-test runner, which judge every
## PrometheusRule Fleetgate composes (tests/e2e/test_failover_alerts.py). Built without the
## service-discovery plugins (the remove_all_sd tag of prometheus/plugins at v0.316.0): rule
## checks use none of them, and they are most of the build.
PROMTOOL_VERSION := $(call pinned,tools/promtool/go.mod,github.com/prometheus/prometheus)
PROMTOOL := $(BIN)/promtool-$(PROMTOOL_VERSION)/promtool
$(PROMTOOL): tools/promtool/go.mod tools/promtool/go.sum
	cd tools/promtool && CGO_ENABLED=0 $(GOBUILD) -tags remove_all_sd -o $(CURDIR)/$@ github.com/prometheus/prometheus/cmd/promtool
deps: $(PROMTOOL)

## prometheus: the server of the same module and tag, for make e2e's alert drill; built as
## promtool is (no service discovery: the drill's one target is static).
PROMETHEUS := $(BIN)/prometheus-$(PROMTOOL_VERSION)/prometheus
$(PROMETHEUS): tools/promtool/go.mod tools/promtool/go.sum
	cd tools/promtool && CGO_ENABLED=0 $(GOBUILD) -tags remove_all_sd -o $(CURDIR)/$@ github.com/prometheus/prometheus/cmd/prometheus
controlplane-bins: $(PROMETHEUS)

include tools/keda/keda.mk

# The rate-limit service's Redis on the real control plane is Debian's redis-server, installed
# when missing and we may (CI runs as root on Debian); without it make e2e cannot run.
.PHONY: redis-server
redis-server:
	@command -v redis-server >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	  { apt-get install -y -qq redis-server >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq redis-server >/dev/null; }; }; } || \
	  { echo "make e2e needs redis-server (Debian: apt-get install redis-server, as root)" >&2; exit 1; }

## e2e: the example fleet on a real control plane (etcd, three kube-apiservers with their
## controller managers, Crossplane core and RBAC manager, provider-kubernetes, a local OCI
## registry serving `make packages`; trust-manager and Envoy Gateway on each workload cluster),
## all local processes on loopback; stops everything it started
## up: the same control plane, left running for your own kubectl; `make down` stops it
# CROSSPLANE_LINE=oldest runs the control plane on the oldest supported core (its chart too),
# whose XRs see a required resource change only when a TTL runs out: the functions get the
# settled TTL a platform on that line sets (functions/fleetgate/core/pacing.py).
CROSSPLANE_LINE ?= pinned
ifeq ($(CROSSPLANE_LINE),oldest)
XP_CORE_BIN := $(CROSSPLANE_CORE_OLDEST)
XP_CORE_MODULE := tools
XP_LINE_ENV := FLEETGATE_SETTLED_TTL=30
else
XP_CORE_BIN := $(CROSSPLANE_CORE)
XP_CORE_MODULE := tools/controlplane/crossplane
endif
CONTROLPLANE_ENV = ETCD=$(ETCD) KUBE_APISERVER=$(KUBE_APISERVER) KUBE_CONTROLLER_MANAGER=$(KUBE_CONTROLLER_MANAGER) \
	KUBECTL=$(KUBECTL) CROSSPLANE_CORE=$(XP_CORE_BIN) CROSSPLANE_CORE_MODULE=$(XP_CORE_MODULE) $(XP_LINE_ENV) \
	CROSSPLANE=$(CROSSPLANE) HELM=$(HELM) \
	PROVIDER_KUBERNETES=$(PROVIDER_KUBERNETES) REGISTRY=$(REGISTRY) TRUST_MANAGER=$(TRUST_MANAGER) \
	ENVOY_GATEWAY=$(ENVOY_GATEWAY) RATELIMIT=$(RATELIMIT) \
	AI_GATEWAY_CONTROLLER=$(AI_GATEWAY_CONTROLLER) AI_GATEWAY_EXTPROC=$(AI_GATEWAY_EXTPROC) REDIS_SERVER=$$(command -v redis-server) \
	ENVOY=$$($(PY) -c 'import envoy, os; print(os.path.join(os.path.dirname(envoy.__file__), "_bin", "envoy"))')
.PHONY: e2e up down routes
e2e: deps controlplane-bins packages upgrade-packages redis-server $(XP_CORE_BIN)
	$(CONTROLPLANE_ENV) UPGRADE_VERSION=$(UPGRADE_VERSION) UPGRADE_DIST=$(UPGRADE_DIST) $(PY) -m e2e.realplane e2e
## bench-fleet: a generated fleet at growing sizes on the real control plane (bench/fleetscale.py;
## SIZES="10 40 100" services; BENCH_FLEET_ARGS="--clusters 4 --gateways 4 --no-drain --out F" and
## the rest of `python -m bench.fleetscale --help`); figures into bench/results/fleet.json. A
## benchmark, not a test
SIZES ?= 10 40 100
BENCH_FLEET_ARGS ?=
.PHONY: bench-fleet
bench-fleet: deps controlplane-bins packages redis-server $(XP_CORE_BIN)
	$(CONTROLPLANE_ENV) $(PY) -m bench.fleetscale --services $(SIZES) $(BENCH_FLEET_ARGS)
## up: the control plane in the background, ready for the example (FLEET=examples/fleet: applied too)
up: deps controlplane-bins packages redis-server $(XP_CORE_BIN)
	$(if $(filter-out examples/fleet examples/fleet/,$(FLEET)),$(error FLEET=examples/fleet is the fleet make up can apply))
	$(CONTROLPLANE_ENV) $(PY) -m e2e.realplane up $(if $(FLEET),--fleet)
down:
	$(PY) -m e2e.realplane down
## routes: the routing table of the control plane make up started, read from its workload clusters
routes:
	$(PY) -m e2e.realplane routes

## crds: the pinned upstream CRDs from their Go modules; checked against ../shared/crds when present
crds: $(VENV)/.installed
	$(PY) -m schemas.crds --dest $(CRDS) $(if $(wildcard $(SHARED_CRDS)),--check-shared $(SHARED_CRDS))

## crane: go-containerregistry's crane at the version tools/crane/go.mod pins, which assembles
## each function's runtime image from the layers (package/oci.py)
CRANE_VERSION := $(call pinned,tools/crane/go.mod,github.com/google/go-containerregistry)
CRANE := $(BIN)/crane-$(CRANE_VERSION)/crane
$(CRANE): tools/crane/go.mod tools/crane/go.sum
	cd tools/crane && CGO_ENABLED=0 $(GOBUILD) -o $(CURDIR)/$@ github.com/google/go-containerregistry/cmd/crane
# tests/package builds the packages too (pytest, under deps).
deps: $(CRANE)

## packages: every function as a Crossplane package with its runtime image embedded, and the
## Configuration, into dist/package (no container engine; layers cached in .cache/package)
packages: $(VENV)/.installed $(CROSSPLANE) $(CRANE) package-host-tools
	$(PY) -m package.build

## upgrade-packages: the same packages carrying version v0.1.1, into .cache/package-upgrade, for
## make e2e's upgrade fault (e2e/realplane/faults.py); the layers are the ones packages built
UPGRADE_VERSION := v0.1.1
UPGRADE_DIST := .cache/package-upgrade
upgrade-packages: packages
	$(PY) -m package.build --version $(UPGRADE_VERSION) --out $(UPGRADE_DIST)

## package-lock: re-lock the Python dependencies of the development environment and the image
## (uv.lock, nix/wheels.json) after a change to pyproject.toml; UPGRADE=1 takes the newest allowed
package-lock: $(VENV)/.installed
	$(UV) lock$(if $(UPGRADE), --upgrade)
	$(PY) -m package.build lock
	$(MAKE) $(VENV)/.installed

# The image is assembled from Debian packages with apt-get and dpkg-deb, checked
# against the Debian archive keyring; Debian has all three with apt. Elsewhere
# (e.g. Ubuntu) the keyring is installed when missing and we may.
package-host-tools:
	@command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || { echo "make packages needs apt-get and dpkg-deb (Debian/Ubuntu)" >&2; exit 1; }
	@test -f /usr/share/keyrings/debian-archive-keyring.gpg || { [ "$$(id -u)" = 0 ] && \
	  { apt-get install -y -qq debian-archive-keyring >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq debian-archive-keyring >/dev/null; }; }; }

.PHONY: packages upgrade-packages package-lock package-host-tools crane
crane: $(CRANE)

clean:
	rm -rf $(VENV) .cache
