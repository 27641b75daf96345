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
import itertools
import json
import math
import ssl
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from functools import cached_property, partial
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import urlsplit

import httpx2
import openai

from e2e.fleet import XRKey
from e2e.fleetdrills import restricted
from e2e.realplane.realdriver import ControlPlane
from fleetgate.core.constants import CALLER_HEADER, SYSTEM_NAMESPACE
from fleetgate.core.kinds.gateway import Limits
from plane import internet, network, proxies
from plane.kube import Obj
from sim import pki

GATEWAY = "public"  # the example fleet's TLS gateway with caller keys
MODEL = "team-a/chat"
SERVICE: XRKey = ("ModelService", "team-a", "chat")
CALLER = "team-a"
OTHER_CALLER = "team-b"
FALLBACK = "openai-fallback"  # team-a/chat's tier 1, a third party
# What a third party is never told: who calls, through which gateway, from where
# (Envoy's own stamp of the caller's address last).
CALLER_HEADERS = (
    CALLER_HEADER,
    "x-fleetgate-gateway",
    "x-forwarded-for",
    "x-envoy-external-address",
)
ACCESS_LOG_FLUSH_S = 10.0
# How long tier 0 may take to answer again once its engines are back (outlier
# detection may have ejected them for the gateway's baseEjectionTime).
RECOVERY_TIMEOUT_S = 90.0
# A long prompt, far above Envoy Gateway's default 32 KiB buffer, far below bufferLimit.
LONG_PROMPT_KIB = 200
HTTPS, HTTP = 443, 80  # the Gateway's listeners, as its Service names them
TIMEOUT_S = 30.0
# How long Envoy may take to load what Envoy Gateway and AI Gateway serve it.
READY_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class Front:
    """A gateway as a client sees it: the public one over TLS with caller keys, or one
    with plain http only and no keys."""

    hostname: str
    proxy: proxies.Proxy
    certificate: str | None  # PEM, what the https listener presents; None: plain http
    keys: dict[str, str]  # caller -> key

    def port(self, service_port: int) -> int:
        """The Envoy listener's port (Envoy Gateway maps a privileged one up by 10000)."""
        return service_port + 10000 if service_port < 1024 else service_port

    @cached_property
    def forwarded(self) -> int:
        """One port-forward to the listener, shared by every client."""
        return self.proxy.netns.publish(self.port(HTTP if self.certificate is None else HTTPS))

    def client(self, key: str = "") -> openai.OpenAI:
        """OpenAI's client on the gateway; ``key`` a caller's, unless the gateway takes none."""
        if self.certificate is None:
            transport = _Forwarded(self)
            scheme = "http"
        else:
            context = ssl.create_default_context(cadata=self.certificate)
            # The gateway's own certificate is the trust anchor: its CA is not published.
            context.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN
            transport = _Forwarded(self, verify=context)
            scheme = "https"
        return openai.OpenAI(
            api_key=key or "none",  # the SDK insists on one; a gateway without auth ignores it
            base_url=f"{scheme}://{self.hostname}/v1",
            http_client=httpx2.Client(transport=transport, timeout=TIMEOUT_S),
            max_retries=0,
        )


