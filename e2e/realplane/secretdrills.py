"""Drills on the converged fleet: a platform team's edits to Secrets, and what must follow.

Each drill edits one Secret on the control plane as ``kubectl edit`` would (a
PUT of the whole Secret), or deletes it and creates it again; waits until the
workload clusters hold what they now should (every new value, and no value
that was replaced or revoked); waits for the fleet to converge again; and
searches the control plane for every value any Secret has held: outside
Secrets there must be none (issue 18). A caller-key Secret's edit is also
judged by the public gateway's answers (``callers``): each key it no longer
holds refused with 401, timed from the edit, and each key it holds answered.

A loss deletes a Secret's copy on its workload cluster instead, as a person or
a namespace clean-up would: provider-kubernetes creates it again with its
values, and that too must leave no value in its Object (issue 31).
"""

import base64
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from fleetgate.core.constants import SYSTEM_NAMESPACE
from fleetgate.inference_gateway.naming import GatewayNames
from oracles import secretsearch
from plane import controlplane
from plane.clusters import Cluster
from plane.kube import Obj, condition, wait_for
from sim import pki

PUBLIC_HOSTNAME = "api.fleet.example.com"  # examples/fleet/30-gateways.yaml
PROPAGATE_TIMEOUT_S = 240.0
PROBE_INTERVAL_S = 0.25
UNAUTHORIZED = 401
CONVERGE_TIMEOUT_S = 300.0


def _replacement_tls() -> dict[str, str | None]:
    """A real certificate and key for the public gateway's hostname, as a team would renew it."""
    pair = pki.leaf(
        pki.ca("fleetgate e2e drill CA"), PUBLIC_HOSTNAME, server=True, dns=(PUBLIC_HOSTNAME,)
    )
    return {"tls.crt": pair.cert_pem.decode(), "tls.key": pair.key_pem.decode()}


@dataclass(frozen=True)
class Drill:
    """One edit of a control-plane Secret: each key to its new value, or to None to remove it.

    With ``recreate`` the Secret is first deleted, which must finish (nothing
    may hold it back with a finalizer) and take its values off the clusters,
    then created again with ``changes`` as its data.
    """

    name: str
    namespace: str
    secret: str
    changes: dict[str, str | None]
    recreate: bool = False
    callers: bool = False  # the public gateway's caller keys: judged by its answers too


DRILLS = [
    Drill("credential rotated", "team-a", "openai", {"apiKey": "sk-fleet-rotated-openai-5e27b9"}),
    Drill(
        "caller key revoked",
        "fleetgate-system",
        "public-gateway-callers",
        {"team-b": None},
        callers=True,
    ),
    # The public gateway's only caller-key Secret: while it is gone no key may stay on the
    # cluster, though the gateway's front door waits for keys (issue 52).
    Drill(
        "the gateway's last caller-key Secret deleted and created again",
        "fleetgate-system",
        "public-gateway-callers",
        {"team-a": "fg-key-team-a-reissued-9c3e51"},
        recreate=True,
        callers=True,
    ),
    Drill(
        "credential Secret deleted and created again",
        "team-a",
        "openai",
        {"apiKey": "sk-fleet-recreated-openai-c41d07"},
        recreate=True,
    ),
    Drill(
        "gateway TLS Secret replaced",
        "fleetgate-system",
        "public-gateway-tls",
        _replacement_tls(),
    ),
]


# The public gateway's answer to a completion asked with a caller key: its HTTP status.
Probe = Callable[[str], int]


@dataclass(frozen=True)
class Outcome:
    drill: str
    seconds: float
    holders: list[str]  # where on the workload clusters the new values were found
    hits: list[str]  # secret values at rest outside Secrets on the control plane
    # Caller-key drills: seconds from the edit until every removed key was refused,
    # and what the gateway answered that it should not have.
    refused_after: float | None = None
    problems: list[str] = field(default_factory=list)


def _values_on(workloads: list[Cluster]) -> dict[str, list[str]]:
    """Every value of every Secret on the workload clusters, decoded → where it is held."""
    held: dict[str, list[str]] = {}
    for cluster in workloads:
        for secret in cluster.admin.list("v1", "Secret"):
            meta = secret["metadata"]
            for key, value in (secret.get("data") or {}).items():
                where = f"{cluster.name}: Secret {meta.get('namespace')}/{meta['name']} {key}"
                held.setdefault(base64.b64decode(value).decode(errors="replace"), []).append(where)
    return held


