"""The XRDs' CEL rules, evaluated with cel-python against named cases.

Every ``x-kubernetes-validations`` rule is read from the XRD files at its schema
path (nothing is copied here), so a changed rule is tested as it ships. The
rules stay within standard CEL and regexes both RE2 and Python ``re`` accept, so
cel-python (which matches with RE2, like the API server) evaluates them as
Kubernetes does.

A case names the schema path, the value at that path (``self``), and the
rules it must break, each by a fragment of its message; an accept case breaks
none. Every other rule at that path must hold, so a rule that rejects too much
fails as loudly as one that rejects too little.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import celpy
import pytest
import re2  # type: ignore[import-untyped]
import yaml
from celpy.adapter import json_to_cel
from pydantic import ValidationError

from fleetgate.core.models import LabelSelector
from schemas import xrds
from sim import catalog

# Every XRD's rules, ModelRoute's (internal, composed by ModelService) too.
XRDS = {kind: fn.xrd for kind, fn in catalog.registry().items()}

# Standard CEL only: a Kubernetes library function (isIP, url, ip, format,
# split, lowerAscii, quantity, ...) would not evaluate here, and a rule that
# cel-python cannot evaluate is a rule these tests cannot vouch for.
ALLOWED_CALLS = {
    "size",
    "has",
    "matches",
    "startsWith",
    "endsWith",
    "contains",
    "all",
    "exists",
    "exists_one",
}


@dataclass(frozen=True)
class Rule:
    kind: str
    path: str
    rule: str
    message: str
    node: dict[str, Any]


def _load_rules() -> list[Rule]:
    rules: list[Rule] = []
    for kind, definition in XRDS.items():
        xrd = yaml.safe_load(definition.read_text())
        schema = xrd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        for path, node in xrds.walk(schema):
            for validation in node.get("x-kubernetes-validations", []):
                rules.append(
                    Rule(kind, path, validation["rule"], validation.get("message", ""), node)
                )
    return rules


RULES = _load_rules()
ENV = celpy.Environment()


def _rules_at(kind: str, path: str) -> list[Rule]:
    return [r for r in RULES if r.kind == kind and r.path == path]


def _evaluate(rule: Rule, value: Any, old: Any = None) -> bool:
    """``rule`` over ``value``; a transition rule (``oldSelf``) also over ``old``, the value
    an update replaces. The API server skips a transition rule on create, as here."""
    if "oldSelf" in rule.rule and old is None:
        return True
    program = ENV.program(ENV.compile(rule.rule))
    bound = {"self": json_to_cel(value)}
    if "oldSelf" in rule.rule:
        bound["oldSelf"] = json_to_cel(old)
    result = program.evaluate(bound)
    # A rule that errors (e.g. reads an absent field) is rejected by the API
    # server with an opaque message: every rule must answer true or false.
    assert isinstance(result, celpy.celtypes.BoolType), (
        f"{rule.kind} {rule.path}: {rule.rule!r} gave {result!r} for {value!r}"
    )
    return bool(result)


@dataclass(frozen=True)
class Case:
    id: str
    kind: str
    path: str
    value: Any
    breaks: tuple[str, ...] = ()
    old: Any = None  # for an update: the value it replaces (transition rules read it)


def ok(case_id: str, kind: str, path: str, value: Any, old: Any = None) -> Case:
    return Case(case_id, kind, path, value, old=old)


def bad(case_id: str, kind: str, path: str, value: Any, *breaks: str, old: Any = None) -> Case:
    return Case(case_id, kind, path, value, breaks, old)


ME, IG, IC, MS, MD = (
    "ModelEndpoint",
    "InferenceGateway",
    "InferenceCluster",
    "ModelService",
    "ModelDeployment",
)

# Message fragments, one per rule.
SCHEME = "must start with https:// or http://"
IP_ORIGIN = "not an IPv4 or IPv6 address"
PORT = "port must be a number from 1 to 65535"
SHAPE = "must be scheme://host[:port]"
PREFIX = "spec.api.prefix must start with /"
HOST_SHAPE = "must be a bare lowercase DNS name"
HOST_IP = "not an IP address"
TLS_HOST = "spec.hostname is required when spec.tls is set"
CREDS = "exactly one of secretRef or providerConfigName"
RESERVED = "must not use keys under fleetgate.dev/"
LABEL_KEY = "keys must be label keys"
WEIGHT = "weight must be from 1 to 1000000"
PRIORITY = "priority must be from 0 to 63"
KAITO_NODES = "spec.kaito.instanceType is only for a KAITO that provisions nodes"
ONE_AMOUNT = "needs exactly one of requests, tokens, cost"
COST_ZERO = ".cost must be more than 0"
MR = "ModelRoute"
# Every list of caller limits: the service's, the gateway's, and the route's resolved copy.
LIMIT_LISTS = (
    (MS, "spec.access.limits[]"),
    (IG, "spec.auth.limits[]"),
    (MR, "spec.access.limits[]"),
)

ORIGIN = "spec.origin"
ENTRY = "spec.endpoints[]"
SELECTOR = {"matchLabels": {"app": "qwen3-8b"}}
HOSTNAME = "spec.hostname"
CLUSTER_NAME = "spec.clusterName"
MOVED = "spec.clusterName cannot change"
LONG_LABEL = "a" * 64
# A DNS subdomain of exactly 253 characters: four 62-character labels and a 1-character one.
LONG_PREFIX = ".".join(["b" * 62] * 4 + ["c"])
LABEL_MAPS = (
    (IC, "spec.placement.metadata.labels"),
    (MD, "spec.template.metadata.labels"),
    (MD, "spec.placement.clusterSelector.matchLabels"),
    (IG, "spec.auth.secretSelector.matchLabels"),
    (IG, "spec.serviceSelector.matchLabels"),
    (MS, "spec.endpoints[].selector.matchLabels"),
)

LIMIT_CASES = [
    case
    for kind, path in LIMIT_LISTS
    for case in (
        ok(f"{kind}-{path}-requests", kind, path, {"requests": 100, "per": "Minute"}),
        ok(f"{kind}-{path}-tokens", kind, path, {"tokens": 10**6, "per": "Day"}),
        ok(f"{kind}-{path}-cost", kind, path, {"cost": "25.50", "per": "Month"}),
        bad(f"{kind}-{path}-none", kind, path, {"per": "Hour"}, ONE_AMOUNT),
        bad(
            f"{kind}-{path}-two",
            kind,
            path,
            {"requests": 1, "tokens": 2, "per": "Hour"},
            ONE_AMOUNT,
        ),
        bad(
            f"{kind}-{path}-three",
            kind,
            path,
            {"requests": 1, "tokens": 2, "cost": "3", "per": "Hour"},
            ONE_AMOUNT,
        ),
    )
] + [
    case
    for kind, path in LIMIT_LISTS
    for case in (
        ok(f"{kind}-{path}-cost-small", kind, f"{path}.cost", "0.000001"),
        ok(f"{kind}-{path}-cost-whole", kind, f"{path}.cost", "4294967"),
        bad(f"{kind}-{path}-cost-zero", kind, f"{path}.cost", "0", COST_ZERO),
        bad(f"{kind}-{path}-cost-zero-decimal", kind, f"{path}.cost", "00.000", COST_ZERO),
    )
]

CASES = [
    ok("gateway-created-on-a-cluster", IG, CLUSTER_NAME, "hub"),
    ok("gateway-updated-on-its-cluster", IG, CLUSTER_NAME, "hub", old="hub"),
    bad("gateway-moved-to-another-cluster", IG, CLUSTER_NAME, "eu-west", MOVED, old="hub"),
    *LIMIT_CASES,
    # --- ModelEndpoint spec.origin --------------------------------------------
    ok("origin-https", ME, ORIGIN, "https://api.openai.com"),
    ok("origin-https-port", ME, ORIGIN, "https://api.openai.com:8443"),
    ok("origin-http-svc", ME, ORIGIN, "http://vllm.ns.svc"),
    ok("origin-http-svc-port", ME, ORIGIN, "http://vllm.models.svc.cluster.local:8000"),
    ok("origin-single-label", ME, ORIGIN, "http://vllm"),
    ok("origin-port-1", ME, ORIGIN, "https://x.example:1"),
    ok("origin-port-65535", ME, ORIGIN, "https://x.example:65535"),
    ok("origin-digit-leading-label", ME, ORIGIN, "https://1password.com"),
    ok("origin-punycode", ME, ORIGIN, "https://xn--bcher-kva.example"),
    ok("origin-63-char-label", ME, ORIGIN, f"https://{'a' * 63}.example"),
    bad("origin-ipv4", ME, ORIGIN, "https://10.0.0.1", IP_ORIGIN),
    bad("origin-ipv4-port", ME, ORIGIN, "https://10.0.0.1:443", IP_ORIGIN),
    bad("origin-ipv4-http", ME, ORIGIN, "http://192.168.1.20:8000", IP_ORIGIN),
    bad("origin-ipv4-short", ME, ORIGIN, "http://127.1", IP_ORIGIN),
    bad("origin-ipv4-hex", ME, ORIGIN, "http://0x7f000001", IP_ORIGIN),
    bad("origin-ipv6-port", ME, ORIGIN, "https://[::1]:443", IP_ORIGIN, SHAPE),
    bad("origin-ipv6", ME, ORIGIN, "https://[2001:db8::1]", IP_ORIGIN, SHAPE),
    bad("origin-path", ME, ORIGIN, "https://x.com/v1", SHAPE),
    bad("origin-port-and-path", ME, ORIGIN, "https://x.com:443/v1", SHAPE),
    bad("origin-trailing-slash", ME, ORIGIN, "https://api.openai.com/", SHAPE),
    bad("origin-query", ME, ORIGIN, "https://x.com?a=1", SHAPE),
    bad("origin-fragment", ME, ORIGIN, "https://x.com#top", SHAPE),
    bad("origin-userinfo", ME, ORIGIN, "https://user@x.com", SHAPE),
    bad("origin-ftp", ME, ORIGIN, "ftp://x.com", SCHEME, SHAPE),
    bad("origin-no-scheme", ME, ORIGIN, "api.openai.com", SCHEME, SHAPE),
    bad("origin-upper-scheme", ME, ORIGIN, "HTTPS://x.com", SCHEME, SHAPE),
    bad("origin-leading-space", ME, ORIGIN, " https://x.com", SCHEME, SHAPE),
    bad("origin-scheme-only", ME, ORIGIN, "https://", SHAPE),
    bad("origin-upper-host", ME, ORIGIN, "https://API.openai.com", SHAPE),
    bad("origin-empty-label", ME, ORIGIN, "https://x..com", SHAPE),
    bad("origin-leading-hyphen", ME, ORIGIN, "https://-x.com", SHAPE),
    bad("origin-trailing-dot", ME, ORIGIN, "https://x.com.", SHAPE),
    bad("origin-64-char-label", ME, ORIGIN, f"https://{LONG_LABEL}.example", SHAPE),
    bad("origin-underscore", ME, ORIGIN, "https://my_host.example", SHAPE),
    bad("origin-port-0", ME, ORIGIN, "https://x.com:0", PORT),
    bad("origin-port-65536", ME, ORIGIN, "https://x.com:65536", PORT),
    bad("origin-port-99999", ME, ORIGIN, "https://x.com:99999", PORT),
    bad("origin-port-leading-zero", ME, ORIGIN, "https://x.com:0443", PORT),
    bad("origin-port-six-digits", ME, ORIGIN, "https://x.com:100000", PORT, SHAPE),
    bad("origin-port-empty", ME, ORIGIN, "https://x.com:", PORT, SHAPE),
    bad("origin-port-name", ME, ORIGIN, "https://x.com:https", SHAPE),
    # --- ModelEndpoint spec.api.prefix ----------------------------------------
    ok("prefix-v1", ME, "spec.api.prefix", "/v1"),
    ok("prefix-root", ME, "spec.api.prefix", "/"),
    ok("prefix-fleet-hosted", ME, "spec.api.prefix", "/team-a/qwen3-8b/v1"),
    bad("prefix-relative", ME, "spec.api.prefix", "v1", PREFIX),
    bad("prefix-empty", ME, "spec.api.prefix", "", PREFIX),
    bad("prefix-query", ME, "spec.api.prefix", "/v1?x=1", PREFIX),
    bad("prefix-fragment", ME, "spec.api.prefix", "/v1#a", PREFIX),
    bad("prefix-space", ME, "spec.api.prefix", "/v 1", PREFIX),
    bad("prefix-full-url", ME, "spec.api.prefix", "https://x.com/v1", PREFIX),
    # --- InferenceGateway spec.hostname ---------------------------------------
    ok("hostname-fqdn", IG, HOSTNAME, "ai.example.com"),
    ok("hostname-single-label", IG, HOSTNAME, "gateway"),
    ok("hostname-hyphens", IG, HOSTNAME, "ai-gw.eu-west-1.example.com"),
    ok("hostname-digit-leading-label", IG, HOSTNAME, "1.example.com"),
    ok("hostname-punycode", IG, HOSTNAME, "xn--80ak6aa92e.com"),
    bad("hostname-scheme", IG, HOSTNAME, "https://ai.example.com", HOST_SHAPE),
    bad("hostname-port", IG, HOSTNAME, "ai.example.com:443", HOST_SHAPE),
    bad("hostname-path", IG, HOSTNAME, "ai.example.com/v1", HOST_SHAPE),
    bad("hostname-wildcard", IG, HOSTNAME, "*.example.com", HOST_SHAPE),
    bad("hostname-upper", IG, HOSTNAME, "AI.example.com", HOST_SHAPE),
    bad("hostname-trailing-dot", IG, HOSTNAME, "ai.example.com.", HOST_SHAPE),
    bad("hostname-leading-hyphen", IG, HOSTNAME, "-ai.example.com", HOST_SHAPE),
    bad("hostname-64-char-label", IG, HOSTNAME, f"{LONG_LABEL}.example.com", HOST_SHAPE),
    bad("hostname-empty", IG, HOSTNAME, "", HOST_SHAPE),
    bad("hostname-ipv4", IG, HOSTNAME, "10.0.0.1", HOST_IP),
    bad("hostname-number", IG, HOSTNAME, "1234", HOST_IP),
    bad("hostname-hex", IG, HOSTNAME, "0x7f000001", HOST_IP),
    bad("hostname-ipv6", IG, HOSTNAME, "::1", HOST_SHAPE),
    bad("hostname-ipv6-bracketed", IG, HOSTNAME, "[2001:db8::1]", HOST_SHAPE),
    # --- InferenceGateway spec: tls needs hostname ----------------------------
    ok("gateway-plain", IG, "spec", {"clusterName": "eu-1"}),
    ok("gateway-hostname-no-tls", IG, "spec", {"clusterName": "eu-1", "hostname": "ai.x.io"}),
    ok(
        "gateway-tls-with-hostname",
        IG,
        "spec",
        {
            "clusterName": "eu-1",
            "hostname": "ai.x.io",
            "tls": {"certificateRefs": [{"name": "ai-x-io-tls"}]},
        },
    ),
    bad(
        "gateway-tls-without-hostname",
        IG,
        "spec",
        {"clusterName": "eu-1", "tls": {"certificateRefs": [{"name": "ai-x-io-tls"}]}},
        TLS_HOST,
    ),
    # --- InferenceCluster spec.credentials ------------------------------------
    ok("credentials-secret", IC, "spec.credentials", {"secretRef": {"name": "eu-1-kubeconfig"}}),
    ok(
        "credentials-secret-key",
        IC,
        "spec.credentials",
        {"secretRef": {"name": "eu-1", "key": "config"}},
    ),
    ok("credentials-provider-config", IC, "spec.credentials", {"providerConfigName": "eu-1"}),
    bad(
        "credentials-both",
        IC,
        "spec.credentials",
        {"secretRef": {"name": "eu-1"}, "providerConfigName": "eu-1"},
        CREDS,
    ),
    bad("credentials-neither", IC, "spec.credentials", {}, CREDS),
    # --- InferenceCluster spec.kaito (KAITO v0.12.0 workspace_validation.go:172-184) ---
    ok("kaito-default", IC, "spec.kaito", {}),
    ok("kaito-provisions", IC, "spec.kaito", {"instanceType": "Standard_NC24ads_A100_v4"}),
    ok("kaito-own-nodes", IC, "spec.kaito", {"nodeAutoProvisioning": False}),
    bad(
        "kaito-own-nodes-with-instance-type",
        IC,
        "spec.kaito",
        {"nodeAutoProvisioning": False, "instanceType": "Standard_NC24ads_A100_v4"},
        KAITO_NODES,
    ),
    # --- label maps users fill ------------------------------------------------
    *(
        case
        for kind, path in (
            (IC, "spec.placement.metadata.labels"),
            (MD, "spec.template.metadata.labels"),
        )
        for case in (
            ok(f"{kind}-labels-empty", kind, path, {}),
            ok(f"{kind}-labels-team", kind, path, {"team": "ml"}),
            ok(f"{kind}-labels-prefixed", kind, path, {"example.com/tier": "gold", "region": "eu"}),
            ok(f"{kind}-labels-other-domain", kind, path, {"sub.fleetgate.dev/x": "gold"}),
            ok(f"{kind}-labels-name-only", kind, path, {"fleetgate.dev": "gold"}),
            bad(f"{kind}-labels-cluster", kind, path, {"fleetgate.dev/cluster": "eu-1"}, RESERVED),
            bad(
                f"{kind}-labels-deployment",
                kind,
                path,
                {"fleetgate.dev/deployment": "qwen"},
                RESERVED,
            ),
            bad(
                f"{kind}-labels-mixed",
                kind,
                path,
                {"team": "ml", "fleetgate.dev/anything": "x"},
                RESERVED,
            ),
        )
    ),
    # --- label keys, in every label map and selector users write ---------------
    *(
        case
        for kind, path in LABEL_MAPS
        for case in (
            ok(f"{kind}-{path}-key-name", kind, path, {"team": "ml"}),
            ok(f"{kind}-{path}-key-upper-digits", kind, path, {"GPU_Type.v2": "a100"}),
            ok(f"{kind}-{path}-key-prefixed", kind, path, {"topology.kubernetes.io/region": "eu"}),
            ok(f"{kind}-{path}-key-63", kind, path, {"a" * 63: "x"}),
            ok(f"{kind}-{path}-key-prefix-253", kind, path, {LONG_PREFIX + "/x": "y"}),
            bad(f"{kind}-{path}-key-space", kind, path, {"my team": "ml"}, LABEL_KEY),
            bad(f"{kind}-{path}-key-empty", kind, path, {"": "ml"}, LABEL_KEY),
            bad(f"{kind}-{path}-key-dash-first", kind, path, {"-team": "ml"}, LABEL_KEY),
            bad(f"{kind}-{path}-key-dot-last", kind, path, {"team.": "ml"}, LABEL_KEY),
            bad(f"{kind}-{path}-key-64", kind, path, {"a" * 64: "x"}, LABEL_KEY),
            bad(f"{kind}-{path}-key-no-name", kind, path, {"example.com/": "x"}, LABEL_KEY),
            bad(f"{kind}-{path}-key-two-slashes", kind, path, {"a/b/c": "x"}, LABEL_KEY),
            bad(f"{kind}-{path}-key-upper-prefix", kind, path, {"Example.com/x": "y"}, LABEL_KEY),
            bad(
                f"{kind}-{path}-key-prefix-254",
                kind,
                path,
                {"a" + LONG_PREFIX + "/x": "y"},
                LABEL_KEY,
            ),
            bad(f"{kind}-{path}-key-one-bad", kind, path, {"ok": "1", "not ok": "2"}, LABEL_KEY),
        )
    ),
    # --- ModelService spec.endpoints[] ----------------------------------------
    ok("entry-defaults-absent", MS, ENTRY, {"selector": SELECTOR}),
    ok("entry-min", MS, ENTRY, {"selector": SELECTOR, "weight": 1, "priority": 0}),
    ok("entry-max", MS, ENTRY, {"selector": SELECTOR, "weight": 1000000, "priority": 63}),
    bad("entry-weight-0", MS, ENTRY, {"selector": SELECTOR, "weight": 0}, WEIGHT),
    bad("entry-weight-negative", MS, ENTRY, {"selector": SELECTOR, "weight": -1}, WEIGHT),
    bad("entry-weight-too-big", MS, ENTRY, {"selector": SELECTOR, "weight": 1000001}, WEIGHT),
    bad("entry-priority-negative", MS, ENTRY, {"selector": SELECTOR, "priority": -1}, PRIORITY),
    bad("entry-priority-64", MS, ENTRY, {"selector": SELECTOR, "priority": 64}, PRIORITY),
    bad(
        "entry-both-out-of-range",
        MS,
        "spec.endpoints[]",
        {"selector": SELECTOR, "weight": 0, "priority": 64},
        WEIGHT,
        PRIORITY,
    ),
    # --- ModelDeployment spec.scaling -----------------------------------------
    ok("scaling-to-zero", MD, "spec.scaling", {"minReplicas": 0, "maxReplicas": 1}),
    ok("scaling-equal", MD, "spec.scaling", {"minReplicas": 4, "maxReplicas": 4}),
    bad(
        "scaling-min-above-max",
        MD,
        "spec.scaling",
        {"minReplicas": 3, "maxReplicas": 2},
        "minReplicas must not exceed spec.scaling.maxReplicas",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_rule_verdicts(case: Case) -> None:
    rules = _rules_at(case.kind, case.path)
    assert rules, f"no CEL rules at {case.kind} {case.path}"
    for fragment in case.breaks:
        matching = [r for r in rules if fragment in r.message]
        assert len(matching) == 1, f"{fragment!r} names {len(matching)} rules at {case.path}"
    broken = {r.message for r in rules if not _evaluate(r, case.value, case.old)}
    expected = {r.message for r in rules if any(f in r.message for f in case.breaks)}
    assert broken == expected


def test_case_ids_unique() -> None:
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("rule", RULES, ids=[f"{r.kind}:{r.path}:{i}" for i, r in enumerate(RULES)])
def test_rule_is_exercised(rule: Rule) -> None:
    """Every rule shipped has a case it rejects and a case at its path that passes."""
    assert any(c.kind == rule.kind and c.path == rule.path and not c.breaks for c in CASES)
    assert any(
        c.kind == rule.kind and c.path == rule.path and any(f in rule.message for f in c.breaks)
        for c in CASES
    )


def _strip_literals(expr: str) -> str:
    return re.sub(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"", "''", expr)


def _regex_literals(expr: str) -> list[str]:
    """The patterns passed to matches(), as the CEL string literal decodes them."""
    found = re.findall(r"matches\(\s*'((?:[^'\\]|\\.)*)'\s*\)", expr)
    return [re.sub(r"\\(.)", r"\1", lit) for lit in found]


@pytest.mark.parametrize("rule", RULES, ids=[f"{r.kind}:{r.path}:{i}" for i, r in enumerate(RULES)])
def test_rule_is_portable(rule: Rule) -> None:
    ENV.program(ENV.compile(rule.rule))
    calls = set(re.findall(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(", _strip_literals(rule.rule)))
    assert calls <= ALLOWED_CALLS, f"non-standard CEL functions: {calls - ALLOWED_CALLS}"
    assert rule.rule.count("matches(") == len(_regex_literals(rule.rule))
    for pattern in _regex_literals(rule.rule):
        re.compile(pattern)
        re2.compile(pattern)
        assert "(?=" not in pattern
        assert "(?!" not in pattern
        assert "(?<" not in pattern
        assert not re.search(r"\\[1-9]", pattern), "backreference"


@pytest.mark.parametrize("rule", RULES, ids=[f"{r.kind}:{r.path}:{i}" for i, r in enumerate(RULES)])
def test_rule_cost_is_bounded(rule: Rule) -> None:
    """The API server estimates a rule's cost from the bounds of what it reads."""
    node = rule.node
    if "matches(" in rule.rule and node.get("type") == "string":
        assert "maxLength" in node
    if re.search(r"\.(all|exists|exists_one)\(", rule.rule) and node.get("type") == "object":
        assert "maxProperties" in node


