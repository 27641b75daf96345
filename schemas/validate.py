"""Validate Kubernetes objects against the pinned upstream CRDs with ``crossplane beta validate``.

What is checked, and by whom:

* Every object whose kind has a CRD (upstream or an XRD/CRD passed by the caller)
  goes to the real Crossplane CLI: OpenAPI schema, enums, patterns, CEL
  ``x-kubernetes-validations`` and unknown fields. Crossplane v2.2.0 reports an
  unknown field as ``[x] schema validation error ... unknown field: "<name>"``
  and exits non-zero, so those lines are failures like any other.
* A kind with no schema is a failure (``--error-on-missing-schemas``, and its
  ``[!] could not find CRD/XRD`` line is reported against the object).
* The CLI never looks at ``metadata`` (the API server prunes unknown metadata
  fields silently), so this module checks metadata keys against ObjectMeta.
* A provider-kubernetes ``Object`` carries another object in
  ``spec.forProvider.manifest``, which its schema leaves free-form. That
  manifest is unwrapped and validated as an object of its own; its errors name
  the Object it came from.
* Built-in Kubernetes kinds have no CRD: those Fleetgate composes (Deployment,
  Service, ConfigMap, Secret, …) are checked against Kubernetes' own published
  OpenAPI schema, turned into CRDs by ``schemas/coreschemas.py`` from the pinned
  ``k8s.io/kubernetes`` module. ``CORE_KINDS`` without such a schema (a
  CustomResourceDefinition manifest) get a minimal structural check here:
  apiVersion, kind, metadata.name, ObjectMeta keys and allowed top-level fields.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from schemas import coreschemas, crds

REPO = Path(__file__).resolve().parent.parent
DEFAULT_CLI = REPO / ".cache" / "bin" / "crossplane"
CACHE_DIR = REPO / ".cache" / "crossplane-validate"
TIMEOUT_S = 300.0

# `crossplane beta validate` always adds the Crossplane image to the packages
# it downloads schemas from (a go-install build even names it with an empty,
# unparseable tag). Pointing it at a pinned tag whose cache entry already
# exists, holding no documents, keeps it offline; Crossplane's own CRDs come
# from the pinned CRD set like every other upstream.
CROSSPLANE_IMAGE = "xpkg.crossplane.io/crossplane/crossplane:v2.2.0"

# Upstream folders not given to the CLI: the Envoy Gateway bundle (experimental
# channel, the one Envoy Gateway installs) is the only Gateway API channel, as
# loading two definitions of one kind makes the CLI report every error twice.
EXCLUDED_FOLDERS = ("gateway-api/",)

# Kinds with an Object manifest to unwrap: apiVersion -> kind.
WRAPPERS = {
    "kubernetes.m.crossplane.io/v1alpha1": "Object",
    "kubernetes.crossplane.io/v1alpha2": "Object",
    "kubernetes.crossplane.io/v1alpha1": "Object",
}
MAX_WRAP_DEPTH = 4

# Built-in kinds this project composes, with the top-level fields each may carry
# besides apiVersion, kind and metadata. Any other built-in kind is sent to the
# CLI and fails there as a missing schema, so the list stays deliberate.
CORE_KINDS: dict[tuple[str, str], frozenset[str]] = {
    ("v1", "ConfigMap"): frozenset({"data", "binaryData", "immutable"}),
    ("v1", "Secret"): frozenset({"data", "stringData", "type", "immutable"}),
    ("v1", "Service"): frozenset({"spec", "status"}),
    ("v1", "Namespace"): frozenset({"spec", "status"}),
    ("apps/v1", "Deployment"): frozenset({"spec", "status"}),
    ("discovery.k8s.io/v1", "EndpointSlice"): frozenset({"addressType", "endpoints", "ports"}),
    ("v1", "ServiceAccount"): frozenset(
        {"secrets", "imagePullSecrets", "automountServiceAccountToken"}
    ),
    ("rbac.authorization.k8s.io/v1", "Role"): frozenset({"rules"}),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): frozenset({"subjects", "roleRef"}),
    # Upstream CRDs the stack install applies as they are (checked against the
    # pinned files by the cluster function's tests).
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"): frozenset({"spec", "status"}),
}

OBJECT_META_FIELDS = frozenset(
    {
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "managedFields",
    }
)

# A resource of this kind follows every object sent to the CLI. The CLI prints
# results in input order, and each sentinel's success line closes the block of
# lines that belongs to the object before it, so every line is attributed to
# exactly one object even when several share a kind and name.
SENTINEL_GROUP = "sentinel.validate.fleetgate.dev"
SENTINEL_API_VERSION = f"{SENTINEL_GROUP}/v1"
SENTINEL_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"sentinels.{SENTINEL_GROUP}"},
    "spec": {
        "group": SENTINEL_GROUP,
        "names": {
            "kind": "Sentinel",
            "listKind": "SentinelList",
            "plural": "sentinels",
            "singular": "sentinel",
        },
        "scope": "Cluster",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {"openAPIV3Schema": {"type": "object"}},
            }
        ],
    },
}
_SENTINEL_DONE = re.compile(
    rf"^\[✓\] {re.escape(SENTINEL_API_VERSION)}, Kind=Sentinel, sentinel-(\d+) validated "
    r"successfully$"
)
_RESULT = re.compile(r"^\[(?P<mark>[x✓!])\] (?P<rest>.*)$")


class ValidatorUnavailableError(RuntimeError):
    """The Crossplane CLI or the CRD set is missing: validation cannot run (never a pass)."""


class ValidatorError(RuntimeError):
    """The Crossplane CLI failed in a way that says nothing about the objects."""


@dataclass
class _Item:
    """One object to check, with the words that say where it came from."""

    obj: Mapping[str, Any]
    index: int  # position of the top-level object it is, or is wrapped in
    label: str
    errors: list[str] = field(default_factory=list)


def cli_path() -> Path:
    """The Crossplane CLI to run: ``$CROSSPLANE_CLI`` or ``<repo>/.cache/bin/crossplane``."""
    return Path(os.environ.get("CROSSPLANE_CLI") or DEFAULT_CLI)


def schema_files(crd_dir: Path) -> list[Path]:
    """The upstream CRD files given to the CLI: all of them, with one Gateway API channel."""
    chosen = []
    for path in sorted(crd_dir.rglob("*.yaml")):
        rel = path.relative_to(crd_dir).as_posix()
        if not rel.startswith(EXCLUDED_FOLDERS):
            chosen.append(path)
    if not chosen:
        raise ValidatorUnavailableError(f"no CRD files in {crd_dir}")
    return chosen


def _describe(obj: Mapping[str, Any]) -> str:
    kind = obj.get("kind", "?")
    api_version = obj.get("apiVersion", "?")
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    name = meta.get("name") or (f"{meta['generateName']}*" if meta.get("generateName") else "")
    if not name:
        annotations = meta.get("annotations")
        if isinstance(annotations, Mapping):
            name = annotations.get("crossplane.io/composition-resource-name", "")
    namespace = meta.get("namespace")
    name = name or "<unnamed>"
    where = f"{namespace}/{name}" if namespace else str(name)
    return f"{kind} {where} ({api_version})"


def _string_map(value: object, path: str, errors: list[str]) -> None:
    if value is None:
        return
    if not isinstance(value, Mapping):
        errors.append(f"{path}: must be a map of strings, got {type(value).__name__}")
        return
    errors.extend(
        f"{path}.{key}: must be a string, got {type(item).__name__}"
        for key, item in value.items()
        if not isinstance(key, str) or not isinstance(item, str)
    )


def _check_envelope(obj: Mapping[str, Any], *, name_required: bool) -> list[str]:
    """apiVersion, kind and metadata: what every object needs and the CLI does not check."""
    errors: list[str] = []
    for key in ("apiVersion", "kind"):
        if not isinstance(obj.get(key), str) or not obj.get(key):
            errors.append(f"{key}: Required value")
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        return [*errors, "metadata: Required value"]
    errors.extend(
        f'metadata.{key}: unknown field: "{key}"' for key in meta if key not in OBJECT_META_FIELDS
    )
    name, generate_name = meta.get("name"), meta.get("generateName")
    if not (isinstance(name, str) and name) and (
        name_required or not (isinstance(generate_name, str) and generate_name)
    ):
        errors.append("metadata.name: Required value")
    _string_map(meta.get("labels"), "metadata.labels", errors)
    _string_map(meta.get("annotations"), "metadata.annotations", errors)
    return errors


def _check_core(obj: Mapping[str, Any], allowed: frozenset[str]) -> list[str]:
    """The minimal check for a built-in kind (see the module docstring)."""
    errors = [
        f'{key}: unknown field: "{key}"'
        for key in obj
        if key not in allowed and key not in ("apiVersion", "kind", "metadata")
    ]
    kind = obj.get("kind")
    if kind in ("ConfigMap", "Secret"):
        _string_map(obj.get("data" if kind == "ConfigMap" else "stringData"), "data", errors)
        encoded = "binaryData" if kind == "ConfigMap" else "data"
        _string_map(obj.get(encoded), encoded, errors)
        for key, value in (obj.get(encoded) or {}).items():
            try:
                base64.b64decode(str(value), validate=True)
            except (binascii.Error, ValueError):
                errors.append(f"{encoded}.{key}: not valid base64")
    if kind == "EndpointSlice" and obj.get("addressType") not in ("IPv4", "IPv6", "FQDN"):
        errors.append(
            f"addressType: Unsupported value: {obj.get('addressType')!r}: "
            'supported values: "IPv4", "IPv6", "FQDN"'
        )
    meta = obj.get("metadata")
    if kind == "Namespace" and isinstance(meta, Mapping) and "namespace" in meta:
        errors.append("metadata.namespace: a Namespace is cluster-scoped")
    return errors


def _collect(obj: object, index: int, label: str, *, depth: int, into: list[_Item]) -> list[str]:
    """Queue ``obj`` (and any manifest it wraps) for the CLI; return errors found here."""
    if not isinstance(obj, Mapping):
        return [f"{label}not an object but {type(obj).__name__}"]
    item = _Item(obj, index, f"{label}{_describe(obj)}")
    # provider-kubernetes names the remote object after its manifest: no generateName there.
    wrapped = depth > 0
    errors = [f"{item.label}: {e}" for e in _check_envelope(obj, name_required=wrapped)]
    if not isinstance(obj.get("apiVersion"), str) or not isinstance(obj.get("kind"), str):
        return errors  # the CLI cannot even load an object without these
    core = CORE_KINDS.get((obj["apiVersion"], obj["kind"]))
    if core is not None and (obj["apiVersion"], obj["kind"]) not in coreschemas.COVERED:
        return errors + [f"{item.label}: {e}" for e in _check_core(obj, core)]
    into.append(item)
    if WRAPPERS.get(obj["apiVersion"]) == obj["kind"]:
        spec = obj.get("spec")
        for_provider = spec.get("forProvider") if isinstance(spec, Mapping) else None
        manifest = for_provider.get("manifest") if isinstance(for_provider, Mapping) else None
        if manifest is not None:
            if depth >= MAX_WRAP_DEPTH:
                return [*errors, f"{item.label}: manifests nested deeper than {MAX_WRAP_DEPTH}"]
            errors += _collect(
                manifest,
                index,
                f"{item.label} -> spec.forProvider.manifest: ",
                depth=depth + 1,
                into=into,
            )
        # A missing manifest is the Object schema's business (it is required there).
    return errors


def _seed_cache(cache_dir: Path) -> None:
    """Make the CLI find the Crossplane image's schemas cached (empty): it must stay offline."""
    repository, _, tag = CROSSPLANE_IMAGE.rpartition(":")
    entry = cache_dir / f"{repository}@{tag}"
    placeholder = entry / "package.yaml"
    if not placeholder.is_file():
        entry.mkdir(parents=True, exist_ok=True)
        temporary = entry / f".package.yaml.{os.getpid()}"
        temporary.write_text("# Crossplane's CRDs come from the pinned CRD set.\n")
        temporary.replace(placeholder)


