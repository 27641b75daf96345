"""Requests through the fleet's gateways, with OpenAI's Python SDK as the client.

Every hop is the real component: the fleet gateway's Envoy (TLS, caller
keys, AI Gateway's external processor choosing the backend and rewriting
the model), the cluster gateway's Envoy (mutual TLS, the fleet gateway's
client certificate), and behind it the engine stand-in (network.py, the one
thing not real here). The client reaches the public gateway's listener as a
port-forward would (the load balancer in front of it is not played for a
client outside the fleet), with the gateway's hostname as SNI and Host, and
trusts exactly the certificate the gateway's TLS Secret holds.
"""

import base64
import json
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx2
import openai

from e2e.controlplane import network, proxies
from e2e.controlplane.driver import ControlPlane
from e2e.controlplane.kube import Obj

GATEWAY = "public"  # the example fleet's TLS gateway with caller keys
MODEL = "team-a/chat"
CALLER = "team-a"
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


def _served(replicas: list[network.Replica]) -> int:
    """How many requests the engines have answered so far."""
    total = 0
    for replica in replicas:
        status, body = replica.netns.request(replica.port, "GET", "/requests")
        if status == 200:
            total += len(json.loads(body))
    return total


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


def completion(front: Front, engines: list[network.Replica]) -> list[str]:
    """A completion and a stream reach an engine and answer with the served model name."""
    problems = []
    client = front.client(front.keys[CALLER])
    before = _served(engines)
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
    if _served(engines) - before != 2:
        problems.append(f"the engines answered {_served(engines) - before} requests, not 2")
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
    engines = [r for c in driver.workloads for r in network.engines(c)]
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
            lambda: completion(front, engines),
        ),
        ("no key is refused, port 80 serves /healthz only", lambda: refusals(front)),
        ("cluster gateways refuse a client without certificate", lambda: mutual_tls(driver)),
    ]
    for title, drill in runs:
        print(f"drill: {title}")
        problems = drill()
        print("\n".join(f"  FAILED: {p}" for p in problems) or f"  passed: {title}")
        checks.append(not problems)
    return checks
