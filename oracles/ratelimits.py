"""The descriptors Envoy sends its rate-limit service for a request, read from a route's xDS.

Envoy Gateway translates a BackendTrafficPolicy's global rules into rate-limit
actions on each xDS route (internal/xds/translator/ratelimit.go, v1.8.3): a
``RateLimitPerRoute`` under the route's ``typed_per_filter_config``, keyed by
the rate-limit filter's name and naming its domain, or, when every rule is
shared and none has a cost, ``rate_limits`` on the route action itself, which
every rate-limit filter of the listener sends under its own domain
(ratelimit.go:173-203). For each entry Envoy evaluates the actions in order
against the request; if any action yields no descriptor entry, the entry sends
no descriptor (``RateLimit.actions``, envoy/config/route/v3/
route_components.proto). What this module evaluates:

* ``generic_key``: (``descriptor_key`` or ``generic_key``, ``descriptor_value``);
* ``request_headers``: (``descriptor_key``, the header's value); an absent
  header yields nothing, or with ``skip_if_absent`` skips the action alone;
* ``header_value_match``: (``descriptor_key`` or ``header_match``,
  ``descriptor_value``) when every ``headers`` matcher matches and that equals
  ``expect_match`` (default true), else nothing. Matchers: ``string_match``
  (exact, prefix, suffix, contains, ``safe_regex`` as a full match,
  ``ignore_case``), ``present_match``, ``invert_match``; an absent header
  matches no value matcher, inverted or not, unless
  ``treat_missing_header_as_empty``.

* ``metadata``: (``descriptor_key``, the dynamic metadata's value at
  ``metadata_key``), else ``default_value``; absent, it yields nothing, or with
  ``skip_if_absent`` skips the action alone;
* ``extension`` ``envoy.rate_limit_descriptors.expr``: (``descriptor_key``,
  the CEL ``text`` evaluated, here by cel-python, over the request's
  ``metadata``); an error yields nothing, or with ``skip_if_error`` skips the
  action alone.

The metadata is the request's dynamic metadata by namespace, as Envoy's
``metadata.filter_metadata`` holds it. Any other action (remote address,
query parameters, ...) raises: a test must
not believe it computed what Envoy would send. Pure data in, data out: a
route as ``oracles.translate.Translation.route_configs`` returns it (protojson's
camelCase, as egctl prints it; snake_case, as an Envoy config dump in YAML
writes it, reads the same).
"""

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import celpy
from celpy.adapter import json_to_cel
from celpy.evaluation import CELEvalError

Obj = dict[str, Any]
PER_ROUTE_TYPE = "envoy.extensions.filters.http.ratelimit.v3.RateLimitPerRoute"


class Descriptor(NamedTuple):
    """One descriptor of a ShouldRateLimit request, and how much it counts."""

    entries: tuple[tuple[str, str], ...]
    # A fixed cost (``hits_addend.number``); None: the request's hits_addend (1).
    hits_addend: int | None = None
    # A cost Envoy reads per request from a substitution format (dynamic metadata,
    # a response header): not evaluable from the request, so a test supplies it.
    hits_addend_format: str | None = None
    # Sent when the response finished (a response cost), not before the request.
    on_stream_done: bool = False

    def json(self, hits_addend: int | None = None) -> Obj:
        """As the service's ``/json`` endpoint reads a RateLimitDescriptor (protojson)."""
        out: Obj = {"entries": [{"key": k, "value": v} for k, v in self.entries]}
        addend = self.hits_addend if hits_addend is None else hits_addend
        if addend is not None:
            out["hitsAddend"] = addend
        return out


def _field(obj: Mapping[str, Any], name: str) -> Any:
    """``name`` (snake_case) or its protojson camelCase spelling."""
    if name in obj:
        return obj[name]
    head, *rest = name.split("_")
    return obj.get(head + "".join(part.title() for part in rest))


def _header(headers: Mapping[str, str], name: str) -> str | None:
    """A request header's value; names compare without case, as HTTP's do."""
    lowered = name.lower()
    for key, value in headers.items():
        if key.lower() == lowered:
            return value
    return None


