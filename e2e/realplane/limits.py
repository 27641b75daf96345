"""The rate-limit drill: team-a/chat limited on the public gateway, counted by the real
rate-limit service (plane/ratelimit.py) that Envoy Gateway configures, through the real
Envoy; and the check that only the rate-limit service may reach its Redis."""

import json
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import NamedTuple

from e2e.fleet import XRKey
from e2e.fleetdrills import restricted
from e2e.realplane.realdriver import ControlPlane
from e2e.realplane.traffic import Answer
from fleetgate.core import governance, names
from fleetgate.core.constants import (
    AI_GATEWAY_METADATA_NAMESPACE,
    CALLER_HEADER,
    CALLER_METADATA_KEY,
    SYSTEM_NAMESPACE,
)
from fleetgate.core.kinds.governance import ResolvedLimit
from fleetgate.inference_cluster import stack
from oracles import ratelimits, translate
from oracles.ratelimits import Descriptor
from oracles.translate import Translation
from plane import proxies
from plane.clusters import Cluster
from plane.kube import Obj, wait_for
from plane.ratelimit import (
    DEPLOYMENT,
    LOAD_TIMEOUT_S,
    NAMESPACE,
    should_rate_limit,
    wait_for_domain,
)

Asker = Callable[[str], Answer]  # a completion of a prompt, asked as one caller


# What the drill gives team-a/chat on the public gateway, besides that gateway's
# own limits (examples/fleet/30-gateways.yaml): team-a 3 requests a minute, team-b at
# most 1000 tokens a day.
SERVICE: XRKey = ("ModelService", "team-a", "chat")
GATEWAY = "public"
CALLERS = ("team-a", "team-b")
LIMITS = (
    (
        {"requests": 3, "per": "Minute", "callers": ["team-a"]},
        "3 requests/Minute for each of team-a",
    ),
    ({"tokens": 1000, "per": "Day", "callers": ["team-b"]}, "1000 tokens/Day for each of team-b"),
)
# The live objects of the kinds that make up a gateway's xDS, for egctl.
TRANSLATED = (
    ("gateway.networking.k8s.io/v1", "GatewayClass", ""),
    *(
        (api, kind, SYSTEM_NAMESPACE)
        for api, kinds in (
            ("gateway.networking.k8s.io/v1", ("Gateway", "HTTPRoute")),
            (
                "gateway.envoyproxy.io/v1alpha1",
                (
                    "Backend",
                    "BackendTrafficPolicy",
                    "ClientTrafficPolicy",
                    "EnvoyPatchPolicy",
                    "EnvoyProxy",
                    "HTTPRouteFilter",
                    "SecurityPolicy",
                ),
            ),
            ("v1", ("ConfigMap", "Secret")),
        )
        for kind in kinds
    ),
)
METADATA_KEPT = ("name", "namespace", "labels", "annotations", "generation")


class DrillOutcome(NamedTuple):
    problems: list[str]
    seconds_to_load: float
    # What the service answered, for the reader of the run.
    observed: list[str]


def live_xds(workload: Cluster, workdir: Path) -> Translation:
    """What Envoy Gateway's translator makes of the gateway objects on ``workload`` now.

    The same objects Envoy Gateway's controller there translates into the xDS it
    serves Envoy and the configuration it serves the rate-limit service, read
    from the cluster's API server, run through egctl (its translator, offline).
    """
    objects = []
    for api_version, kind, namespace in TRANSLATED:
        for obj in workload.admin.list(api_version, kind, namespace):
            meta = {k: v for k, v in obj["metadata"].items() if k in METADATA_KEPT}
            objects.append({**{k: v for k, v in obj.items() if k != "status"}, "metadata": meta})
    return translate.translate(objects, workdir)


def _request_descriptors(sent: Sequence[Descriptor]) -> list[Descriptor]:
    return [d for d in sent if not d.on_stream_done]


def _counted(sent: Sequence[Descriptor], metadata_key: str) -> Descriptor:
    """The descriptor Envoy sends as the response ends, counting ``metadata_key``."""
    (found,) = [
        d for d in sent if d.on_stream_done and f":{metadata_key})" in str(d.hits_addend_format)
    ]
    return found


def _remaining(answer: Obj) -> int:
    """What is left of the monthly budget, by an answer of the service."""
    return min(int(s.get("limitRemaining", 0)) for s in _month(answer))


def _month(answer: Obj) -> list[Obj]:
    """The statuses of an answer's monthly limits."""
    statuses = answer.get("statuses") or []
    return [s for s in statuses if s.get("currentLimit", {}).get("unit") == "MONTH"]