def _decoded(secret: Obj) -> dict[str, str]:
    """A Secret's data, each key to its value as written."""
    return {k: base64.b64decode(v).decode() for k, v in (secret.get("data") or {}).items()}


def _refused(removed: dict[str, str], probe: Probe, since: float) -> tuple[float | None, list[str]]:
    """Poll until the gateway refuses every key of ``removed`` (caller -> key) with 401:
    the seconds since ``since`` it took, or None and, by caller, what it still answered
    when time ran out."""
    waiting = dict(removed)
    while True:
        answers = {caller: probe(key) for caller, key in waiting.items()}
        waiting = {c: k for c, k in waiting.items() if answers[c] != UNAUTHORIZED}
        took = time.monotonic() - since
        if not waiting:
            return took, []
        if took > PROPAGATE_TIMEOUT_S:
            return None, [
                f"caller {c}'s removed key was answered {answers[c]}, not 401, "
                f"{took:.0f} s after the edit"
                for c in waiting
            ]
        time.sleep(PROBE_INTERVAL_S)


def _delete(drill: Drill, cp: Cluster, workloads: list[Cluster], secret: Obj) -> float:
    """Delete the Secret; wait until it is gone and none of its values is on a cluster.
    When the deletion was asked (monotonic seconds)."""
    values = list(_decoded(secret).values())
    asked = time.monotonic()
    cp.admin.delete("v1", "Secret", drill.secret, drill.namespace)

    def gone() -> bool:
        if cp.admin.get("v1", "Secret", drill.secret, drill.namespace) is not None:
            return False
        held = _values_on(workloads)
        return not any(v in held for v in values)

    wait_for(
        f"{drill.name}: the Secret's deletion to finish and its values to leave the clusters",
        gone,
        PROPAGATE_TIMEOUT_S,
        interval=2.0,
    )
    return asked


def run(
    drill: Drill,
    cp: Cluster,
    workloads: list[Cluster],
    needles: dict[str, str],
    probe: Probe,
) -> Outcome:
    """Do ``drill``; ``needles`` gains its new values. Fails if the clusters never catch up.
    ``probe`` asks the public gateway with a caller key, for a ``callers`` drill."""
    start = time.monotonic()
    refused_after: float | None = None
    problems: list[str] = []
    secret = cp.admin.get("v1", "Secret", drill.secret, drill.namespace)
    if secret is None:
        raise RuntimeError(f"{drill.name}: Secret {drill.namespace}/{drill.secret} is missing")
    gone: dict[str, str] = {}  # each key the Secret no longer holds -> its value
    # Where each key's value is held before the drill: its new value must be
    # held in as many places (every cluster and route that had the old one).
    old_data = secret.get("data") or {}
    held_before = _values_on(workloads)
    places = {
        key: len(held_before.get(base64.b64decode(old_data[key]).decode(), []))
        for key in drill.changes
        if key in old_data
    }
    if drill.recreate:
        deleted = _delete(drill, cp, workloads, secret)
        gone = _decoded(secret)
        if drill.callers:
            # While no Secret holds them, no key may be answered, whatever else waits.
            refused_after, problems = _refused(gone, probe, deleted)
        meta = {
            k: secret["metadata"][k]
            for k in ("name", "namespace", "labels")
            if k in secret["metadata"]
        }
        secret = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": meta,
            "type": secret.get("type"),
        }
    data = dict(secret.get("data") or {})
    new: dict[str, int] = {}  # each new value → in how many places it must be held
    for key, value in drill.changes.items():
        if key in data:
            gone[key] = base64.b64decode(data.pop(key)).decode()
        if value is not None:
            data[key] = base64.b64encode(value.encode()).decode()
            new[value] = max(1, places.get(key, 0))
            origin = f"Secret {drill.namespace}/{drill.secret} {key} after '{drill.name}'"
            needles.update(secretsearch.of_value(origin, value))
    secret["data"] = data
    if drill.recreate:
        cp.admin.create(secret)
    else:
        edited = time.monotonic()
        cp.admin.replace(secret)
        if drill.callers:
            refused_after, problems = _refused(gone, probe, edited)

    def caught_up() -> list[str]:
        held = _values_on(workloads)
        if any(len(held.get(v, [])) < n for v, n in new.items()) or any(
            v in held for v in gone.values()
        ):
            return []
        return sorted(where for v in new for where in held[v]) or ["(nothing new to hold)"]

    holders = wait_for(
        f"{drill.name}: the workload clusters to hold every new value wherever the old one was,"
        " and none replaced",
        caught_up,
        PROPAGATE_TIMEOUT_S,
        interval=2.0,
    )
    controlplane.converge(cp, CONVERGE_TIMEOUT_S, echo=False)
    if drill.callers:
        # Every key the Secret holds now is answered (the gateway serves again).
        for key, value in _decoded(secret).items():
            answered = probe(value)
            if answered != 200:
                problems.append(f"caller {key}'s key was answered {answered} once converged")
    took = time.monotonic() - start
    hits = controlplane.secrets_at_rest(cp, needles)
    return Outcome(drill.name, took, holders, hits, refused_after, problems)


