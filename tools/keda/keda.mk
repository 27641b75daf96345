## keda: KEDA's operator, which scales a workload cluster's model servers to zero and wakes
## them from zero (plane/keda.py), at the tag tools/keda/go.mod pins (checksummed by go.sum),
## and its metrics API server (the adapter, serving external.metrics.k8s.io to the HPA
## controller). KEDA's go.mod replaces k8s.io/* and controller-runtime, which a requiring
## module would not honour, so both are built in KEDA's own module directory of the module
## cache, read-only (its go.sum is complete), static and stamped as upstream's release builds.
## Paths follow tools/pinned.py (.cache/bin/<name>-<version>/<name>), which plane/keda.py
## reads; KEDA_OPERATOR=$(KEDA_OPERATOR) in CONTROLPLANE_ENV hands it over as well.
KEDA_VERSION := $(call pinned,tools/keda/go.mod,github.com/kedacore/keda/v2)
KEDA_OPERATOR := $(BIN)/keda-operator-$(KEDA_VERSION)/keda-operator
KEDA_ADAPTER := $(BIN)/keda-adapter-$(KEDA_VERSION)/keda-adapter
# Runs the rest of its line in KEDA's module directory, downloaded (and checked against
# tools/keda/go.sum) first.
keda_module = cd tools/keda && go mod download github.com/kedacore/keda/v2 && \
  cd "$$(go list -m -f '{{.Dir}}' github.com/kedacore/keda/v2)"
KEDA_GOBUILD = GOWORK=off GOFLAGS=-mod=readonly CGO_ENABLED=0 $(GOBUILD) \
  -ldflags "-X github.com/kedacore/keda/v2/version.Version=$(KEDA_VERSION:v%=%)"
$(KEDA_OPERATOR): tools/keda/go.mod tools/keda/go.sum
	mkdir -p $(@D)
	$(keda_module) && $(KEDA_GOBUILD) -o $(CURDIR)/$@ ./cmd/operator
$(KEDA_ADAPTER): tools/keda/go.mod tools/keda/go.sum
	mkdir -p $(@D)
	$(keda_module) && $(KEDA_GOBUILD) -o $(CURDIR)/$@ ./cmd/adapter
controlplane-bins: $(KEDA_OPERATOR)