def _attribute(stdout: str, stderr: str, items: Sequence[_Item]) -> list[str]:
    """Give each line of the CLI's report to the object it is about; return stray lines."""
    stray: list[str] = []
    block: list[str] = []
    done = 0
    for line in stdout.splitlines():
        sentinel = _SENTINEL_DONE.match(line)
        if sentinel:
            if int(sentinel.group(1)) != done or done >= len(items):
                raise ValidatorError(f"unexpected sentinel in the CLI's report:\n{stdout}")
            _record(items[done], block)
            block, done = [], done + 1
        elif line.startswith("Total ") and done == len(items):
            continue
        elif done < len(items):
            block.append(line)
        elif line.strip():
            stray.append(line)
    if done != len(items):
        raise ValidatorError(
            f"the CLI reported on {done} of {len(items)} objects; its report:\n{stdout}{stderr}"
        )
    return stray


def _record(item: _Item, lines: Sequence[str]) -> None:
    """Turn one object's report lines into error strings on it."""
    saw_result = False
    for line in lines:
        result = _RESULT.match(line)
        if result is None:
            if line.strip() and item.errors:
                item.errors[-1] += f"\n{line}"  # a message that spans lines
            elif line.strip():
                item.errors.append(f"{item.label}: {line}")
            continue
        saw_result = True
        mark, rest = result.group("mark"), result.group("rest")
        if mark == "✓":
            continue
        if rest.startswith("could not find CRD/XRD for: "):
            item.errors.append(f"{item.label}: no schema (CRD/XRD) for this kind")
            continue
        # "[x] schema validation error <gvk>, <name> : <message>" (or "CEL validation error");
        # the object is already named in the label, so keep only the message.
        message = rest.split(" : ", 1)[1] if " : " in rest else rest
        prefix = "CEL rule: " if rest.startswith("CEL ") else ""
        item.errors.append(f"{item.label}: {prefix}{message}")
    if not saw_result:
        item.errors.append(f"{item.label}: the CLI printed no result for this object")