def _code(answer: Obj, index: int | None = None) -> str:
    if index is None:
        return str(answer.get("overallCode"))
    return str((answer.get("statuses") or [{}] * (index + 1))[index].get("code"))


def _monthly_budget(driver: ControlPlane) -> ResolvedLimit:
    """The gateway's monthly cost limit, as examples/fleet gives it."""
    auth = driver.xrs()[("InferenceGateway", "", GATEWAY)]["spec"]["auth"]
    (budget,) = [
        ResolvedLimit.model_validate(limit)
        for limit in auth.get("limits") or []
        if "cost" in limit and limit["per"] == "Month"
    ]
    return budget


def drill(
    driver: ControlPlane,
    workload: Cluster,
    workdir: Path,
    asking: Callable[[str], Asker],
    spent: Callable[[str], dict[str, int]],
) -> DrillOutcome:
    """team-a/chat limited on the public gateway, counted by the real rate-limit service.

    The ModelService's limits and the gateway's reach Envoy Gateway as composed
    policies; the service loads what Envoy Gateway serves it. Then, through the
    gateway's Envoy (``asking(caller)`` asks it as that caller): team-a's fourth
    request of the minute is refused with 429, the JSON body naming the model
    and the rule with the X-RateLimit-* values, while team-b's first is
    answered; team-b's answers, counted by their usage as each ends, use up
    its 1000 tokens a day, and its next request is refused for them. The
    gateway's monthly cost budget (no request could use it up in the drill's
    time) is asked of the service directly, with the descriptors the
    translated xDS says Envoy sends (oracles/ratelimits.py): what each caller's
    answers from the fleet's engines cost (``spent``, by the usage records) is
    counted against it, a third party's too; it holds for the month and is each
    caller's own. The restriction
    is lifted at the end.
    """
    gateway = names.fleet_gateway(GATEWAY)
    started = time.monotonic()
    limits = [limit for limit, _ in LIMITS]
    driver.patch_spec(SERVICE, {"access": {"callers": list(CALLERS), "limits": limits}})
    problems = driver.settle(
        f"{SERVICE[1]}/{SERVICE[2]} limited on {GATEWAY}",
        partial(restricted, driver, SERVICE, GATEWAY, CALLERS, tuple(r for _, r in LIMITS)),
        tolerate=[SERVICE],
    )
    # The AIGatewayRoute serving the service now: its name follows its backends.
    (route_name,) = [
        r.name for r in driver.routes() if (r.service, r.gateway) == (SERVICE, GATEWAY)
    ]
    t = live_xds(workload, workdir)
    (route,) = [
        r
        for name, r in ratelimits.routes(t.route_configs(gateway, SYSTEM_NAMESPACE)).items()
        if name.startswith(f"httproute/{SYSTEM_NAMESPACE}/{route_name}/rule/0/")
    ]
    domains = ratelimits.listener_domains(t.listeners(gateway, SYSTEM_NAMESPACE))
    sent = {caller: _descriptors(route, caller, domains) for caller in CALLERS}
    own, shared = f"{SYSTEM_NAMESPACE}/{gateway}/https", f"{SYSTEM_NAMESPACE}/{gateway}-failover"
    for domain in (own, shared):
        wait_for_domain(workload, domain, containing=route_name if domain == own else "")
    envoy = proxies.on(workload.name).of(f"{SYSTEM_NAMESPACE}/{gateway}")
    for caller in CALLERS:
        wait_for(
            f"the public gateway's Envoy to send {caller}'s descriptors as translated",
            lambda caller=caller: _envoy_sends(envoy, route_name, domains, caller) == sent[caller],
            LOAD_TIMEOUT_S,
        )
    loaded = time.monotonic() - started
    for caller, by_domain in sent.items():
        if sorted(by_domain) != sorted([own, shared]):
            problems.append(f"{caller}'s requests go to the domains {sorted(by_domain)}")
            return DrillOutcome(problems, loaded, [])
    # Only team-b's answers count against the token limit: team-a's send a value the
    # service has no rule for.
    if any(
        d.on_stream_done and governance.NOT_NARROWED not in dict(d.entries).values()
        for d in sent["team-a"][own]
    ):
        problems.append(f"team-a's answers count against team-b's token limit: {sent['team-a']}")
    said, found = _requests_and_tokens(asking("team-a"), asking("team-b"))
    problems += found

    def ask(caller: str, domain: str) -> Obj:
        return should_rate_limit(workload, domain, _request_descriptors(sent[caller][domain]))

    # Cost: the gateway's monthly budget counts what each caller's answers cost, as
    # their usage records price them (team-a's include the traffic drills' answers from
    # a priced tier). Each caller apart: answers costing one unit less than what is left
    # leave team-b under it, one more unit puts it over, and team-a is not. (team-b, as
    # the drills after this one leave it no key: a month over budget stays so.)
    budget = _monthly_budget(driver)
    amount, key = governance.counter(budget)
    left = {c: _remaining(ask(c, shared)) for c in CALLERS}
    counted = {c: amount - left[c] for c in CALLERS}
    by_tier = {c: spent(c) for c in CALLERS}
    priced = {c: sum(by_tier[c].values()) for c in CALLERS}
    # Every answer is counted, a third party's too (governance.answer_reads): the
    # traffic drills before this one had the third party answer team-a.
    if counted != priced:
        problems.append(f"the budget counted {counted}, the usage records priced {by_tier}")
    if not any(cost for c in CALLERS for tier, cost in by_tier[c].items() if tier != LOCAL_TIER):
        problems.append(f"no third party's answer was priced, so none was shown counted: {by_tier}")
    cost = _counted(sent["team-b"][shared], str(key))
    should_rate_limit(workload, shared, [cost._replace(hits_addend=left["team-b"] - 1)])
    before = ask("team-b", shared)
    should_rate_limit(workload, shared, [cost._replace(hits_addend=2)])
    after, other = ask("team-b", shared), ask("team-a", shared)
    if (_code(before), _code(after), _code(other)) != ("OK", "OVER_LIMIT", "OK"):
        problems.append(
            f"{budget.cost} a month: team-b before/after, team-a: {before}, {after}, {other}"
        )
    resets = [int(str(s.get("durationUntilReset", "0s")).rstrip("s")) for s in _month(after)]
    if not resets or not 0 < max(resets) <= 30 * 86_400:
        problems.append(f"the monthly budget's window: {after}")
    problems += redis_admission_problems(workload)
    driver.patch_spec(SERVICE, {"access": None})
    problems += driver.settle(
        f"{SERVICE[1]}/{SERVICE[2]} open again",
        lambda: restricted(driver, SERVICE, GATEWAY, None, ()),
    )
    said.append(
        f"cost {budget.cost} a month ({amount} units of {key}; counted {counted}, priced "
        f"by the usage records {priced}): team-b one unit under, then over, team-a: "
        f"{_code(before)} {_code(after)} {_code(other)}; the window resets in "
        f"{max(resets, default=0)} s"
    )
    return DrillOutcome(problems, loaded, said)


