"""The public internet, played: the third-party providers a fleet gateway dials by name.

A ModelEndpoint outside the fleet (``origin: https://api.openai.com``) becomes a
Backend the fleet gateway's Envoy dials by that name over TLS, trusting the
system's CAs. Neither the name nor the provider is reachable from here, so:

* **A public CA of the plane's own** joins the system trust store each Envoy's
  root is given: the machine's bundle plus that CA, mounted where the Envoy
  image keeps its bundle (Envoy Gateway points a Backend that trusts the
  system's CAs at /etc/ssl/certs/ca-certificates.crt, internal/utils/cert/
  cert.go:12 at v1.8.3). Nothing else of the trust store changes.
* **One provider stand-in per third-party name**: the engine stand-in
  (engine.py) with ``--any-model``, serving TLS on 443 with a certificate for
  that name from the public CA, answering only to the API key the fleet's
  Secret holds for it (OpenAI's 401 otherwise), and recording every request
  with its headers (``GET /requests`` on its control port) so drills can
  check what a third party is told. Its address is a pod address; network.py
  puts the name in each Envoy's hosts file and relays to it.
"""

import base64
import json
import ssl
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from plane import pods
from plane.kube import Obj
from plane.processes import Namespace, Process, Supervisor
from sim import pki

HTTPS = 443
CONTROL_PORT = 8081
BUNDLE = "ca-certificates.crt"
KEY_VARIABLE = "PROVIDER_API_KEY"


@dataclass(frozen=True)
class Provider:
    hostname: str
    address: str  # its pod address
    netns: Namespace
    process: Process

    def requests(self) -> list[Obj]:
        """Every request it took, with its headers, in order."""
        status, body = self.netns.request(CONTROL_PORT, "GET", "/requests")
        if status != 200:
            raise OSError(f"provider stand-in {self.hostname} answered {status}")
        found: list[Obj] = json.loads(body)
        return found


@dataclass
class Internet:
    sup: Supervisor
    state: Path
    keys: Mapping[str, str]  # hostname -> the API key its provider expects
    providers: dict[str, Provider] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.ca = pki.ca("Fleetgate test plane public CA")
        self.trust_store.mkdir(parents=True, exist_ok=True)
        system = Path(ssl.get_default_verify_paths().cafile or f"/etc/ssl/certs/{BUNDLE}")
        (self.trust_store / BUNDLE).write_bytes(system.read_bytes() + self.ca.cert_pem)

    @property
    def trust_store(self) -> Path:
        """The directory mounted at /etc/ssl/certs in every Envoy's root."""
        return self.state / "trust"

    def provider(self, hostname: str) -> Provider:
        """The provider stand-in answering at ``hostname``, started on first use."""
        if hostname not in self.providers:
            self.providers[hostname] = self._start(hostname)
        return self.providers[hostname]

    def _start(self, hostname: str) -> Provider:
        folder = self.state / "providers" / hostname
        folder.mkdir(parents=True, exist_ok=True)
        pair = pki.leaf(self.ca, hostname, server=True, dns=(hostname,))
        (folder / "tls.crt").write_bytes(pair.cert_pem)
        (folder / "tls.key").write_bytes(pair.key_pem)
        (folder / "tls.key").chmod(0o600)
        argv = [sys.executable, "-m", "plane.engine", "--any-model"]
        argv += ["--port", str(HTTPS), "--control-port", str(CONTROL_PORT)]
        argv += ["--certfile", str(folder / "tls.crt"), "--keyfile", str(folder / "tls.key")]
        environment = {}
        if hostname in self.keys:
            argv += ["--api-key-env", KEY_VARIABLE]
            environment[KEY_VARIABLE] = self.keys[hostname]
        netns = Namespace(self.sup, f"internet-{hostname}")
        process = self.sup.start(f"internet-{hostname}", netns.argv(argv), env=environment)
        return Provider(hostname, pods.address(), netns, process)


def provider_keys(docs: list[Obj]) -> dict[str, str]:
    """Each third party's API key, as the fleet's ModelEndpoints and Secrets hold it."""
    secrets = {
        (d["metadata"].get("namespace", ""), d["metadata"]["name"]): d
        for d in docs
        if d.get("kind") == "Secret"
    }
    keys = {}
    for endpoint in (d for d in docs if d.get("kind") == "ModelEndpoint"):
        ref = endpoint["spec"].get("credentialRef")
        secret = secrets.get((endpoint["metadata"].get("namespace", ""), (ref or {}).get("name")))
        if ref is None or secret is None:
            continue
        key = ref.get("key", "apiKey")
        value = (secret.get("stringData") or {}).get(key)
        if value is None and key in (secret.get("data") or {}):
            value = base64.b64decode(secret["data"][key]).decode()
        host = urlsplit(endpoint["spec"]["origin"]).hostname
        if value is not None and host:
            keys[host] = value
    return keys


_RUNNING: list[Internet] = []


def start(sup: Supervisor, state: Path, docs: list[Obj]) -> Internet:
    internet = Internet(sup, state, provider_keys(docs))
    _RUNNING.append(internet)
    return internet


def running() -> Internet:
    if not _RUNNING:
        raise LookupError("no internet is played")
    return _RUNNING[0]


def trust_store() -> Path:
    """The system trust store an Envoy's root is given."""
    return running().trust_store if _RUNNING else Path("/etc/ssl/certs")