class _Forwarded(httpx2.HTTPTransport):
    """Every request to the gateway's listener inside its Envoy's network namespace,
    through a port-forward, keeping the gateway's hostname for SNI and Host."""

    def __init__(self, front: Front, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.front = front

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        request.url = request.url.copy_with(host="127.0.0.1", port=self.front.forwarded)
        request.extensions = {**request.extensions, "sni_hostname": self.front.hostname}
        return super().handle_request(request)


def public_gateway(driver: ControlPlane, cluster: str | None = None) -> Front:
    """The public gateway on ``cluster`` (by default, where it serves the model), with the
    certificate and caller keys its Secrets on the control plane hold now (drills replace
    and revoke them)."""
    if cluster is None:
        (route,) = (r for r in driver.routes() if r.gateway == GATEWAY and r.service == SERVICE)
        cluster = route.cluster
    spec = driver.xrs()[("InferenceGateway", "", GATEWAY)]["spec"]
    (tls,) = spec["tls"]["certificateRefs"]
    namespace = SYSTEM_NAMESPACE
    labels = spec["auth"]["secretSelector"]["matchLabels"]
    selector = ",".join(f"{k}={v}" for k, v in labels.items())
    keys = {
        caller: key
        for secret in driver.cp.admin.list("v1", "Secret", namespace, selector=selector)
        for caller, key in _data(secret).items()
    }
    certificate = driver.cp.admin.get("v1", "Secret", tls["name"], namespace)
    proxy = proxies.on(cluster).of(f"{namespace}/fleetgate-gw-{GATEWAY}")
    return Front(spec["hostname"], proxy, _data(certificate or {})["tls.crt"], keys)


def plain_gateway(driver: ControlPlane, gateway: str, service: XRKey) -> Front:
    """A gateway without TLS or caller keys, where it serves ``service``, by the hostname
    its status publishes."""
    (route,) = (r for r in driver.routes() if r.gateway == gateway and r.service == service)
    status = driver.xrs()[("InferenceGateway", "", gateway)].get("status") or {}
    hostname = urlsplit(status["endpoints"]["openAI"]).hostname
    if hostname is None:
        raise LookupError(f"gateway {gateway} publishes no base URL: {status.get('endpoints')}")
    proxy = proxies.on(route.cluster).of(f"{SYSTEM_NAMESPACE}/fleetgate-gw-{gateway}")
    return Front(hostname, proxy, None, {})


def _data(secret: Obj) -> dict[str, str]:
    return {k: base64.b64decode(v).decode() for k, v in (secret.get("data") or {}).items()}


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


def prober(driver: ControlPlane) -> Callable[[str], int]:
    """What the public gateway answers a completion asked with a caller key: its status
    (0 when no answer came at all).

    Each probe trusts the certificate the gateway's TLS Secret holds at that moment, as a
    client told of a rotation would: a drill replaces it, and a client still trusting the
    old one is refused at the handshake once Envoy drains its connections."""
    cluster = public_gateway(driver).proxy.cluster
    fronts: dict[tuple[str | None, int], Front] = {}
    clients: dict[tuple[str | None, int, str], openai.OpenAI] = {}

    def status(key: str) -> int:
        now = public_gateway(driver, cluster)
        serving = (now.certificate, id(now.proxy))  # a new pod is a new Proxy
        front = fronts.setdefault(serving, now)
        if (*serving, key) not in clients:
            clients[(*serving, key)] = front.client(key)
        return ask(clients[(*serving, key)], "who am I").status

    return status


def _wait_serving(front: Front, driver: ControlPlane) -> None:
    """Until an engine of tier 0 answers the model through the gateway: Envoy has loaded
    its listeners and routes, and the cluster gateways and engines are up. Until then the
    gateway may well answer from tier 1, as it should: a tier-0 host it failed to reach
    while the clusters came up stays ejected for the outlier detection's ejection time."""
    client = front.client(front.keys[CALLER])
    deadline = time.monotonic() + READY_TIMEOUT_S
    for attempt in itertools.count():
        prompt = f"are you there? {attempt}"
        try:
            client.chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": prompt}]
            )
            if _engine_took(driver, prompt):
                return
            seen = "an answer from another tier"
        except (openai.APIError, OSError) as err:
            seen = str(err)
        if time.monotonic() > deadline:
            raise TimeoutError(f"no tier-0 engine answered {MODEL} through the gateway: {seen}")
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


class Answer(NamedTuple):
    """What the gateway answered: the status (0 when no answer came at all), and for a
    refusal its JSON body."""

    status: int
    body: Obj


def ask(client: openai.OpenAI, prompt: str, headers: dict[str, str] | None = None) -> Answer:
    """A completion of ``prompt`` asked of ``MODEL``, with ``headers`` added."""
    try:
        client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": prompt}], extra_headers=headers
        )
    except openai.APIConnectionError as err:
        return Answer(0, {"unanswered": str(err)})
    except openai.APIStatusError as err:
        try:
            return Answer(err.status_code, dict(err.response.json()))
        except ValueError:
            return Answer(err.status_code, {"unparsed": err.response.text})
    return Answer(200, {})


def asking(driver: ControlPlane, caller: str) -> Callable[[str], Answer]:
    """``ask`` as ``caller``, with the key its Secret holds now."""
    public = public_gateway(driver)
    client = public.client(public.keys[caller])
    return lambda prompt: ask(client, prompt)


def spent(driver: ControlPlane, caller: str) -> dict[str, int]:
    """What ``caller``'s answers through the public gateway cost, by the tier that answered,
    as their usage records say."""
    found: dict[str, int] = {}
    for r in _usage_records(public_gateway(driver)):
        if r.get("caller") == caller and isinstance(r.get("cost"), int):
            found[str(r.get("tier"))] = found.get(str(r.get("tier")), 0) + r["cost"]
    return found


