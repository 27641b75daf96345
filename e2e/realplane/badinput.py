"""Bad input applied with the fleet: each XR refused by the API server or reported by its
function, and the fleet converging all the same (issue 34).

Made from the example fleet's own XRs, broken where the XRDs say what is
allowed: for each user-facing kind, every bound, pattern, enum and type its
XRD declares on a field the example sets (or on a sibling of one) is a
candidate break, and a seeded draw picks ``PER_KIND`` of them. The API server
must refuse each with its own validation, as ``kubectl apply --server-side``
(strict field validation) sends it; an unknown field is one of the breaks.

Some input passes every schema and is still wrong: a Secret, a cluster or a
provider that does not exist, a selector nothing matches. One per kind is
applied; each must be reported on the XR in a False condition naming what is
wrong, while every other XR converges.

Every object is named ``malformed-…``; what they compose carries that name in
its ``crossplane.io/composite`` label. They are deleted once judged, before
the drills.
"""

import contextlib
import copy
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from plane import controlplane
from plane.clusters import Cluster
from plane.kube import ApiError, Obj, wait_for
from schemas import xrds

REPO = Path(__file__).resolve().parents[2]
PREFIX = "malformed-"
PER_KIND = 4
NOT_A_MATCH = "Not Valid!"  # no name, hostname, duration or decimal pattern takes it
SEED = 34  # the issue's number: the same draw on every run
KINDS = ["InferenceCluster", "InferenceGateway", "ModelDeployment", "ModelEndpoint", "ModelService"]
REPORT_TIMEOUT_S = 180.0
DELETE_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class Attempt:
    what: str  # the break, in words
    obj: Obj
    refused: bool  # True: the API server must refuse it; False: its function reports it
    names: str = ""  # what the report must name (reported ones)
    field: str = ""  # what the refusal must name (refused ones): the field broken


Break = tuple[str, tuple[str, ...], Any]  # what, path, bad value


def _breaks(schema: Obj, value: Any, path: tuple[str, ...]) -> Iterator[tuple[str, Break]]:
    """(class, break) for each constraint of ``schema`` at ``path``, where ``value`` is what
    the example holds there (None: absent, under an object the example has)."""
    where = ".".join(path)
    type_ = schema.get("type")
    if "maximum" in schema:
        yield "bound", (f"{where} above its maximum", path, schema["maximum"] + 1)
    if "minimum" in schema:
        yield "bound", (f"{where} below its minimum", path, schema["minimum"] - 1)
    if "maxLength" in schema:
        yield "bound", (f"{where} too long", path, "a" * (schema["maxLength"] + 1))
    if "maxItems" in schema and isinstance(value, list) and value:
        yield "bound", (f"{where} with too many items", path, [value[0]] * (schema["maxItems"] + 1))
    if "pattern" in schema and not re.search(schema["pattern"], NOT_A_MATCH):
        yield "pattern", (f"{where} against its pattern", path, NOT_A_MATCH)
    if "enum" in schema:
        yield "enum", (f"{where} outside its enum", path, "NotAnOption")
    wrong = {"integer": "seven", "string": 7, "boolean": "yes", "array": "x", "object": "x"}
    if value is not None and type_ in wrong:
        yield "type", (f"{where} of the wrong type", path, wrong[type_])
    if type_ == "object" and isinstance(value, dict):
        properties = schema.get("properties") or {}
        if properties and not schema.get("x-kubernetes-preserve-unknown-fields"):
            yield "unknown field", (f"{where} with an unknown field", (*path, "notAField"), "x")
        for key, sub in properties.items():
            yield from _breaks(sub, value.get(key), (*path, key))
    if type_ == "array" and isinstance(value, list) and value and "items" in schema:
        yield from _breaks(schema["items"], value[0], (*path, "0"))


def _put(obj: Obj, path: tuple[str, ...], value: Any) -> None:
    node: Any = obj
    for key in path[:-1]:
        node = node[int(key)] if isinstance(node, list) else node.setdefault(key, {})
    last = path[-1]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value


def _base(doc: Obj, name: str) -> Obj:
    """The example's XR under a name of its own, without labels a selector could match."""
    obj = copy.deepcopy(doc)
    meta = {"name": name}
    if "namespace" in doc["metadata"]:
        meta["namespace"] = doc["metadata"]["namespace"]
    obj["metadata"] = meta
    obj.pop("status", None)
    template = obj["spec"].get("template")
    if isinstance(template, dict):
        template.pop("metadata", None)
    return obj


def refused(docs: list[Obj]) -> list[Attempt]:
    """PER_KIND schema breaks per kind, drawn from every break the XRD allows."""
    draw = random.Random(SEED)
    attempts = []
    for kind in KINDS:
        doc = next(d for d in docs if d["kind"] == kind)
        by_class: dict[str, list[Break]] = {}
        for class_, found in _breaks(xrds.field(kind, "spec"), doc["spec"], ("spec",)):
            by_class.setdefault(class_, []).append(found)
        # One break of each class in turn (bounds, patterns, enums, types, unknown
        # fields), so that no class crowds the others out.
        classes = draw.sample(sorted(by_class), len(by_class))
        picked = [draw.choice(by_class[classes[i % len(classes)]]) for i in range(PER_KIND)]
        for i, (what, path, value) in enumerate(picked):
            obj = _base(doc, f"{PREFIX}{kind.lower()}-{i}")
            _put(obj, path, value)
            field = next(key for key in reversed(path) if not key.isdigit())
            attempts.append(Attempt(f"{kind}: {what}", obj, refused=True, field=field))
    return attempts


