"""A small Kubernetes API client for the real control plane: what the e2e reads and writes.

Plain HTTPS to an API server with a client certificate or a bearer token;
objects are dicts. Writes are server-side apply, as ``kubectl apply
--server-side`` does, so the API server (and not this module) decides what a
field manager owns. Resource names come from discovery, never from a table.
"""

import base64
import json
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Obj = dict[str, Any]
LIST_PAGE = 500  # objects per page of a list


class ApiError(Exception):
    def __init__(self, status: int, method: str, path: str, body: str) -> None:
        try:
            message = json.loads(body).get("message", body)
        except ValueError:
            message = body
        super().__init__(f"{method} {path}: HTTP {status}: {message}")
        self.status = status
        self.message = str(message)


@dataclass(frozen=True)
class Resource:
    plural: str
    namespaced: bool
    subresources: frozenset[str]


@dataclass
class Kube:
    """One identity on one API server."""

    server: str
    ca_file: Path
    cert_file: Path | None = None
    key_file: Path | None = None
    token: str | None = None
    _context: ssl.SSLContext | None = field(default=None, repr=False)
    _resources: dict[tuple[str, str], Resource] = field(default_factory=dict, repr=False)

    # --- transport -------------------------------------------------------------

    def _ssl(self) -> ssl.SSLContext:
        if self._context is None:
            context = ssl.create_default_context(cafile=str(self.ca_file))
            if self.cert_file and self.key_file:
                context.load_cert_chain(str(self.cert_file), str(self.key_file))
            self._context = context
        return self._context

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float = 30,
    ) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.server + path, data=data, method=method)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", content_type)
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(req, context=self._ssl(), timeout=timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as err:
            raise ApiError(err.code, method, path, err.read().decode(errors="replace")) from None
        if not raw:
            return None
        if resp.headers.get_content_type() != "application/json":
            return raw.decode(errors="replace")  # /readyz and friends answer in text
        return json.loads(raw)

    def ready(self) -> bool:
        try:
            return bool(self.request("GET", "/readyz", timeout=5) == "ok")
        except (OSError, ApiError, ValueError):
            return False

    # --- discovery -------------------------------------------------------------

    def resource(self, api_version: str, kind: str) -> Resource:
        key = (api_version, kind)
        if key not in self._resources:
            self._discover(api_version)
        if key not in self._resources:  # a CRD established since the last look
            self._discover(api_version)
        if key not in self._resources:
            raise ApiError(404, "GET", self._group_path(api_version), f"no kind {kind}")
        return self._resources[key]

    @staticmethod
    def _group_path(api_version: str) -> str:
        return "/api/v1" if api_version == "v1" else f"/apis/{api_version}"

    def _discover(self, api_version: str) -> None:
        try:
            listing = self.request("GET", self._group_path(api_version))
        except ApiError as err:
            if err.status == 404:
                return
            raise
        subresources: dict[str, set[str]] = {}
        for entry in listing.get("resources", []):
            base, _, sub = entry["name"].partition("/")
            if sub:
                subresources.setdefault(base, set()).add(sub)
        for entry in listing.get("resources", []):
            if "/" not in entry["name"]:
                self._resources[(api_version, entry["kind"])] = Resource(
                    entry["name"],
                    entry["namespaced"],
                    frozenset(subresources.get(entry["name"], ())),
                )

    def path(self, api_version: str, kind: str, namespace: str = "", name: str = "") -> str:
        res = self.resource(api_version, kind)
        path = self._group_path(api_version)
        if res.namespaced and namespace:
            path += f"/namespaces/{namespace}"
        path += f"/{res.plural}"
        return path + (f"/{name}" if name else "")

    def all_resources(self) -> Iterator[tuple[str, str, Resource]]:
        """(apiVersion, kind, resource) of every listable kind the server serves."""
        groups = [("v1", "/api/v1")]
        for group in self.request("GET", "/apis")["groups"]:
            version = group["preferredVersion"]["groupVersion"]
            groups.append((version, f"/apis/{version}"))
        for api_version, path in groups:
            try:
                listing = self.request("GET", path)
            except ApiError:
                continue
            for entry in listing.get("resources", []):
                if "/" not in entry["name"] and "list" in entry.get("verbs", []):
                    res = Resource(entry["name"], entry["namespaced"], frozenset())
                    yield api_version, entry["kind"], res

    def every_object(self, *skip: str) -> Iterator[Obj]:
        """Every object of every listable kind the server serves, but the kinds in ``skip``."""
        for api_version, kind, _ in self.all_resources():
            if kind in skip:
                continue
            try:
                yield from self.list(api_version, kind)
            except ApiError:
                continue

    # --- objects ---------------------------------------------------------------

    def get(self, api_version: str, kind: str, name: str, namespace: str = "") -> Obj | None:
        try:
            obj: Obj = self.request("GET", self.path(api_version, kind, namespace, name))
        except ApiError as err:
            if err.status == 404:
                return None
            raise
        return obj

    def list(
        self, api_version: str, kind: str, namespace: str = "", selector: str = ""
    ) -> list[Obj]:
        # In pages, as kubectl and informers list: one response of every Object of a
        # 400-service fleet (~25 MB) outlasted the API server's answer under load and was
        # cut off (bench-fleet at S=400, IncompleteRead).
        query = {"limit": str(LIST_PAGE)}
        if selector:
            query["labelSelector"] = selector
        items: list[Obj] = []
        while True:
            page = self.request(
                "GET", self.path(api_version, kind, namespace) + "?" + urllib.parse.urlencode(query)
            )
            items += page.get("items", [])
            query["continue"] = (page.get("metadata") or {}).get("continue") or ""
            if not query["continue"]:
                break
        for item in items:  # list items carry no apiVersion/kind
            item.setdefault("apiVersion", api_version)
            item.setdefault("kind", kind)
        return items

    def watch(
        self, api_version: str, kind: str, namespace: str, since: str, seconds: int
    ) -> Iterator[Obj]:
        """Every version of ``kind`` written after resourceVersion ``since``, as the API
        server streams them, for up to ``seconds``; each event's object carries the
        resourceVersion to go on from."""
        query = urllib.parse.urlencode(
            {"watch": "1", "resourceVersion": since, "timeoutSeconds": str(seconds)}
        )
        req = urllib.request.Request(
            f"{self.server}{self.path(api_version, kind, namespace)}?{query}"
        )
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        with urllib.request.urlopen(req, context=self._ssl(), timeout=seconds + 30) as resp:
            for line in resp:
                event = json.loads(line)
                if event.get("type") in ("ADDED", "MODIFIED", "DELETED"):
                    yield event["object"]

    def resource_version(self, api_version: str, kind: str, namespace: str = "") -> str:
        """The collection's resourceVersion now: where a watch from now starts."""
        listed = self.request("GET", self.path(api_version, kind, namespace) + "?limit=1")
        return str(listed["metadata"]["resourceVersion"])

    def apply(
        self, obj: Obj, manager: str = "fleetgate-e2e", subresource: str = "", strict: bool = False
    ) -> Obj:
        """Server-side apply; ``strict`` refuses unknown fields, as kubectl asks by default
        (otherwise the API server drops them with a warning)."""
        meta = obj["metadata"]
        path = self.path(obj["apiVersion"], obj["kind"], meta.get("namespace", ""), meta["name"])
        query = f"?fieldManager={urllib.parse.quote(manager)}&force=true"
        if strict:
            query += "&fieldValidation=Strict"
        result: Obj = self.request(
            "PATCH",
            path + (f"/{subresource}" if subresource else "") + query,
            obj,
            content_type="application/apply-patch+yaml",
        )
        return result

    def replace(self, obj: Obj, subresource: str = "") -> Obj:
        """Write ``obj`` whole at the resourceVersion it was read at, as ``kubectl edit`` does."""
        meta = obj["metadata"]
        path = self.path(obj["apiVersion"], obj["kind"], meta.get("namespace", ""), meta["name"])
        result: Obj = self.request("PUT", path + (f"/{subresource}" if subresource else ""), obj)
        return result

    def merge_patch(
        self, api_version: str, kind: str, name: str, namespace: str, patch: Obj
    ) -> Obj:
        """``kubectl patch --type merge``: RFC 7386 merge of ``patch`` into the stored object."""
        path = self.path(api_version, kind, namespace, name)
        result: Obj = self.request(
            "PATCH", path, patch, content_type="application/merge-patch+json"
        )
        return result

    def update_status(self, obj: Obj) -> Obj:
        """Replace ``status`` as a controller does: read, change, write at that resourceVersion."""
        return self.replace(obj, "status")

    def create(self, obj: Obj) -> Obj:
        meta = obj["metadata"]
        path = self.path(obj["apiVersion"], obj["kind"], meta.get("namespace", ""))
        result: Obj = self.request("POST", path, obj)
        return result

    def delete(self, api_version: str, kind: str, name: str, namespace: str = "") -> bool:
        try:
            self.request("DELETE", self.path(api_version, kind, namespace, name))
        except ApiError as err:
            if err.status == 404:
                return False
            raise
        return True

    def token_for(self, namespace: str, service_account: str, seconds: int = 86400) -> str:
        """A bound token for a ServiceAccount (TokenRequest), as a pod's projected volume holds."""
        review = self.request(
            "POST",
            f"/api/v1/namespaces/{namespace}/serviceaccounts/{service_account}/token",
            {
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenRequest",
                "spec": {"expirationSeconds": seconds},
            },
        )
        return str(review["status"]["token"])


def condition(obj: Obj | None, type_: str) -> Obj | None:
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == type_:
            return dict(cond)
    return None


def is_true(obj: Obj | None, type_: str) -> bool:
    cond = condition(obj, type_)
    return bool(cond and cond.get("status") == "True")


def wait_for(what: str, check: Any, timeout: float, interval: float = 1.0) -> Any:
    """Poll ``check()`` until it returns something truthy; fail naming ``what`` and the error."""
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        try:
            value = check()
            if value:
                return value
        except (ApiError, OSError) as err:
            last = err
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}: {last or 'no'}")
        time.sleep(interval)


def controller_ref(owner: Obj) -> Obj:
    """A controller owner reference to ``owner``, as metav1.NewControllerRef makes it:
    the garbage collector deletes the owned object with its owner."""
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def mount_secret(kube: Kube, namespace: str, name: str, into: Path, filled_by: str) -> Path:
    """A Secret's keys as files in ``into``, as a Secret volume mounts them, once
    ``filled_by`` has filled it."""

    def filled() -> Obj | None:
        secret = kube.get("v1", "Secret", name, namespace)
        return secret if secret and secret.get("data") else None

    secret = wait_for(f"Secret {namespace}/{name} to be filled by {filled_by}", filled, 60)
    into.mkdir(parents=True, exist_ok=True)
    for key, value in secret["data"].items():
        path = into / key
        path.write_bytes(base64.b64decode(value))
        path.chmod(0o600)
    return into