def _until(client: openai.OpenAI, prompt: str, done: Callable[[int], bool]) -> Answer:
    """Ask until the answer's status is ``done`` (Envoy loads a changed policy within
    moments of its controller accepting it), or ``READY_TIMEOUT_S`` ran out: the last answer."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not done((answer := ask(client, prompt)).status) and time.monotonic() < deadline:
        time.sleep(0.5)
    return answer


def forbidden(front: Front, driver: ControlPlane) -> list[str]:
    """A caller left out of the service's ``spec.access``: 403 with the JSON body naming the
    model and the rule, and nothing of anyone else, also when it sends the caller header
    naming the caller let in, who is answered."""
    problems = []
    allowed, refused = OTHER_CALLER, CALLER
    driver.patch_spec(SERVICE, {"access": {"callers": [allowed]}})
    problems += driver.settle(
        f"{MODEL} open to {allowed} only",
        partial(restricted, driver, SERVICE, GATEWAY, (allowed,), ()),
        tolerate=[SERVICE],
    )
    client = front.client(front.keys[refused])
    status, body = _until(client, "may I", lambda status: status != 200)
    error = body.get("error") or {}
    if status != 403 or (error.get("code"), error.get("model")) != ("caller_not_allowed", MODEL):
        problems.append(f"{refused}, not allowed, was answered {status} {body}")
    if any(key in json.dumps(body) for key in front.keys.values()) or allowed in json.dumps(body):
        problems.append(f"the 403 body tells of a key or another caller: {body}")
    # Claiming to be the allowed caller changes nothing: the listener drops the header
    # before authentication sets it from the key.
    if (forged := ask(client, "may I, as them", {CALLER_HEADER: allowed})).status != 403:
        problems.append(f"{refused}, sending {CALLER_HEADER}: {allowed}, was answered {forged}")
    if (seen := ask(front.client(front.keys[allowed]), "may I")).status != 200:
        problems.append(f"{allowed}, allowed, was answered {seen}")
    driver.patch_spec(SERVICE, {"access": None})
    problems += driver.settle(
        f"{MODEL} open again", lambda: restricted(driver, SERVICE, GATEWAY, None, ())
    )
    if (again := _until(client, "may I now", lambda status: status == 200)).status != 200:
        problems.append(f"{refused}, allowed again, was answered {again}")
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
    engines = every_engine(driver)
    seen, sent = len(provider.requests()), datetime.now(UTC)
    fault(engines, "503")
    try:
        reply = client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "fail over"}]
        )
    finally:
        fault(engines, "ok")
    record = usage_records_since(front, sent)[0]
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


def every_engine(driver: ControlPlane) -> list[network.Replica]:
    """The engine replicas running now on every workload cluster: tier 0 of every
    fleet-hosted route."""
    return [r for c in driver.workloads for r in network.engines(c)]


def fault(engines: list[network.Replica], mode: str) -> None:
    """Each engine answers as ``mode`` says from now on (engine.FAULTS)."""
    for replica in engines:
        status, body = replica.netns.request(replica.port, "POST", "/fault", {"mode": mode})
        if status != 200:
            raise OSError(f"engine {replica.pod} refused fault {mode}: {status} {body!r}")


def _usage_records(front: Front) -> list[Obj]:
    """The usage records in the public gateway's access log (its Envoy's standard output)."""
    (envoy,) = (p for p in front.proxy.processes if p.name.endswith("-envoy"))
    lines = envoy.log.read_text(errors="replace").splitlines()
    return [json.loads(line) for line in lines if line.startswith('{"') and "request_id" in line]


def usage_records_since(front: Front, sent: datetime, count: int = 1) -> list[Obj]:
    """The records of answered requests for ``MODEL`` started at ``sent`` or later, oldest
    first, once at least ``count`` are there. Envoy writes its file access log every second
    or so (file_flush_interval), not as each request ends, so they are waited for, and
    found by their start time rather than their place."""
    deadline = time.monotonic() + ACCESS_LOG_FLUSH_S
    while True:
        found = sorted(
            (
                record
                for record in _usage_records(front)
                if _started(record) >= sent
                and record.get("status") == 200
                and record.get("model") == MODEL
            ),
            key=_started,
        )
        if len(found) >= count:
            return found
        if time.monotonic() > deadline:
            raise LookupError(
                f"{len(found)} answered requests' records in the public gateway's access log, "
                f"not {count}"
            )
        time.sleep(0.2)


def _started(record: Obj) -> datetime:
    return datetime.fromisoformat(str(record.get("start_time")))


def bodies(front: Front, driver: ControlPlane) -> list[str]:
    """A long prompt reaches the engine whole; a body above the gateway's ``bufferLimit``
    is refused with 413 by the gateway itself."""
    problems = []
    client = front.client(front.keys[CALLER])
    ending = f"the end of {LONG_PROMPT_KIB} KiB"
    prompt = "word " * (LONG_PROMPT_KIB * 1024 // len("word ")) + ending
    if (answer := ask(client, prompt)).status != 200:
        problems.append(f"a {LONG_PROMPT_KIB} KiB prompt was answered {answer.status}")
    elif not _engine_took(driver, ending):
        problems.append(f"no engine took the {LONG_PROMPT_KIB} KiB prompt whole")
    spec = driver.xrs()[("InferenceGateway", "", GATEWAY)]["spec"]
    limit = (spec.get("limits") or {}).get("bufferLimit") or Limits().buffer_limit
    size = int(limit.removesuffix("Mi")) * 2**20 + 1024
    if (answer := ask(client, "x" * size)).status != 413:
        problems.append(f"a prompt of {size} bytes, above bufferLimit {limit}, got {answer}")
    return problems


def mutual_tls(driver: ControlPlane) -> list[str]:
    """A client without a certificate a fleet gateway's CA issued is refused at a cluster
    gateway: one with no certificate, and one whose certificate another CA issued for a
    fleet gateway's name (the fleet gateways' own pass: every request above went through)."""
    stranger = pki.leaf(pki.ca("not a fleet gateway's CA"), f"fleetgate-gw-{GATEWAY}", server=False)
    problems = []
    with tempfile.TemporaryDirectory() as folder:
        cert, key = Path(folder) / "tls.crt", Path(folder) / "tls.key"
        cert.write_bytes(stranger.cert_pem)
        key.write_bytes(stranger.key_pem)
        for cluster in driver.workloads:
            for client, certificate in (("no certificate", None), ("another CA's", (cert, key))):
                if _answered(cluster, certificate):
                    problems.append(f"{cluster}'s cluster gateway answered a client with {client}")
    return problems


def _answered(cluster: str, certificate: tuple[Path, Path] | None) -> bool:
    """Whether the cluster gateway answers a request over TLS from a client presenting
    ``certificate`` (files: certificate, key), or none."""
    proxy = proxies.on(cluster).of("fleetgate-system/fleetgate-cluster-gateway")
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    if certificate is not None:
        context.load_cert_chain(*certificate)
    raw = proxy.netns.connect(HTTPS + 10000)
    try:
        with context.wrap_socket(raw) as tls:
            tls.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            return bool(tls.recv(1024))
    except (TimeoutError, ssl.SSLError, ConnectionError):
        return False  # refused in the handshake or right after it (TLS 1.3)


def drills(driver: ControlPlane) -> list[bool]:
    """The data-plane drills: one check each."""
    public = public_gateway(driver)
    started = time.monotonic()
    try:
        _wait_serving(public, driver)
    except TimeoutError as err:
        print(f"drill: requests through the gateways\n  FAILED: {err}")
        return [False]
    print(f"a tier-0 engine answered {MODEL} {time.monotonic() - started:.1f} s after asked")
    checks = []
    runs: list[tuple[str, Callable[[], list[str]]]] = [
        (
            "a completion and a stream through the public gateway",
            lambda: completion(public, driver),
        ),
        ("no key is refused, port 80 serves /healthz only", lambda: refusals(public)),
        (
            f"a {LONG_PROMPT_KIB} KiB prompt is answered, one above bufferLimit refused with 413",
            lambda: bodies(public, driver),
        ),
        (
            "a caller left out of spec.access is refused with 403, whatever caller it claims",
            lambda: forbidden(public, driver),
        ),
        (
            "tier 0 failing, tier 1 (a third party) answers, sent its key, not the caller's",
            lambda: failover(public, driver),
        ),
        (
            "cluster gateways refuse a client without a fleet gateway CA's certificate",
            lambda: mutual_tls(driver),
        ),
    ]
    for title, drill in runs:
        print(f"drill: {title}")
        problems = drill()
        print("\n".join(f"  FAILED: {p}" for p in problems) or f"  passed: {title}")
        checks.append(not problems)
    return checks
