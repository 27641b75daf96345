"""Requests through the fleet's gateways, with OpenAI's Python SDK as the client.

Every hop is the real component: the fleet gateway's Envoy (TLS, caller
keys, AI Gateway's external processor choosing the backend and rewriting
the model), the cluster gateway's Envoy (mutual TLS, the fleet gateway's
client certificate), and behind it the engine stand-in (network.py), or, for
a third party, the provider stand-in (internet.py): the only things not real
here. The client reaches the public gateway's listener as a
port-forward would (the load balancer in front of it is not played for a
client outside the fleet), with the gateway's hostname as SNI and Host, and
trusts exactly the certificate the gateway's TLS Secret holds.
"""

import base64
import json
import math
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

import httpx2
import openai

from e2e.controlplane import internet, network, proxies
from e2e.controlplane.driver import ControlPlane
from e2e.controlplane.kube import Obj

GATEWAY = "public"  # the example fleet's TLS gateway with caller keys
MODEL = "team-a/chat"
CALLER = "team-a"
FALLBACK = "openai-fallback"  # team-a/chat's tier 1, a third party
# What a third party is never told: who calls, through which gateway, from where
# (Envoy's own stamp of the caller's address last).
CALLER_HEADERS = (
    "x-fleetgate-caller",
    "x-fleetgate-gateway",
    "x-forwarded-for",
    "x-envoy-external-address",
)
ACCESS_LOG_FLUSH_S = 10.0
# How long tier 0 may take to answer again once its engines are back (outlier
# detection may have ejected them for the gateway's baseEjectionTime).
RECOVERY_TIMEOUT_S = 90.0
HTTPS, HTTP = 443, 80  # the Gateway's listeners, as its Service names them
TIMEOUT_S = 30.0
# How long Envoy may take to load what Envoy Gateway and AI Gateway serve it.
READY_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class Front:
    """The public gateway as a client sees it."""

    hostname: str
    proxy: proxies.Proxy
    certificate: str  # PEM, what the gateway presents
    keys: dict[str, str]  # caller -> key

    def port(self, service_port: int) -> int:
        """The Envoy listener's port (Envoy Gateway maps a privileged one up by 10000)."""
        return service_port + 10000 if service_port < 1024 else service_port

    def client(self, key: str) -> openai.OpenAI:
        context = ssl.create_default_context(cadata=self.certificate)
        # The gateway's own certificate is the trust anchor: its CA is not published.
        context.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN
        transport = _Forwarded(self, verify=context)
        return openai.OpenAI(
            api_key=key,
            base_url=f"https://{self.hostname}/v1",
            http_client=httpx2.Client(transport=transport, timeout=TIMEOUT_S),
            max_retries=0,
        )


class _Forwarded(httpx2.HTTPTransport):
    """Every request to the gateway's listener inside its Envoy's network namespace,
    through a port-forward, keeping the gateway's hostname for SNI and Host."""

    def __init__(self, front: Front, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.front = front
        self.local = front.proxy.netns.publish(front.port(HTTPS))

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        request.url = request.url.copy_with(host="127.0.0.1", port=self.local)
        request.extensions = {**request.extensions, "sni_hostname": self.front.hostname}
        return super().handle_request(request)


def _front(driver: ControlPlane) -> Front:
    (route,) = (r for r in driver.routes() if r.gateway == GATEWAY and r.service[2] == "chat")
    gateway = next(d for d in driver.docs if d["kind"] == "InferenceGateway")
    spec = gateway["spec"]
    secrets = {d["metadata"]["name"]: d for d in driver.docs if d["kind"] == "Secret"}
    (tls,) = spec["tls"]["certificateRefs"]
    callers = next(
        s
        for s in secrets.values()
        if (s["metadata"].get("labels") or {}).items()
        >= spec["auth"]["secretSelector"]["matchLabels"].items()
    )
    proxy = proxies.on(route.cluster).of(f"fleetgate-system/fleetgate-gw-{GATEWAY}")
    return Front(
        spec["hostname"],
        proxy,
        _string_data(secrets[tls["name"]])["tls.crt"],
        _string_data(callers),
    )


def _string_data(secret: Obj) -> dict[str, str]:
    found = dict(secret.get("stringData") or {})
    for key, value in (secret.get("data") or {}).items():
        found[key] = base64.b64decode(value).decode()
    return found


def _engine_took(driver: ControlPlane, prompt: str) -> bool:
    """Whether an engine replica running now recorded a request asking ``prompt``. Read
    from the replicas as they are now: one the network replaced meanwhile (its
    Deployment changed) is gone with its record."""
    for cluster in driver.workloads:
        for replica in network.engines(cluster):
            status, body = replica.netns.request(replica.port, "GET", "/requests")
            if status == 200 and any(prompt in json.dumps(r["body"]) for r in json.loads(body)):
                return True
    return False


def _wait_serving(front: Front) -> None:
    """Until the gateway answers the model (Envoy has loaded its listeners and routes)."""
    client = front.client(front.keys[CALLER])
    deadline = time.monotonic() + READY_TIMEOUT_S
    while True:
        try:
            client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "?"}])
            return
        except (openai.APIError, OSError) as err:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the public gateway never answered {MODEL}: {err}") from err
            time.sleep(1.0)