@pytest.mark.parametrize("rule", RULES, ids=[f"{r.kind}:{r.path}:{i}" for i, r in enumerate(RULES)])
def test_rule_message_names_field(rule: Rule) -> None:
    field = rule.path.replace("[]", "").replace("{}", "")
    assert rule.message.strip()
    assert field in rule.message.replace("[]", "")


@pytest.mark.parametrize(
    ("kind", "path"),
    [
        (ME, ORIGIN),
        (IG, HOSTNAME),
        (IG, "spec"),
        (IC, "spec.credentials"),
        (IC, "spec.placement.metadata.labels"),
        (MD, "spec.template.metadata.labels"),
        (MS, "spec.endpoints[]"),
        *LABEL_MAPS,
    ],
)
def test_required_rules_present(kind: str, path: str) -> None:
    assert _rules_at(kind, path), f"{kind} has no CEL rule at {path}"


LABEL_KEY_CASES = [c for c in CASES if c.id.startswith(f"{IC}-spec.placement.metadata.labels-key")]


@pytest.mark.parametrize("case", LABEL_KEY_CASES, ids=[c.id for c in LABEL_KEY_CASES])
def test_the_functions_judge_label_keys_as_the_xrds_do(case: Case) -> None:
    """The pydantic models carry the same label-key syntax, so both edges agree."""
    accepted = True
    try:
        LabelSelector.model_validate({"matchLabels": dict.fromkeys(case.value, "v")})
    except ValidationError:
        accepted = False
    assert accepted == (not case.breaks)