def _string_match(matcher: Mapping[str, Any], value: str) -> bool:
    ignore_case = bool(_field(matcher, "ignore_case"))
    subject = value.lower() if ignore_case else value

    def fixed(kind: str) -> str | None:
        wanted = _field(matcher, kind)
        if wanted is None:
            return None
        return str(wanted).lower() if ignore_case else str(wanted)

    if (exact := fixed("exact")) is not None:
        return subject == exact
    if (prefix := fixed("prefix")) is not None:
        return subject.startswith(prefix)
    if (suffix := fixed("suffix")) is not None:
        return subject.endswith(suffix)
    if (contains := fixed("contains")) is not None:
        return contains in subject
    regex = _field(matcher, "safe_regex")
    if regex is not None:
        # RE2, matched against the whole value (type/matcher/v3/regex.proto); the
        # patterns Envoy Gateway writes are in the subset Python's re shares with RE2.
        return re.fullmatch(str(regex["regex"]), value) is not None
    raise ValueError(f"a string matcher this module does not evaluate: {dict(matcher)}")


def header_matches(matcher: Mapping[str, Any], headers: Mapping[str, str]) -> bool:
    """One ``config.route.v3.HeaderMatcher`` against the request's headers."""
    value = _header(headers, str(matcher["name"]))
    invert = bool(_field(matcher, "invert_match"))
    present = _field(matcher, "present_match")
    if present is not None:
        return (value is not None) == bool(present) != invert
    if value is None:
        if not _field(matcher, "treat_missing_header_as_empty"):
            return False
        value = ""
    string_match = _field(matcher, "string_match")
    if string_match is not None:
        matched = _string_match(string_match, value)
    elif (exact := _field(matcher, "exact_match")) is not None:
        matched = value == exact
    else:
        raise ValueError(f"a header matcher this module does not evaluate: {dict(matcher)}")
    return matched != invert


Metadata = Mapping[str, Mapping[str, Any]]
EXPRESSION = "envoy.rate_limit_descriptors.expr"


def _metadata_entry(action: Mapping[str, Any], metadata: Metadata) -> list[tuple[str, str]] | None:
    key = _field(action, "metadata_key") or {}
    value: Any = metadata.get(str(key.get("key")))
    for step in key.get("path") or []:
        value = value.get(str(step.get("key"))) if isinstance(value, Mapping) else None
    if value is None:
        value = _field(action, "default_value") or None
    if value is None:
        return [] if _field(action, "skip_if_absent") else None
    return [(str(_field(action, "descriptor_key")), str(value))]


def _expression_entry(
    extension: Mapping[str, Any], metadata: Metadata
) -> list[tuple[str, str]] | None:
    if extension.get("name") != EXPRESSION:
        raise ValueError(f"a descriptor extension this module does not evaluate: {extension}")
    config = _field(extension, "typed_config") or {}
    environment = celpy.Environment()
    try:
        program = environment.program(environment.compile(str(config["text"])))
        value = program.evaluate({"metadata": json_to_cel({"filter_metadata": dict(metadata)})})
    except CELEvalError:
        value = None
    if value is None or isinstance(value, CELEvalError):
        return [] if _field(config, "skip_if_error") else None
    return [(str(_field(config, "descriptor_key")), str(value))]


def _entry(
    action: Mapping[str, Any], headers: Mapping[str, str], metadata: Metadata
) -> list[tuple[str, str]] | None:
    """The entries one action appends (none: it is skipped); None: no descriptor is sent."""
    from_metadata = _field(action, "metadata")
    if from_metadata is not None:
        return _metadata_entry(from_metadata, metadata)
    extension = _field(action, "extension")
    if extension is not None:
        return _expression_entry(extension, metadata)
    return _header_entry(action, headers)


def _header_entry(
    action: Mapping[str, Any], headers: Mapping[str, str]
) -> list[tuple[str, str]] | None:
    generic = _field(action, "generic_key")
    if generic is not None:
        key = _field(generic, "descriptor_key") or "generic_key"
        return [(str(key), str(_field(generic, "descriptor_value")))]
    request = _field(action, "request_headers")
    if request is not None:
        value = _header(headers, str(_field(request, "header_name")))
        if value is None:
            return [] if _field(request, "skip_if_absent") else None
        return [(str(_field(request, "descriptor_key")), value)]
    match = _field(action, "header_value_match")
    if match is not None:
        expect = _field(match, "expect_match")
        matched = all(header_matches(m, headers) for m in match.get("headers") or [])
        if matched != (True if expect is None else bool(expect)):
            return None
        key = _field(match, "descriptor_key") or "header_match"
        return [(str(key), str(_field(match, "descriptor_value")))]
    raise ValueError(f"a rate-limit action this module does not evaluate: {dict(action)}")