def completion(front: Front, driver: ControlPlane) -> list[str]:
    """A completion and a stream reach an engine and answer with the served model name."""
    problems = []
    client = front.client(front.keys[CALLER])
    reply = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "say hello"}]
    )
    served = reply.model
    if not served or served == MODEL:
        problems.append(f"the reply names model {served!r}, not the engine's served name")
    if reply.usage is None or reply.usage.total_tokens <= 0:
        problems.append(f"the reply carries no usage: {reply.usage}")
    if "say hello" not in (reply.choices[0].message.content or ""):
        problems.append(f"the reply is not the engine's answer: {reply.choices[0].message}")
    stream = client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": "stream it"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    if "stream it" not in text:
        problems.append(f"the stream did not carry the engine's answer: {text!r}")
    if not any(c.usage is not None for c in chunks):
        problems.append("the stream ended without a usage chunk")
    for prompt in ("say hello", "stream it"):
        if not _engine_took(driver, prompt):
            problems.append(f"no engine running now took the request {prompt!r}")
    return problems


def refusals(front: Front) -> list[str]:
    """No key: 401; the plain-HTTP listener answers /healthz and nothing else."""
    problems = []
    try:
        # The SDK sends a key unless told to leave the header out.
        front.client("never-sent").chat.completions.create(
            model=MODEL,
            messages=[{"role": "user", "content": "hi"}],
            extra_headers={"Authorization": openai.omit},
        )
        problems.append("a request without a key was answered")
    except openai.AuthenticationError:
        pass
    status, _ = front.proxy.netns.request(front.port(HTTP), "GET", "/healthz")
    if status != 200:
        problems.append(f"/healthz on port {HTTP} answered {status}")
    status, _ = front.proxy.netns.request(front.port(HTTP), "GET", "/v1/models")
    if status != 404:
        problems.append(f"/v1/models on port {HTTP} answered {status}, not 404")
    return problems


def failover(front: Front, driver: ControlPlane) -> list[str]:
    """Tier 0's engines failing, the same request is answered by tier 1, the third party,
    which is told its API key and nothing of the caller; the usage record says tier 1 and
    the priced cost. Tier 0 back, it answers again."""
    problems = []
    (fallback,) = (
        d["spec"]
        for d in driver.docs
        if d["kind"] == "ModelEndpoint" and d["metadata"]["name"] == FALLBACK
    )
    origin = fallback["origin"]
    provider = internet.running().provider(urlsplit(origin).hostname or "")
    client = front.client(front.keys[CALLER])
    engines = [r for c in driver.workloads for r in network.engines(c)]
    seen, sent = len(provider.requests()), datetime.now(UTC)
    _fault(engines, "503")
    try:
        reply = client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "fail over"}]
        )
    finally:
        _fault(engines, "ok")
    record = _usage_record_since(front, sent)
    if reply.model == MODEL or "fail over" not in (reply.choices[0].message.content or ""):
        problems.append(f"the reply is not the fallback's answer: {reply.model} {reply.choices}")
    if record.get("tier") != "1" or record.get("cost") != _priced(fallback["pricing"], record):
        problems.append(f"the usage record does not say tier 1 at its price: {record}")
    told = provider.requests()[seen:]
    if len(told) != 1:
        problems.append(f"the third party took {len(told)} requests, not 1")
    expected = f"Bearer {internet.running().keys[provider.hostname]}"
    for request in told:
        headers = {k.lower(): v for k, v in request["headers"].items()}
        if headers.get("authorization") != expected:
            problems.append("the third party was not sent the endpoint's API key")
        leaked = sorted(set(CALLER_HEADERS) & set(headers))
        if leaked:
            problems.append(f"the third party was told {', '.join(leaked)}")
        if any(front.keys[CALLER] in v for v in headers.values()):
            problems.append("the third party was sent the caller's key")
    started = time.monotonic()
    while True:
        back = client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "back"}]
        )
        if back.model != reply.model:
            print(f"  tier 0 answered again {time.monotonic() - started:.1f} s after its engines")
            break
        if time.monotonic() - started > RECOVERY_TIMEOUT_S:
            problems.append(f"tier 0 did not answer again within {RECOVERY_TIMEOUT_S:.0f} s")
            break
        time.sleep(1.0)
    return problems