@dataclass(frozen=True)
class Loss:
    """A projected Secret's copy deleted on the workload cluster that holds it."""

    name: str
    cluster: str
    secret: str
    namespace: str = SYSTEM_NAMESPACE


# The public gateway runs on eu-west-1 (examples/fleet/30-gateways.yaml).
LOSSES = [
    Loss("caller keys deleted on the cluster", "eu-west-1", GatewayNames("public").caller_keys)
]


class Versions(threading.Thread):
    """Every version the API server writes of the Objects in one namespace, until stopped:
    a value saved into an Object is blanked by Crossplane's next apply within moments, so
    only a watch sees each version."""

    def __init__(self, cp: Cluster, namespace: str) -> None:
        super().__init__(daemon=True, name=f"watch-objects-{namespace}")
        self.cp, self.namespace = cp, namespace
        self.since = cp.admin.resource_version(*controlplane.OBJECT, namespace)
        self.seen: list[Obj] = []
        self.done = threading.Event()
        self.failed: Exception | None = None

    def run(self) -> None:
        try:
            while not self.done.is_set():
                for obj in self.cp.admin.watch(*controlplane.OBJECT, self.namespace, self.since, 5):
                    self.seen.append(obj)
                    self.since = obj["metadata"]["resourceVersion"]
        except Exception as err:  # reported by holding(), in the drill's thread
            self.failed = err

    def holding(self, needles: dict[str, str], during: str) -> list[str]:
        self.done.set()
        self.join()
        if self.failed is not None:
            raise RuntimeError(f"the watch on Objects stopped {during}: {self.failed}")
        return sorted(
            {
                f"Object {obj['metadata'].get('namespace')}/{obj['metadata']['name']} "
                f"(resourceVersion "
                f"{obj['metadata']['resourceVersion']}) held the value of {origin} {during}"
                for obj in self.seen
                for needle, origin in needles.items()
                if needle in json.dumps(obj)
            }
        )


# The public gateway's caller-key selector (examples/fleet/30-gateways.yaml).
CALLER_KEYS_LABEL = {"auth.fleet.example.com/gateway": "public"}
CALLER_KEYS = "public-gateway-callers"  # examples/fleet/10-secrets.yaml


@dataclass(frozen=True)
class Shadow:
    """A second caller-key Secret the public gateway selects, claiming a caller it already has."""

    name: str
    secret: str
    caller: str
    value: str


SHADOW = Shadow(
    "a caller claimed by a second caller-key Secret",
    "public-gateway-callers-shadow",
    "team-a",
    "fg-key-team-a-shadow-4d1a7e",
)


def shadow(
    drill: Shadow, cp: Cluster, workloads: list[Cluster], needles: dict[str, str], probe: Probe
) -> Outcome:
    """Create ``drill.secret`` beside the gateway's own: while two Secrets claim the caller,
    neither of its keys authenticates (401), every other caller is answered, and
    InferenceGateway public reads CallerKeysUnique False naming both Secrets (issue 52,
    item 3). Deleting the second Secret answers the caller's own key again.
    """
    start = time.monotonic()
    own = cp.admin.get("v1", "Secret", CALLER_KEYS, SYSTEM_NAMESPACE)
    if own is None:
        raise RuntimeError(f"{drill.name}: Secret {SYSTEM_NAMESPACE}/{CALLER_KEYS} is missing")
    keys = _decoded(own)
    needles.update(
        secretsearch.of_value(f"Secret {drill.secret} after '{drill.name}'", drill.value)
    )
    claimed = {drill.caller: keys[drill.caller], f"{drill.caller} (shadow)": drill.value}
    created = time.monotonic()
    cp.admin.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": drill.secret,
                "namespace": SYSTEM_NAMESPACE,
                "labels": CALLER_KEYS_LABEL,
            },
            "data": {drill.caller: base64.b64encode(drill.value.encode()).decode()},
        }
    )
    refused_after, problems = _refused(claimed, probe, created)
    others = {c: k for c, k in keys.items() if c != drill.caller}
    problems += [
        f"caller {c} was answered {code} while {drill.caller} was claimed twice"
        for c, code in ((c, probe(k)) for c, k in others.items())
        if code != 200
    ]

    def said() -> list[str]:
        gateway = cp.admin.get(controlplane.API, "InferenceGateway", "public") or {}
        found = condition(gateway, "CallerKeysUnique") or {}
        message = str(found.get("message", ""))
        named = all(name in message for name in (CALLER_KEYS, drill.secret))
        return [message] if found.get("status") == "False" and named else []

    try:
        wait_for(f"{drill.name}: CallerKeysUnique to name both Secrets", said, PROPAGATE_TIMEOUT_S)
    except TimeoutError as unsaid:
        problems.append(str(unsaid))
    cp.admin.delete("v1", "Secret", drill.secret, SYSTEM_NAMESPACE)

    def answered() -> list[str]:
        return [drill.caller] if probe(keys[drill.caller]) == 200 else []

    holders = wait_for(
        f"{drill.name}: {drill.caller}'s own key answered", answered, PROPAGATE_TIMEOUT_S
    )
    controlplane.converge(cp, CONVERGE_TIMEOUT_S, echo=False)
    took = time.monotonic() - start
    hits = controlplane.secrets_at_rest(cp, needles)
    return Outcome(drill.name, took, holders, hits, refused_after, problems)


