"""How many ModelServices fit on one fleet gateway under the 4 MiB extension message limit.

Envoy Gateway v1.8.3 sends Envoy AI Gateway v1.1.0's extension server one
PostTranslateModify request per Gateway translation, holding that Gateway's
xDS clusters, secrets, listeners and route configurations (all four, as AI
Gateway's Envoy Gateway values and Fleetgate's stack ask); the answer holds
them all back, with AI Gateway's additions. gRPC caps a received message at
4 MiB by default: AI Gateway's server the request, Envoy Gateway's client the
answer. This measures both, by services on one gateway.

The fleet: examples/fleet plus, for each template (backends per service,
short or long names), a pool of ModelEndpoints (half fleet-hosted, from CPU
ModelDeployments placed on both clusters, reached over mutual TLS; half third
party with an API key over public TLS) in entries of 4 at their own priority,
as bench/workloads.py builds the ModelService maximum, and two ModelServices
selecting it that the public fleet gateway (eu-west-1) serves. The fleet is
walked through the real functions (e2e.fleet). S services are then the first
one's ModelRoute objects on that cluster, copied with the service name changed
to another of the same length (checked: the second real service and the copy
standing for it give the same clusters, listeners and routes to the byte, and
secrets within the few bytes by which any two calls differ, each issuing fresh
certificates). oracles.translate.cluster_input adds what the cluster holds; egctl
checks every route, backend and policy is accepted.

Above 16 backends a route cannot be served: AI Gateway puts every backendRef
of an AIGatewayRoute rule into one HTTPRoute rule, which Gateway API allows 16
(egctl refuses it as the API server would; recorded). The 128-backend
template, the ModelRoute API's maximum, is measured with that check skipped,
as the size the API's maximum would have.

Two helpers, built outside the repository. ``extmsg`` is Envoy Gateway
v1.8.3's code (a copy of its module, /tmp/extmsg/gateway, plus
cmd/extmsg/main.go; the one change: EXTMSG_SKIP_VALIDATION=1 skips the loader's
CRD check): it loads the file as ``egctl experimental translate`` does,
translates with egctl's options and runs the xDS translator with Envoy
Gateway's in-memory extension manager configured as AI Gateway's values (post
hooks Translation, Cluster, Route; all four kinds included), so Envoy
Gateway's own hook builds the request and sends it over gRPC to an echoing
server with grpc-go's default 4 MiB receive limit. It prints each Gateway's
request size by part, what the server received or the gRPC error, and writes
the request. ``aigwext`` is AI Gateway v1.1.0's extension server (a copy of
its module, /tmp/extmsg/ai-gateway, plus cmd/aigwext/main.go) answering that
request over a fake client holding the AIGatewayRoutes and Gateways; it prints
the answer's size by part. Then::

    PYTHONPATH=. .venv/bin/python -m bench.extension_message.measure [--quick]

writes bench/extension_message/results.json (``--quick``: one small template,
to /tmp/extmsg/results-quick.json). About an hour on 2 cores, half of it the
walk.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from operator import itemgetter
from pathlib import Path
from typing import Any, NamedTuple

from bench.world import long_name
from e2e import functions
from e2e.fleet import Fleet, Obj, XRKey
from fleetgate.core import names
from fleetgate.core.constants import API_VERSION, SYSTEM_NAMESPACE
from oracles import dataplane, translate
from sim.controllers import patched

HERE = Path(__file__).resolve().parent
EXTMSG = Path(os.environ.get("EXTMSG", "/tmp/extmsg/extmsg"))
AIGWEXT = Path(os.environ.get("AIGWEXT", "/tmp/extmsg/aigwext"))
WORKDIR = Path(os.environ.get("EXTMSG_WORKDIR", "/tmp/extmsg/work"))
LIMIT = 4 * 1024 * 1024  # grpc-go's default receive limit, both ends' default
NAMESPACE = "team-a"  # the example fleet's model team; its Secret `openai` is the API key
CLUSTER = "eu-west-1"  # the public fleet gateway's cluster
GATEWAY = f"{SYSTEM_NAMESPACE}/{names.fleet_gateway('public')}"
REAL = 2  # real services per template: the second checks the copies
SWEEP = (1, 2, 5, 10, 20, 50, 100, 200, 400, 800, 1600, 3200)
# Gateway API v1.5.1 HTTPRoute: spec.rules[].backendRefs maxItems 16 (apis/v1/httproute_types.go).
ROUTE_BACKENDS = 16


class Template(NamedTuple):
    backends: int  # 3, or a multiple of 8: entries of 4 endpoints, half of them hosted
    long: bool  # service and third-party host names as long as they may usefully be

    @property
    def token(self) -> str:
        return f"m{self.backends:03d}{'l' if self.long else 's'}"

    def ident(self, index: int) -> str:
        """What a service's name starts with, and every name and model derived from it."""
        return f"{self.token}-{index:05d}"

    def service(self, index: int) -> str:
        return long_name(self.ident(index), 63) if self.long else self.ident(index)

    def entries(self) -> list[tuple[int, int]]:
        """(ModelDeployments, third-party endpoints) each entry selects."""
        if self.backends == 3:
            return [(1, 0), (0, 1)]
        return [(2, 0)] * (self.backends // 8) + [(0, 4)] * (self.backends // 8)

    @property
    def hosted(self) -> int:
        """Fleet-hosted backends: each deployment has an endpoint on each of the two clusters."""
        return 2 * sum(deployments for deployments, _ in self.entries())


TEMPLATES = (Template(3, False), Template(3, True), Template(16, True), Template(128, True))


def _xr(kind: str, name: str, spec: Obj, labels: dict[str, str] | None = None) -> Obj:
    meta: Obj = {"name": name, "namespace": NAMESPACE, **({"labels": labels} if labels else {})}
    return {"apiVersion": API_VERSION, "kind": kind, "metadata": meta, "spec": spec}


def pool(t: Template) -> Iterator[Obj]:
    """The template's ModelEndpoints (and deployments), then its real ModelServices."""
    selectors = []
    deployments = thirds = 0
    for group, (hosted, third) in enumerate(t.entries()):
        labels = {"pool": t.token, "group": f"g{group:02d}"}
        selectors.append({"selector": {"matchLabels": labels}, "priority": group})
        for _ in range(hosted):
            name = f"{t.token}-d{deployments:02d}"
            deployments += 1
            yield _xr(
                "ModelDeployment",
                name,
                {
                    "model": {"name": f"org/{name}", "source": f"hf://org/{name}"},
                    "engine": {"type": "vllm", "image": "vllm/vllm-openai:v0.11.0"},
                    "provider": {"name": "Direct"},
                    "replicas": 2,  # CPU only: one on each cluster
                    "template": {"metadata": {"labels": labels}},
                },
            )
        for _ in range(third):
            name = f"{t.token}-t{thirds:02d}"
            thirds += 1
            host = long_name(f"{name}-inference", 63) if t.long else name
            spec = {"origin": f"https://{host}.api.example.com", "model": "gpt-4o-mini"}
            yield _xr("ModelEndpoint", name, {**spec, "credentialRef": {"name": "openai"}}, labels)
    for index in range(REAL):
        yield _xr(
            "ModelService", t.service(index), {"endpoints": selectors}, {"visibility": "public"}
        )


def remote(fleet: Fleet, key: XRKey) -> list[Obj]:
    """What one XR composed onto the public gateway's cluster, as oracles.translate reads it."""
    out = []
    for obj in fleet.composed.get(key, {}).values():
        manifest = translate._manifest(obj)
        if manifest is not None and obj["spec"]["providerConfigRef"]["name"] == CLUSTER:
            out.append(patched(manifest, obj["spec"].get("references") or [], fleet.secrets))
    return out


def public_route(fleet: Fleet, service: str) -> list[Obj]:
    for child, parent in fleet.owner.items():
        if parent == ("ModelService", NAMESPACE, service) and (found := remote(fleet, child)):
            return found
    raise LookupError(f"ModelService {service} has no route on {CLUSTER}")


def copies(route: list[Obj], t: Template, services: range) -> list[Obj]:
    text = json.dumps(route)
    out = []
    for index in services:
        out += json.loads(text.replace(t.ident(0), t.ident(index)))
    keys = [(o["kind"], o["metadata"]["name"]) for o in out]
    assert len(keys) == len(set(keys)), "a copy kept a name of the route it copies"
    return out


def extmsg(fleet: Fleet, objects: list[Obj], tag: str, *, check: bool = True) -> dict[str, Any]:
    """The public gateway's request and AI Gateway's answer, with ``objects`` on its cluster."""
    given = translate.cluster_input(fleet, CLUSTER, objects)
    path, routes = WORKDIR / f"{tag}.yaml", WORKDIR / f"{tag}-aigw.yaml"
    path.write_text("\n---\n".join(json.dumps(o) for o in given))
    read = [o for o in objects if o["kind"] in {"AIGatewayRoute", "Gateway"}]
    routes.write_text("\n---\n".join(json.dumps(o) for o in read))
    start = time.monotonic()
    env = {**os.environ, "EXTMSG_SKIP_VALIDATION": "" if check else "1"}
    proc = subprocess.run(
        [EXTMSG, path, WORKDIR], check=False, capture_output=True, text=True, env=env
    )
    if proc.returncode:
        raise RuntimeError(f"extmsg {path}: {proc.stderr}")
    found = json.loads(proc.stdout)[GATEWAY]
    seconds = round(time.monotonic() - start, 1)
    request = WORKDIR / f"{GATEWAY.replace('/', '_')}.bin"
    proc = subprocess.run([AIGWEXT, request, routes], capture_output=True, text=True, check=True)
    answer = json.loads(proc.stdout)
    for done in (path, routes, *WORKDIR.glob("*.bin")):
        done.unlink()
    return {
        "request_bytes": found["request_bytes"],
        "response_bytes": answer["response_bytes"],
        "request_parts": {k: v["bytes"] for k, v in found["parts"].items()},
        "response_parts": {k: v["bytes"] for k, v in answer["parts"].items()},
        "counts": {k: v["count"] for k, v in found["parts"].items()},
        "received_at_4MiB": found["received_bytes"] == [found["request_bytes"]],
        "error": found.get("error", ""),
        "translate_seconds": seconds,
    }


def egctl_problems(fleet: Fleet, objects: list[Obj], routes: int) -> list[str]:
    given = translate.cluster_input(fleet, CLUSTER, objects)
    try:
        result = translate.translate(given, WORKDIR / "egctl")
    except RuntimeError as refused:  # egctl's loader validates against the CRDs
        return [line for line in str(refused).splitlines() if "error" in line][-1:]
    problems = dataplane.status_problems(dataplane.Cluster(CLUSTER, objects, given, result))
    gateway, namespace = GATEWAY.split("/")[1], SYSTEM_NAMESPACE
    clusters = [c for c in result.clusters(gateway, namespace) if "/rule/" in c["name"]]
    if len(clusters) != routes:
        problems.append(f"{len(clusters)} route clusters for {routes} routes")
    return problems


def fit(
    points: list[dict[str, Any]], value: Callable[[dict[str, Any]], int]
) -> tuple[float, float]:
    """Intercept and slope of ``value`` over services, least squares."""
    xs = [p["services"] for p in points]
    slope, intercept = statistics.linear_regression(xs, [value(p) for p in points])
    return intercept, slope


def part_of(parts: str, part: str) -> Callable[[dict[str, Any]], int]:
    return lambda point: int(point[parts][part])


def sweep(fleet: Fleet, base: list[Obj], t: Template) -> dict[str, Any]:
    route = public_route(fleet, t.service(0))
    measured: dict[int, dict[str, Any]] = {}
    valid = t.backends <= ROUTE_BACKENDS

    def at(services: int) -> dict[str, Any]:
        if services not in measured:
            objects = base + copies(route, t, range(services))
            measured[services] = {
                "services": services,
                **extmsg(fleet, objects, t.token, check=valid),
            }
            print(f"  {t.token} {measured[services]}"[:160], file=sys.stderr)
        return measured[services]

    for services in SWEEP:
        if max(at(services)["request_bytes"], at(services)["response_bytes"]) > LIMIT:
            break
    points = list(measured.values())
    out: dict[str, Any] = {
        "backends_per_service": t.backends,
        "long_names": t.long,
        "servable": valid,
        "model_name_length": len(f"{NAMESPACE}/{t.service(0)}"),
    }
    for direction in ("request", "response"):
        value = itemgetter(f"{direction}_bytes")
        intercept, slope = fit(points, value)
        ceiling = int((LIMIT - intercept) // slope)
        while value(at(ceiling)) > LIMIT or value(at(ceiling + 1)) <= LIMIT:
            ceiling += -1 if value(at(ceiling)) > LIMIT else 1
        out[direction] = {
            "gateway_only_bytes": round(intercept),
            "per_service_bytes": round(slope, 1),
            "per_service_by_part": {
                part: round(fit(points, part_of(f"{direction}_parts", part))[1], 1)
                for part in points[0][f"{direction}_parts"]
            },
            "largest_fit_residual_bytes": round(
                max(abs(value(p) - intercept - slope * p["services"]) for p in points), 1
            ),
            "ceiling_services": ceiling,
            "bytes_at_400_services": round(intercept + 400 * slope),
        }
    real = [o for i in range(REAL) for o in public_route(fleet, t.service(i))]
    check = min(10, out["request"]["ceiling_services"])
    out |= {
        # Secrets differ by a few bytes between any two calls: each issues fresh certificates.
        "copy_check_request_parts": {
            "real": extmsg(fleet, base + real, f"{t.token}-real", check=valid)["request_parts"],
            "copied": at(REAL)["request_parts"],
        },
        f"egctl_problems_at_{check}": egctl_problems(
            fleet, base + copies(route, t, range(check)), check
        ),
        "points": sorted(measured.values(), key=itemgetter("services")),
    }
    return out


def solve(rows: list[tuple[int, int, float]]) -> tuple[float, float, float]:
    """(f, h, p) with y = f + h * hosted + p * third for three (hosted, third, y) rows (Cramer)."""

    def det(m: list[list[float]]) -> float:
        return (
            m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
            - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
            + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0])
        )

    a = [[1.0, h, p] for h, p, _ in rows]
    y = [row[2] for row in rows]
    whole = det(a)
    columns = [
        [[y[i] if j == k else a[i][j] for j in range(3)] for i in range(3)] for k in range(3)
    ]
    f, h, p = (det(c) / whole for c in columns)
    return f, h, p


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one small template only")
    args = parser.parse_args(argv)
    templates = TEMPLATES[:1] if args.quick else TEMPLATES
    WORKDIR.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with functions.running(None):
        fleet = Fleet.load()
        fleet.workdir = WORKDIR / "walk"
        for t in templates:
            for xr in pool(t):
                fleet.apply(xr)
        passes = len(fleet.converge(max_passes=24))
    walked = time.monotonic() - started
    routes = [c for c, p in fleet.owner.items() if c[0] == "ModelRoute"]
    in_routes = {json.dumps(o, sort_keys=True) for key in routes for o in remote(fleet, key)}
    base = [
        o
        for o in translate.cluster_objects(fleet)[CLUSTER]
        if json.dumps(o, sort_keys=True) not in in_routes
    ]
    measured = [sweep(fleet, base, t) for t in templates]
    results: dict[str, Any] = {
        "what": __doc__.splitlines()[0],
        "limit_bytes": LIMIT,
        "gateway": GATEWAY,
        "walk": {"passes": passes, "seconds": round(walked)},
        "gateway_only": extmsg(fleet, base, "base"),
        "templates": measured,
    }
    long_named = [t for t in templates if t.long]
    for direction in ("request", "response") if len(long_named) == 3 else ():
        per_service = {
            r["backends_per_service"]: r[direction]["per_service_bytes"] for r in measured
        }
        rows = [(t.hosted, t.backends - t.hosted, per_service[t.backends]) for t in long_named]
        fixed, hosted, third = solve(rows)
        results[f"{direction}_bytes_per_service_long_names"] = {
            "fixed": round(fixed),
            "per_fleet_hosted_backend": round(hosted),
            "per_third_party_backend": round(third),
        }
    out = Path("/tmp/extmsg/results-quick.json") if args.quick else HERE / "results.json"
    out.write_text(json.dumps(results, indent=1) + "\n")
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
