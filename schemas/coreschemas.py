"""Schemas for the built-in Kubernetes kinds Fleetgate composes, as CRDs the validator reads.

Built-in kinds have no CRD, so ``crossplane beta validate`` cannot check them
by itself; an unknown field in an engine Deployment would then be pruned by a
real API server without a word. Kubernetes publishes the OpenAPI v3 schema of
every built-in kind in its repository (``api/openapi-spec/v3``); this module
takes it from the pinned ``k8s.io/kubernetes`` Go module (its zip checked
against the sum kept here) and writes one CRD per kind, with every ``$ref``
resolved inline, the way the API server's own structural schema sees it.

Usage: ``python -m schemas.coreschemas [--dest DIR]``.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Final

import yaml

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DEST = REPO / ".cache" / "core-schemas"
MODULE: Final = "k8s.io/kubernetes"
VERSION: Final = "v1.34.1"
# go.sum-style hash of the module zip: the go command reports it, this file pins it.
SUM: Final = "h1:F3p8dtpv+i8zQoebZeK5zBqM1g9x1aIdnA5vthvcuUk="
SPEC_DIR: Final = "api/openapi-spec/v3"
STAMP: Final = ".generated.json"

# (spec file, group, version, kind, plural, scope): every built-in kind a function composes.
KINDS: Final = [
    ("api__v1_openapi.json", "", "v1", "ConfigMap", "configmaps", "Namespaced"),
    ("api__v1_openapi.json", "", "v1", "Secret", "secrets", "Namespaced"),
    ("api__v1_openapi.json", "", "v1", "Service", "services", "Namespaced"),
    ("api__v1_openapi.json", "", "v1", "ServiceAccount", "serviceaccounts", "Namespaced"),
    ("api__v1_openapi.json", "", "v1", "Namespace", "namespaces", "Cluster"),
    ("apis__apps__v1_openapi.json", "apps", "v1", "Deployment", "deployments", "Namespaced"),
    (
        "apis__discovery.k8s.io__v1_openapi.json",
        "discovery.k8s.io",
        "v1",
        "EndpointSlice",
        "endpointslices",
        "Namespaced",
    ),
    (
        "apis__networking.k8s.io__v1_openapi.json",
        "networking.k8s.io",
        "v1",
        "NetworkPolicy",
        "networkpolicies",
        "Namespaced",
    ),
    (
        "apis__rbac.authorization.k8s.io__v1_openapi.json",
        "rbac.authorization.k8s.io",
        "v1",
        "Role",
        "roles",
        "Namespaced",
    ),
    (
        "apis__rbac.authorization.k8s.io__v1_openapi.json",
        "rbac.authorization.k8s.io",
        "v1",
        "RoleBinding",
        "rolebindings",
        "Namespaced",
    ),
    # The endpoint picker's right to review scrapers' tokens is cluster-wide.
    (
        "apis__rbac.authorization.k8s.io__v1_openapi.json",
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRole",
        "clusterroles",
        "Cluster",
    ),
    (
        "apis__rbac.authorization.k8s.io__v1_openapi.json",
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        "Cluster",
    ),
]
COVERED: Final = frozenset((f"{g}/{v}" if g else v, k) for _, g, v, k, _, _ in KINDS)

# Documentation, defaults and client-side patch hints do not validate anything.
_DROPPED = frozenset(
    {
        "description",
        "default",
        "example",
        "x-kubernetes-patch-strategy",
        "x-kubernetes-patch-merge-key",
        "x-kubernetes-group-version-kind",
        "x-kubernetes-unions",
    }
)
_INT_OR_STRING: Final = {"anyOf": [{"type": "integer"}, {"type": "string"}]}

Schema = dict[str, Any]


# A built-in []byte field (a Secret's data) is decoded by encoding/json (Go 1.26
# src/encoding/json/decode.go:950-951, base64.StdEncoding), which
# takes any padded standard base64, the empty string included: the API server
# stores a Secret key with no value, as make e2e does with every projected
# Secret's first version (core/secrets.py). A CRD's ``format: byte`` is checked
# with govalidator.IsBase64 (kube-openapi pkg/validation/strfmt/default.go:204),
# whose pattern needs at least one 4-character group and refuses "". So the
# format becomes the pattern of what the built-in decoder accepts.
_STD_BASE64 = r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"


class CoreSchemaError(RuntimeError):
    """The pinned Kubernetes module could not be obtained or did not match its sum."""


def structural(node: Schema, schemas: dict[str, Schema], seen: frozenset[str]) -> Schema:
    """``node`` with references resolved and only what validation needs kept."""
    if "$ref" in node:
        name = str(node["$ref"]).rsplit("/", 1)[-1]
        if name in seen:  # a recursive type: accept what it holds
            return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        return structural(schemas[name], schemas, seen | {name})
    if "allOf" in node and len(node["allOf"]) == 1:
        return structural(node["allOf"][0], schemas, seen)
    # IntOrString and Quantity: an integer or a string, as CRDs spell it.
    if node.get("format") == "int-or-string" or "oneOf" in node:
        return {**_INT_OR_STRING, "x-kubernetes-int-or-string": True}
    out: Schema = {}
    for key, value in node.items():
        if key in _DROPPED:
            continue
        if key == "properties":
            out[key] = {k: structural(v, schemas, seen) for k, v in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = structural(value, schemas, seen)
        else:
            out[key] = value
    if "type" not in out:
        # Untyped (RawExtension and friends) holds anything; typed only by its fields.
        if "properties" in out:
            out["type"] = "object"
        else:
            return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return _bytes_as_decoded(out)


def _bytes_as_decoded(node: Schema) -> Schema:
    """A ``format: byte`` field checked as the built-in decoder checks it (see _STD_BASE64)."""
    if node.get("format") != "byte":
        return node
    return {**{k: v for k, v in node.items() if k != "format"}, "pattern": _STD_BASE64}


def crd(spec: dict[str, Any], row: tuple[str, str, str, str, str, str]) -> Schema:
    """A CRD carrying the built-in kind's schema (``row`` as in KINDS)."""
    _, group, version, kind, plural, scope = row
    schemas = spec["components"]["schemas"]
    (name,) = [
        key
        for key, schema in schemas.items()
        if {"group": group, "version": version, "kind": kind}
        in schema.get("x-kubernetes-group-version-kind", [])
    ]
    schema = structural(schemas[name], schemas, frozenset({name}))
    # ObjectMeta is the API server's to check (and schemas/validate checks its keys).
    schema["properties"]["metadata"] = {"type": "object"}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group or 'core'}"},
        "spec": {
            "group": group,
            "names": {"kind": kind, "plural": plural, "listKind": f"{kind}List"},
            "scope": scope,
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                }
            ],
        },
    }