# How long the fleet may take to converge after a lost copy comes back before Envoy
# Gateway's status is taken for stale (it converges in seconds when it is not).
STALE_STATUS_S = 60.0


def lose(
    loss: Loss, cp: Cluster, workloads: list[Cluster], needles: dict[str, str], probe: Probe
) -> Outcome:
    """Delete the copy; wait until provider-kubernetes made it again with every value it held
    and the public gateway answers every key it holds; search every version of the Objects
    written meanwhile, then the whole control plane.

    Whether the fleet reads converged again is measured, never helped: Envoy Gateway
    v1.8.3 compares each new status with the object as its cache holds it and skips
    the write when they are equal (internal/provider/kubernetes/status_updater.go:
    96-110). provider-kubernetes makes the copy again within tens of milliseconds, so
    the "secret does not exist" status written for the loss is often not in that cache
    yet when the next reconcile computes Accepted again: the policy may go on
    reporting the Secret missing, and the InferenceGateway not Ready, while the gateway
    serves, until Envoy Gateway reconciles for another reason (docs/contract.md, "A
    copy deleted on the cluster"). Nothing is nudged or restarted: the run reports it,
    and losses run last, so no later drill waits on that status.
    """
    start = time.monotonic()
    (cluster,) = [c for c in workloads if c.name == loss.cluster]
    before = cluster.admin.get("v1", "Secret", loss.secret, loss.namespace)
    if before is None:
        raise RuntimeError(f"{loss.name}: Secret {loss.namespace}/{loss.secret} is missing")
    versions = Versions(cp, loss.namespace)
    versions.start()
    cluster.admin.delete("v1", "Secret", loss.secret, loss.namespace)

    def restored() -> list[str]:
        now = cluster.admin.get("v1", "Secret", loss.secret, loss.namespace)
        if (
            now is None
            or now["metadata"]["uid"] == before["metadata"]["uid"]
            or now.get("data") != before.get("data")
        ):
            return []
        return [
            f"{cluster.name}: Secret {loss.namespace}/{loss.secret} {key}" for key in now["data"]
        ]

    holders = wait_for(
        f"{loss.name}: provider-kubernetes to create the copy again with every value",
        restored,
        PROPAGATE_TIMEOUT_S,
        interval=1.0,
    )
    keys = _decoded(before)

    def answered() -> list[str]:
        codes = {caller: probe(value) for caller, value in keys.items()}
        return [] if set(codes.values()) != {200} else sorted(codes)

    problems: list[str] = []
    try:
        wait_for(f"{loss.name}: every caller key answered", answered, PROPAGATE_TIMEOUT_S)
    except TimeoutError as refused:
        problems.append(f"the restored copy's keys are not all answered: {refused}")
    serving = time.monotonic() - start
    try:
        took = controlplane.converge(cp, STALE_STATUS_S, echo=False)
        print(f"  the fleet read converged again {took:.0f}s after the keys were answered")
    except TimeoutError as stale:
        print(f"  upstream: Envoy Gateway's status stayed stale (docs/contract.md): {stale}")
    hits = versions.holding(needles, f"while '{loss.name}'") + controlplane.secrets_at_rest(
        cp, needles
    )
    return Outcome(loss.name, serving, holders, hits, problems=problems)