# The tier of team-a/chat's engines on the fleet's clusters; its tier 1 is a third party.
LOCAL_TIER = "0"
# A prompt the engine stand-in counts as 300 tokens, and answers with 302 more.
LONG_PROMPT = " ".join(["token"] * 300)
# How long Envoy may take to count an answer's tokens once it ended (it sends them as
# the stream closes, after the caller has the answer).
COUNTED_TIMEOUT_S = 10.0


def _requests_and_tokens(team_a: Asker, team_b: Asker) -> tuple[list[str], list[str]]:
    """Requests through the gateway: team-a's fourth of the minute refused, team-b's first
    answered; then team-b's answers using up its tokens for the day. What was seen, and
    what was wrong."""
    problems = []
    # The service's windows turn on the minute; five requests take well under a second.
    if (into := time.time() % 60) > 55:
        time.sleep(60 - into + 0.1)
    answers = [team_a(f"request {n}") for n in range(1, 5)] + [team_b("request 1")]
    codes = [a.status for a in answers]
    if codes != [200, 200, 200, 429, 200]:
        problems.append(f"3 requests a minute for team-a: team-a x4 then team-b answered {codes}")
    problems += _refusal_problems(answers[3], "3, 3;w=60", 60)
    long_answers = [team_b(LONG_PROMPT).status for _ in range(2)]
    if long_answers != [200, 200]:
        problems.append(f"team-b's two answers of 602 tokens were answered {long_answers}")
    deadline = time.monotonic() + COUNTED_TIMEOUT_S
    while (refused := team_b("one more")).status == 200 and time.monotonic() < deadline:
        time.sleep(0.5)
    problems += _refusal_problems(refused, "1000, 1000;w=86400", 86_400)
    said = [
        f"team-a x4 then team-b, through the gateway: {' '.join(map(str, codes))}",
        f"team-a's 429: {answers[3].body}",
        f"team-b after two answers of 602 tokens against its 1000 a day: {refused.status} "
        f"{refused.body}",
    ]
    return said, problems