class _CLIDumper(yaml.SafeDumper):
    """PyYAML's safe dumper, quoting every string the CLI would read as a boolean or a
    number.

    The CLI reads YAML 1.1 as go-yaml does, where a plain y, Y, n or N is a
    boolean, and a plain scalar is a number when Go's ``strconv.ParseInt(s, 0, 64)``
    takes it (underscores removed: 0o17, 0B101 …) or it looks like a YAML float,
    exponent without a dot included (1e5). PyYAML's resolver knows none of those, so
    it would leave a string "y" or "1e5" (names the fuzz strategies make) unquoted and
    the CLI would refuse it as not a string. Quoting more than go-yaml needs is
    harmless: a quoted scalar is a string to both.
    """


_CLIDumper.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:y|Y|n|N)$"), list("yYnN")
)
_CLIDumper.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"^[-+]?(?:0[xXoObB][0-9a-fA-F_]+|(?:\.[0-9_]+|[0-9][0-9_]*(?:\.[0-9_]*)?)"
        r"(?:[eE][-+]?[0-9]+)?)$"
    ),
    list("-+.0123456789"),
)


def validate(
    objects: Sequence[Mapping[str, Any]],
    *,
    extra_schema_files: Sequence[Path] = (),
    crd_dir: Path | None = None,
    timeout: float = TIMEOUT_S,
) -> list[str]:
    """Validate ``objects``; return one string per problem (an empty list means valid).

    ``extra_schema_files`` are more CRDs or XRDs (for example ``apis/*.yaml``).
    ``crd_dir`` defaults to the pinned set, fetched on first use. Raises
    ``ValidatorUnavailableError`` when the CLI or the CRDs are missing.
    """
    cli = cli_path()
    if not (cli.is_file() and os.access(cli, os.X_OK)):
        raise ValidatorUnavailableError(
            f"Crossplane CLI not found at {cli} (set CROSSPLANE_CLI or install it there)"
        )
    try:
        crd_root = crd_dir if crd_dir is not None else crds.fetch()
    except crds.FetchError as exc:
        raise ValidatorUnavailableError(f"the pinned CRD set is unavailable: {exc}") from exc
    try:
        extensions = schema_files(crd_root) + coreschemas.fetch()
    except coreschemas.CoreSchemaError as exc:
        raise ValidatorUnavailableError(
            f"the built-in kinds' schemas are unavailable: {exc}"
        ) from exc
    for extra in extra_schema_files:
        if not Path(extra).is_file():
            raise ValidatorUnavailableError(f"schema file {extra} does not exist")
        extensions.append(Path(extra).resolve())

    items: list[_Item] = []
    found: list[list[str]] = [
        _collect(obj, index, f"objects[{index}] ", depth=0, into=items)
        for index, obj in enumerate(objects)
    ]
    if not items:
        return [error for group in found for error in group]

    documents: list[Mapping[str, Any]] = []
    for index, item in enumerate(items):
        sentinel = {
            "apiVersion": SENTINEL_API_VERSION,
            "kind": "Sentinel",
            "metadata": {"name": f"sentinel-{index}"},
        }
        documents += [item.obj, sentinel]
    _seed_cache(CACHE_DIR)
    with tempfile.TemporaryDirectory(prefix="fleetgate-validate-") as work:
        workdir = Path(work)
        (workdir / "sentinel-crd.yaml").write_text(yaml.safe_dump(SENTINEL_CRD))
        extensions.append(workdir / "sentinel-crd.yaml")
        (workdir / "resources.yaml").write_text(
            yaml.dump_all([dict(d) for d in documents], Dumper=_CLIDumper, sort_keys=False)
        )
        if any("," in str(path) for path in extensions):
            raise ValidatorError("a schema file path contains a comma, which the CLI splits on")
        command = [
            str(cli), "beta", "validate",
            ",".join(str(path) for path in extensions),
            "resources.yaml",
            "--cache-dir", str(CACHE_DIR),
            "--crossplane-image", CROSSPLANE_IMAGE,
            "--error-on-missing-schemas",
        ]  # fmt: skip
        try:
            proc = subprocess.run(
                command, cwd=workdir, capture_output=True, text=True, timeout=timeout, check=False
            )
        except subprocess.TimeoutExpired as exc:
            raise ValidatorError(
                f"crossplane beta validate timed out after {timeout:.0f}s"
            ) from exc
    if "schemas does not exist, downloading" in proc.stdout:
        raise ValidatorError(f"the CLI tried to download schemas:\n{proc.stdout}")
    stray = _attribute(proc.stdout, proc.stderr, items)
    for item in items:
        found[item.index] += item.errors
    errors = [error for group in found for error in group]
    errors += [f"crossplane beta validate: {line}" for line in stray]
    if proc.returncode != 0 and not errors:
        raise ValidatorError(
            f"crossplane beta validate exited {proc.returncode} without naming a problem:\n"
            f"{proc.stdout}{proc.stderr}"
        )
    return errors