def _priced(pricing: Obj, record: Obj) -> int:
    """What the record's tokens cost at ``pricing`` (per 1,000,000 tokens), in millionths
    of the currency, rounded up: the stand-in reports no cached tokens."""
    cost = Decimal(record["input_tokens"]) * Decimal(pricing["inputTokens"])
    cost += Decimal(record["output_tokens"]) * Decimal(pricing["outputTokens"])
    return math.ceil(cost)


def _fault(engines: list[network.Replica], mode: str) -> None:
    for replica in engines:
        status, body = replica.netns.request(replica.port, "POST", "/fault", {"mode": mode})
        if status != 200:
            raise OSError(f"engine {replica.pod} refused fault {mode}: {status} {body!r}")


def _usage_records(front: Front) -> list[Obj]:
    """The usage records in the public gateway's access log (its Envoy's standard output)."""
    (envoy,) = (p for p in front.proxy.processes if p.name.endswith("-envoy"))
    lines = envoy.log.read_text(errors="replace").splitlines()
    return [json.loads(line) for line in lines if line.startswith('{"') and "request_id" in line]


def _usage_record_since(front: Front, sent: datetime) -> Obj:
    """The record of the first answered request started at ``sent`` or later. Envoy writes
    its file access log every second or so (file_flush_interval), not as each request ends,
    so it is waited for, and found by its start time rather than its place."""
    deadline = time.monotonic() + ACCESS_LOG_FLUSH_S
    while True:
        for record in _usage_records(front):
            started = datetime.fromisoformat(str(record.get("start_time")))
            if started >= sent and record.get("status") == 200 and record.get("model") == MODEL:
                return record
        if time.monotonic() > deadline:
            raise LookupError("no answered request's record in the public gateway's access log")
        time.sleep(0.2)


def mutual_tls(driver: ControlPlane) -> list[str]:
    """A client without the fleet gateways' certificate is refused at a cluster gateway."""
    problems = []
    for cluster in driver.workloads:
        proxy = proxies.on(cluster).of("fleetgate-system/fleetgate-cluster-gateway")
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        raw = proxy.netns.connect(HTTPS + 10000)
        try:
            with context.wrap_socket(raw) as tls:
                tls.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                if tls.recv(1024):
                    problems.append(f"{cluster}'s cluster gateway answered a client without cert")
        except (TimeoutError, ssl.SSLError, ConnectionError):
            pass  # refused in the handshake or right after it (TLS 1.3)
    return problems


def drills(driver: ControlPlane) -> list[bool]:
    """The data-plane drills: one check each."""
    front = _front(driver)
    started = time.monotonic()
    try:
        _wait_serving(front)
    except TimeoutError as err:
        print(f"drill: requests through the gateways\n  FAILED: {err}")
        return [False]
    print(f"the public gateway answered {MODEL} {time.monotonic() - started:.1f} s after asked")
    checks = []
    runs: list[tuple[str, Callable[[], list[str]]]] = [
        (
            "a completion and a stream through the public gateway",
            lambda: completion(front, driver),
        ),
        ("no key is refused, port 80 serves /healthz only", lambda: refusals(front)),
        (
            "tier 0 failing, tier 1 (a third party) answers, sent its key, not the caller's",
            lambda: failover(front, driver),
        ),
        ("cluster gateways refuse a client without certificate", lambda: mutual_tls(driver)),
    ]
    for title, drill in runs:
        print(f"drill: {title}")
        problems = drill()
        print("\n".join(f"  FAILED: {p}" for p in problems) or f"  passed: {title}")
        checks.append(not problems)
    return checks
