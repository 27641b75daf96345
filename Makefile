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
SOURCES := functions tests e2e package bench

.PHONY: render examples bench test lint typecheck pytest tools crds deps nix-parser clean

## render: walk the example fleet (examples/fleet) from nothing to a routed model through the
## functions and the real Crossplane CLI; print each pass, the routing table, facts and drills
render: deps
	$(PY) -m e2e.walk

## examples: render every single-XR example under examples/ and print what each composes
examples: deps
	$(PY) -m e2e.render

## bench: measure every function on reference workloads up to the API's maxima (a few minutes);
## results into bench/results/ (JSON + a Markdown table), compared with the last recorded run
bench: $(VENV)/.installed
	$(PY) -m bench

## test: lint, type check, unit, gRPC, render + validate against pinned CRDs
test: deps lint typecheck pytest

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

$(VENV)/.installed: pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python >= 3.11 is required"'
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --editable '.[dev]'
	touch $@

## tools: the Crossplane CLI at the version pinned in tools/go.mod (checksummed by go.sum)
tools: $(CROSSPLANE)
$(CROSSPLANE): tools/go.mod tools/go.sum
	mkdir -p $(BIN)
	cd tools && GOBIN=$(CURDIR)/$(BIN) go install github.com/crossplane/crossplane/v2/cmd/crank
	mv $(BIN)/crank $@

## xrdcheck: the API server's own CRD validation (structural schema, defaults, CEL rules and
## their estimated cost), run on the XRDs by tests/e2e/test_xrds.py; pinned by e2e/xrdcheck/go.mod
$(XRDCHECK): e2e/xrdcheck/main.go e2e/xrdcheck/go.mod e2e/xrdcheck/go.sum
	mkdir -p $(BIN)
	cd e2e/xrdcheck && go build -o $(CURDIR)/$@ .

## crds: the pinned upstream CRDs from their Go modules; checked against ../shared/crds when present
crds: $(VENV)/.installed
	$(PY) -m e2e.crds --dest $(CRDS) $(if $(wildcard $(SHARED_CRDS)),--check-shared $(SHARED_CRDS))

## packages: every function as a Crossplane package with its runtime image embedded, and the
## Configuration, into dist/package (no container engine; layers cached in .cache/package)
packages: $(VENV)/.installed $(CROSSPLANE) package-host-tools
	$(PY) -m package.build

## package-lock: re-pin the image's Python wheels (package/python.lock.json) to this environment
package-lock: $(VENV)/.installed
	$(PY) -m package.build lock

# The image is assembled from Debian packages with apt-get and dpkg-deb, checked
# against the Debian archive keyring; Debian has all three with apt. Elsewhere
# (e.g. Ubuntu) the keyring is installed when missing and we may.
package-host-tools:
	@command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || { echo "make packages needs apt-get and dpkg-deb (Debian/Ubuntu)" >&2; exit 1; }
	@test -f /usr/share/keyrings/debian-archive-keyring.gpg || { [ "$$(id -u)" = 0 ] && \
	  { apt-get install -y -qq debian-archive-keyring >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq debian-archive-keyring >/dev/null; }; }; }

.PHONY: packages package-lock package-host-tools

clean:
	rm -rf $(VENV) .cache
