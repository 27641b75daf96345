"""Drills on the converged fleet: a platform team's edits to Secrets, and what must follow.

Each drill edits one Secret on the control plane as ``kubectl edit`` would (a
PUT of the whole Secret), or deletes it and creates it again; waits until the
workload clusters hold what they now should (every new value, and no value
that was replaced or revoked); waits for the fleet to converge again; and
searches the control plane for every value any Secret has held: outside
Secrets there must be none (issue 18).
"""

import base64
import time
from dataclasses import dataclass

from e2e import pki
from e2e.controlplane import fleet
from e2e.controlplane.clusters import Cluster
from e2e.controlplane.kube import Obj, wait_for

PUBLIC_HOSTNAME = "api.fleet.example.com"  # examples/fleet/30-gateways.yaml
PROPAGATE_TIMEOUT_S = 240.0
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


DRILLS = [
    Drill("credential rotated", "team-a", "openai", {"apiKey": "sk-fleet-rotated-openai-5e27b9"}),
    Drill("caller key revoked", "fleetgate-system", "public-gateway-callers", {"team-b": None}),
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


@dataclass(frozen=True)
class Outcome:
    drill: str
    seconds: float
    holders: list[str]  # where on the workload clusters the new values were found
    hits: list[str]  # secret values at rest outside Secrets on the control plane


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


def _values(secret: Obj) -> list[str]:
    return [base64.b64decode(v).decode() for v in (secret.get("data") or {}).values()]


def _delete(drill: Drill, cp: Cluster, workloads: list[Cluster], secret: Obj) -> None:
    """Delete the Secret; wait until it is gone and none of its values is on a cluster."""
    values = _values(secret)
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


def run(drill: Drill, cp: Cluster, workloads: list[Cluster], needles: dict[str, str]) -> Outcome:
    """Do ``drill``; ``needles`` gains its new values. Fails if the clusters never catch up."""
    start = time.monotonic()
    secret = cp.admin.get("v1", "Secret", drill.secret, drill.namespace)
    if secret is None:
        raise RuntimeError(f"{drill.name}: Secret {drill.namespace}/{drill.secret} is missing")
    gone: list[str] = []
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
        _delete(drill, cp, workloads, secret)
        gone = _values(secret)
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
            gone.append(base64.b64decode(data.pop(key)).decode())
        if value is not None:
            data[key] = base64.b64encode(value.encode()).decode()
            new[value] = max(1, places.get(key, 0))
            origin = f"Secret {drill.namespace}/{drill.secret} {key} after '{drill.name}'"
            needles.update(fleet.needles_for(origin, value))
    secret["data"] = data
    if drill.recreate:
        cp.admin.create(secret)
    else:
        cp.admin.replace(secret)

    def caught_up() -> list[str]:
        held = _values_on(workloads)
        if any(len(held.get(v, [])) < n for v, n in new.items()) or any(v in held for v in gone):
            return []
        return sorted(where for v in new for where in held[v]) or ["(nothing new to hold)"]

    holders = wait_for(
        f"{drill.name}: the workload clusters to hold every new value wherever the old one was,"
        " and none replaced",
        caught_up,
        PROPAGATE_TIMEOUT_S,
        interval=2.0,
    )
    fleet.converge(cp, CONVERGE_TIMEOUT_S, echo=False)
    took = time.monotonic() - start
    return Outcome(drill.name, took, holders, fleet.secrets_at_rest(cp, needles))