def _module_dir() -> Path:
    """The pinned module's files, downloaded by the go command and checked against SUM."""
    env = {**os.environ, "GOFLAGS": "-mod=mod", "GOWORK": "off", "GOTOOLCHAIN": "local"}
    try:
        with tempfile.TemporaryDirectory(prefix="fleetgate-k8s-") as tmp:
            proc = subprocess.run(
                ["go", "mod", "download", "-json", f"{MODULE}@{VERSION}"],
                cwd=tmp,
                env=env,
                capture_output=True,
                text=True,
                timeout=900,
                check=False,
            )
    except FileNotFoundError as exc:
        raise CoreSchemaError("the `go` command is not on PATH; Go 1.25+ is needed") from exc
    except subprocess.TimeoutExpired as exc:
        raise CoreSchemaError(f"go mod download {MODULE}@{VERSION} timed out") from exc
    info = json.loads(proc.stdout or "{}")
    if proc.returncode != 0 or info.get("Error"):
        raise CoreSchemaError(
            f"go mod download {MODULE}@{VERSION}: {info.get('Error') or proc.stderr}"
        )
    if info.get("Sum") != SUM:
        raise CoreSchemaError(f"{MODULE}@{VERSION} has sum {info.get('Sum')}, pinned {SUM}")
    return Path(info["Dir"])


def fetch(dest: Path = DEFAULT_DEST) -> list[Path]:
    """The CRD files for the built-in kinds (generated once per pin). Returns their paths."""
    key = json.dumps([MODULE, VERSION, SUM, KINDS, Path(__file__).read_text()], sort_keys=True)
    stamp = dest / STAMP
    files = [dest / f"{plural}.{group or 'core'}.yaml" for _, group, _, _, plural, _ in KINDS]
    if stamp.is_file() and stamp.read_text() == key and all(f.is_file() for f in files):
        return files
    spec_dir = _module_dir() / SPEC_DIR
    dest.mkdir(parents=True, exist_ok=True)
    specs: dict[str, dict[str, Any]] = {}
    for row, path in zip(KINDS, files, strict=True):
        spec_file = row[0]
        if spec_file not in specs:
            specs[spec_file] = json.loads((spec_dir / spec_file).read_text())
        path.write_text(yaml.safe_dump(crd(specs[spec_file], row)))
    stamp.write_text(key)
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dest", type=Path, default=DEFAULT_DEST)
    args = parser.parse_args(argv)
    try:
        files = fetch(args.dest)
    except CoreSchemaError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"{len(files)} built-in kind schemas from {MODULE}@{VERSION} in {args.dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