def descriptor(
    rate_limit: Mapping[str, Any], headers: Mapping[str, str], metadata: Metadata | None = None
) -> Descriptor | None:
    """What one ``config.route.v3.RateLimit`` sends for a request with ``headers`` and
    dynamic ``metadata`` (as they are when it is evaluated)."""
    entries = []
    for action in rate_limit.get("actions") or []:
        appended = _entry(action, headers, metadata or {})
        if appended is None:
            return None
        entries.extend(appended)
    if not entries:
        return None
    addend = _field(rate_limit, "hits_addend") or {}
    number = addend.get("number")
    return Descriptor(
        tuple(entries),
        hits_addend=None if number is None else int(number),
        hits_addend_format=addend.get("format"),
        on_stream_done=bool(_field(rate_limit, "apply_on_stream_done")),
    )


def descriptors(
    route: Mapping[str, Any],
    headers: Mapping[str, str],
    listener_domains: Sequence[str] = (),
    metadata: Metadata | None = None,
) -> dict[str, list[Descriptor]]:
    """Domain → the descriptors Envoy sends for a request with ``headers`` and dynamic
    ``metadata`` on ``route``.

    ``listener_domains`` are the domains of the listener's rate-limit filters, needed
    only for a route whose rate limits sit on its route action (shared rules only):
    each filter sends those under its own domain, unless the route's per-filter config
    gives that filter other rate limits.
    """
    found: dict[str, list[Descriptor]] = {}
    per_route_domains = set()
    for config in (_field(route, "typed_per_filter_config") or {}).values():
        if not str(config.get("@type", "")).endswith(PER_ROUTE_TYPE):
            continue
        domain = str(config["domain"])
        per_route_domains.add(domain)
        found.setdefault(domain, []).extend(_all(_field(config, "rate_limits"), headers, metadata))
    action_limits = _field(route.get("route") or {}, "rate_limits")
    if action_limits:
        if not listener_domains:
            raise ValueError(
                f"route {route.get('name')} rate-limits on its route action: name the "
                "listener's rate-limit domains"
            )
        for domain in listener_domains:
            if domain not in per_route_domains:
                found.setdefault(domain, []).extend(_all(action_limits, headers, metadata))
    return {domain: sent for domain, sent in found.items() if sent}


def _all(
    rate_limits: Iterable[Mapping[str, Any]] | None,
    headers: Mapping[str, str],
    metadata: Metadata | None,
) -> list[Descriptor]:
    sent = (descriptor(r, headers, metadata) for r in rate_limits or [])
    return [d for d in sent if d is not None]


def routes(route_configs: Iterable[Mapping[str, Any]]) -> dict[str, Obj]:
    """Every route of some route configurations, by its name."""
    return {
        str(route["name"]): dict(route)
        for config in route_configs
        for host in _field(config, "virtual_hosts") or []
        for route in host.get("routes") or []
    }


def listener_domains(listeners: Iterable[Mapping[str, Any]]) -> list[str]:
    """The domains of every rate-limit filter of some listeners (their connection
    managers' ``envoy.filters.http.ratelimit`` filters, ratelimit.go:82-114)."""
    domains: list[str] = []
    for listener in listeners:
        chains = [*(_field(listener, "filter_chains") or [])]
        if _field(listener, "default_filter_chain"):
            chains.append(_field(listener, "default_filter_chain"))
        for chain in chains:
            for network in chain.get("filters") or []:
                manager = _field(network, "typed_config") or {}
                for http in _field(manager, "http_filters") or []:
                    config = _field(http, "typed_config") or {}
                    is_filter = str(config.get("@type", "")).endswith("ratelimit.v3.RateLimit")
                    if is_filter and config["domain"] not in domains:
                        domains.append(str(config["domain"]))
    return domains