def reported(docs: list[Obj]) -> list[Attempt]:
    """One schema-valid but wrong XR per kind, and what its report must name."""

    def base(kind: str) -> Obj:
        return _base(next(d for d in docs if d["kind"] == kind), f"{PREFIX}{kind.lower()}")

    cluster = base("InferenceCluster")
    cluster["spec"]["credentials"] = {"providerConfigName": "no-such-cluster"}
    gateway = base("InferenceGateway")
    gateway["spec"]["clusterName"] = "no-such-cluster"
    gateway["spec"].pop("tls", None)
    gateway["spec"].pop("auth", None)
    gateway["spec"].pop("hostname", None)
    # Selecting no service: what it does to the services it would serve is not this check.
    gateway["spec"]["serviceSelector"] = {"matchLabels": {"visibility": "nobody"}}
    deployment = base("ModelDeployment")
    deployment["spec"]["provider"] = {"name": "KubeRay"}  # no cluster of the fleet offers it
    endpoint = base("ModelEndpoint")
    endpoint["spec"]["credentialRef"] = {"name": "no-such-secret"}
    service = base("ModelService")
    service["spec"]["endpoints"] = [{"selector": {"matchLabels": {"model": "no-such-model"}}}]
    return [
        Attempt(
            "InferenceCluster: a ProviderConfig that does not exist",
            cluster,
            False,
            "no-such-cluster",
        ),
        Attempt(
            "InferenceGateway: a cluster that does not exist", gateway, False, "no-such-cluster"
        ),
        Attempt("ModelDeployment: a provider no cluster offers", deployment, False, "KubeRay"),
        Attempt(
            "ModelEndpoint: a credential Secret that does not exist",
            endpoint,
            False,
            "no-such-secret",
        ),
        Attempt("ModelService: a selector no endpoint matches", service, False, "spec.endpoints"),
    ]


def apply(cp: Cluster, attempts: list[Attempt]) -> list[str]:
    """Apply each as kubectl would; problems: a break admitted, stored, or refused without
    naming its field, or a schema-valid XR refused."""
    problems = []
    for attempt in attempts:
        meta = attempt.obj["metadata"]
        try:
            cp.admin.apply(attempt.obj, manager="kubectl", strict=True)
            refusal = None
        except ApiError as err:
            refusal = err.message
        if refusal is None:
            if attempt.refused:
                problems.append(f"admitted: {attempt.what}")
            continue
        if not attempt.refused:
            problems.append(f"refused although schema-valid: {attempt.what}: {refusal}")
        elif attempt.field not in refusal:
            problems.append(f"refused without naming {attempt.field}: {attempt.what}: {refusal}")
        elif cp.admin.get(
            controlplane.API, attempt.obj["kind"], meta["name"], meta.get("namespace", "")
        ):
            problems.append(f"refused, yet stored: {attempt.what}")
        else:
            print(f"  refused: {attempt.what}: {refusal[:240]}")
    return problems


def excluded(obj: Obj) -> bool:
    """Whether ``obj`` is one of these XRs or composed for one."""
    meta = obj.get("metadata") or {}
    composite = (meta.get("labels") or {}).get("crossplane.io/composite", "")
    return str(meta.get("name", "")).startswith(PREFIX) or composite.startswith(PREFIX)


def reports(cp: Cluster, attempts: list[Attempt]) -> list[str]:
    """Wait until every admitted XR reports a False condition naming what is wrong; each
    one's report is printed. Problems: the ones that never said."""
    wanted = {(a.obj["kind"], a.obj["metadata"]["name"]): a for a in attempts if not a.refused}

    def said() -> dict[tuple[str, str], str]:
        found = {}
        for xr in controlplane.xrs(cp):
            key = (xr["kind"], xr["metadata"]["name"])
            attempt = wanted.get(key)
            for cond in (xr.get("status") or {}).get("conditions") or []:
                message = str(cond.get("message", ""))
                if attempt and cond.get("status") == "False" and attempt.names in message:
                    found[key] = f"{cond['type']} False {cond.get('reason', '')}: {message}"
        return found

    with contextlib.suppress(TimeoutError):  # what is missing is said below
        wait_for(
            "every malformed XR to report what is wrong",
            lambda: len(said()) == len(wanted),
            REPORT_TIMEOUT_S,
            2.0,
        )
    found = said()
    for key, line in sorted(found.items()):
        print(f"  reported: {wanted[key].what}: {line[:300]}")
    return [f"never reported: {a.what}" for k, a in wanted.items() if k not in found]


def delete(cp: Cluster, attempts: list[Attempt]) -> None:
    """Delete what was admitted and wait until it and what it composed are gone."""
    for attempt in attempts:
        meta = attempt.obj["metadata"]
        cp.admin.delete(
            controlplane.API, attempt.obj["kind"], meta["name"], meta.get("namespace", "")
        )

    def gone() -> bool:
        return not any(
            excluded(o) for o in [*controlplane.xrs(cp), *cp.admin.list(*controlplane.OBJECT)]
        )

    wait_for("the malformed XRs and what they composed to be deleted", gone, DELETE_TIMEOUT_S, 2.0)