def _envoy_sends(envoy: proxies.Proxy, route_name: str, domains: list[str], caller: str) -> Obj:
    """What the Envoy, as loaded now, sends for ``caller``'s request on the AIGatewayRoute
    ``route_name``: its descriptors by domain (what its admin's config dump holds)."""
    prefix = f"httproute/{SYSTEM_NAMESPACE}/{route_name}/rule/0/"
    status, body = envoy.admin("/config_dump?resource=dynamic_route_configs")
    if status != 200:
        return {}
    configs = [c.get("route_config") or {} for c in json.loads(body).get("configs") or []]
    loaded = [r for name, r in ratelimits.routes(configs).items() if name.startswith(prefix)]
    if len(loaded) != 1:
        return {}
    return _descriptors(loaded[0], caller, domains)


def _descriptors(route: Obj, caller: str, domains: list[str]) -> dict[str, list[Descriptor]]:
    """What Envoy sends for ``caller``'s request on ``route``: the gateway's authentication
    named it in the header, and AI Gateway recorded it in its metadata."""
    recorded = {AI_GATEWAY_METADATA_NAMESPACE: {CALLER_METADATA_KEY: caller}}
    return ratelimits.descriptors(route, {CALLER_HEADER: caller}, domains, recorded)


def _refusal_problems(answer: Answer, limit: str, window_s: int) -> list[str]:
    """What is wrong with a 429 Envoy answered for a per-caller limit of team-a/chat:
    ``limit`` as Envoy's X-RateLimit-Limit gives it, of a window of ``window_s``. Envoy's
    rate-limit headers do not reach the client through the response override that writes
    the JSON body (seen here: nor did headers the override set from them with
    ``%RESP(...)%``); their values are in the body, which names the model and the rule and
    nothing of anyone else."""
    error = answer.body.get("error") or {}
    wanted = {
        "type": "rate_limit_exceeded",
        "code": "caller_limit",
        "model": f"{SERVICE[1]}/{SERVICE[2]}",
    }
    problems = [
        f"the 429 body's {k} is {error.get(k)!r}, not {v!r}"
        for k, v in wanted.items()
        if error.get(k) != v
    ]
    resets = str(error.get("resets_in_seconds"))
    if answer.status != 429 or not str(error.get("limit")).startswith(limit):
        problems.append(f"not a 429 for {limit}: {answer}")
    elif not (resets.isdigit() and 0 < int(resets) <= window_s):
        problems.append(f"the 429 does not say when its {window_s} s window turns: {answer}")
    # The model's name holds its namespace, team-a: everything else names no caller.
    told = json.dumps(error).replace(wanted["model"], "")
    if any(caller in told for caller in CALLERS):
        problems.append(f"the 429 body tells of a caller: {answer.body}")
    return problems


def redis_admission_problems(workload: Cluster) -> list[str]:
    """Whom the composed NetworkPolicy admits to the stack's Redis, judged against the pods
    that really run in Envoy Gateway's namespace: the rate-limit service's (as Envoy
    Gateway created its Deployment) and no other, on the port Redis listens on.

    No network plugin runs here, so the policy is not enforced: what is shown is that
    the real API server took it and that it selects exactly what it must (issue 52).
    """
    kube = workload.admin
    policy = kube.get("networking.k8s.io/v1", "NetworkPolicy", stack.RATE_LIMIT_REDIS, NAMESPACE)
    if policy is None:
        return [f"{workload.name}: no NetworkPolicy {NAMESPACE}/{stack.RATE_LIMIT_REDIS}"]
    spec = policy["spec"]
    pods = {
        d["metadata"]["name"]: (d["spec"]["template"]["metadata"].get("labels") or {})
        for d in kube.list("apps/v1", "Deployment", NAMESPACE)
    }

    def selected(selector: Obj) -> list[str]:
        wanted = (selector or {}).get("matchLabels") or {}
        return sorted(n for n, labels in pods.items() if wanted.items() <= labels.items())

    problems = []
    if selected(spec.get("podSelector") or {}) != [stack.RATE_LIMIT_REDIS]:
        problems.append(f"the policy applies to {selected(spec.get('podSelector') or {})}")
    if spec.get("policyTypes") != ["Ingress"]:
        problems.append(f"policy types {spec.get('policyTypes')}")
    admitted = [
        name
        for rule in spec.get("ingress") or []
        for peer in rule.get("from") or [{}]
        for name in (selected(peer["podSelector"]) if "podSelector" in peer else ["(anyone)"])
    ]
    if admitted != [DEPLOYMENT]:
        problems.append(f"Redis admits {admitted}, not only {DEPLOYMENT}")
    ports = [p.get("port") for rule in spec.get("ingress") or [] for p in rule.get("ports") or []]
    if ports != [stack.RATE_LIMIT_REDIS_PORT]:
        problems.append(f"Redis admitted on ports {ports}")
    return [f"{workload.name}: {p}" for p in problems]
