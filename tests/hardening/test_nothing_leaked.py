"""Nothing leaked: no Secret value in any response, result, condition or log line.

Every Secret value the test suite uses (the examples' required resources,
the example fleet, the values unit tests hand to ``secret(...)``) is searched
for, as written and base64-encoded, in everything the five functions say
while running as processes, with ``--debug`` and without:

* every request of a walk of the example fleet whose Secrets also hold every
  unit-test value (under keys the functions project by name);
* every single example (``examples/**/xr.yaml``), reconciled as Crossplane does;
* the same fleet requests with each Secret broken (values in a list, where a
  map belongs) and garbage bytes quoting a value, to reach the error paths.
"""

import ast
import base64
import copy
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
import yaml
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from bench.fleetscale import ANSI, CALL_LINE
from oracles import secretsearch
from sim import catalog
from sim.controllers import as_stored
from tests.grpc.process import FUNCTIONS, insecure, raw_call, serving
from tests.hardening import harness
from tests.hardening.harness import SCRIPTS, Obj, settle

REPO = catalog.REPO


def example_secrets() -> list[Obj]:
    """Every Secret in examples/ (required resources and the fleet), as stored."""
    found = []
    for path in sorted(catalog.EXAMPLES.rglob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and doc.get("kind") == "Secret":
                found.append(as_stored(doc))
    return found


SECRET_NAME = re.compile(r"(KEY|SECRET|TOKEN|PASSWORD)(_VALUE)?$")


def unit_test_values() -> list[str]:
    """Secret values the tests under tests/ use, read from their source.

    The string literals and module constants inside any ``secret(...)`` call's
    data, and every module constant named like a key (``ALICE_KEY``,
    ``API_KEY_VALUE``, ``TLS_KEY``).
    """
    values = []
    for path in sorted((REPO / "tests").rglob("*.py")):
        tree = ast.parse(path.read_text())
        constants = {
            target.id: node.value.value
            for node in tree.body
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
            for target in node.targets
            if isinstance(target, ast.Name) and isinstance(node.value.value, str)
        }
        values += [v for name, v in constants.items() if SECRET_NAME.search(name)]
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and _named(node.func, "secret")):
                continue
            for arg in [*node.args[2:], *(k.value for k in node.keywords if k.arg == "data")]:
                for inner in ast.walk(arg):
                    if isinstance(inner, ast.Dict):
                        for value in inner.values:
                            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                                values.append(value.value)
                            elif isinstance(value, ast.Name) and value.id in constants:
                                values.append(constants[value.id])
    return sorted(set(values))


def _named(func: ast.expr, name: str) -> bool:
    return (isinstance(func, ast.Name) and func.id == name) or (
        isinstance(func, ast.Attribute) and func.attr == name
    )


def seeded_fleet_secrets(secrets: list[Obj], extra: list[str]) -> list[Obj]:
    """The fleet's Secrets, each also holding every unit-test value under keys of its own."""
    seeded = []
    for secret in secrets:
        data = dict(secret.get("data") or {})
        for i, value in enumerate(extra):
            data[f"unit-{i}"] = base64.b64encode(value.encode()).decode()
        seeded.append({**secret, "data": data})
    return seeded


@dataclass
class Traffic:
    """Requests to replay, by console script, and whole examples to reconcile."""

    requests: dict[str, list[fnv1.RunFunctionRequest]] = field(default_factory=dict)
    examples: list[catalog.Example] = field(default_factory=list)


@pytest.fixture(scope="module")
def values() -> set[str]:
    found = set(secretsearch.needles(example_secrets()))
    for value in unit_test_values():
        found |= set(secretsearch.needles([harness.secret("unit", "t", {"k": value})]))
    assert len(found) >= 20, "the corpus of Secret values is suspiciously small"
    return found


@pytest.fixture(scope="module")
def traffic() -> Traffic:
    fleet = settle()
    fleet_secrets = seeded_fleet_secrets(fleet.secrets, unit_test_values())
    seeded = settle_with(fleet_secrets)
    out = Traffic({name: [] for name in FUNCTIONS}, catalog.discover())
    for answered in seeded:
        kind = answered.req.observed.composite.resource.fields["kind"].string_value
        out.requests[SCRIPTS[kind]].append(answered.req)
        out.requests[SCRIPTS[kind]].append(with_broken_secrets(answered.req))
    return out


def settle_with(secrets: list[Obj]) -> list[harness.Call]:
    fleet = harness.InProcessFleet.load()
    fleet.secrets = secrets
    fleet.converge()
    assert isinstance(fleet, harness.InProcessFleet)
    return fleet.calls


def with_broken_secrets(req: fnv1.RunFunctionRequest) -> fnv1.RunFunctionRequest:
    """``req`` with every required Secret's values in a list, where a map belongs."""
    broken = copy.deepcopy(req)
    for items in broken.required_resources.values():
        for item in items.items:
            fields = item.resource.fields
            if fields["kind"].string_value == "Secret" and "data" in fields:
                values = [v.string_value for v in fields["data"].struct_value.fields.values()]
                item.resource.update({"data": sorted(values)})
    return broken


def example_world(example: catalog.Example) -> tuple[list[Obj], dict[str, Obj]]:
    """An example's required resources (as stored) and observed resources (by composition name)."""
    world = [as_stored(d) if d.get("kind") == "Secret" else d for d in example.required]
    return world, example.observed


@pytest.fixture(params=[(), ("--debug",)], ids=["info", "debug"], scope="module")
def flags(request: pytest.FixtureRequest) -> tuple[str, ...]:
    flags: tuple[str, ...] = request.param
    return flags


@dataclass
class Said:
    """Everything one function process was sent and said."""

    name: str
    sent: list[bytes] = field(default_factory=list)
    responses: list[bytes] = field(default_factory=list)
    log: str = ""


# The functions that read Secrets (caller keys, TLS, credentials): their
# requests must carry values, or the search below proves nothing.
READ_SECRETS = {"compose-inference-gateway", "compose-model-endpoint", "compose-model-service"}


@pytest.fixture(params=FUNCTIONS, scope="module")
def said(
    request: pytest.FixtureRequest,
    flags: tuple[str, ...],
    traffic: Traffic,
    values: set[str],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Said]:
    """Everything one function process said: its responses, and its log."""
    out = Said(request.param)
    logs = tmp_path_factory.mktemp("leak-logs")
    with serving(out.name, "--insecure", *flags, log_dir=logs) as server:
        with insecure(server.address) as channel:

            def answer(req: fnv1.RunFunctionRequest) -> fnv1.RunFunctionResponse:
                out.sent.append(req.SerializeToString())
                out.responses.append(raw_call(channel, out.sent[-1]))
                rsp: fnv1.RunFunctionResponse = fnv1.RunFunctionResponse.FromString(
                    out.responses[-1]
                )
                return rsp

            for req in traffic.requests[out.name]:
                answer(req)
            for example in traffic.examples:
                if SCRIPTS[example.xr["kind"]] == out.name:
                    world, observed = example_world(example)
                    harness.reconcile(
                        example.xr["kind"], example.xr, world, observed, answer=answer
                    )
            # A malformed request quoting a value: refused without repeating it.
            with pytest.raises(Exception, match="not a RunFunctionRequest"):
                raw_call(channel, b"\xff" + sorted(values)[0].encode())
        assert server.stop() == 0
        out.log = server.logged()
        yield out


def test_the_functions_were_exercised(said: Said, values: set[str]) -> None:
    assert len(said.responses) >= 10, f"{said.name} answered too few requests to prove anything"
    if said.name in READ_SECRETS:
        assert secretsearch.leaks(values, said.sent), f"{said.name} was sent no Secret value"


def test_no_secret_value_in_any_response(said: Said, values: set[str]) -> None:
    assert secretsearch.leaks(values, said.responses) == []


def test_no_secret_value_in_any_log_line(
    said: Said, values: set[str], flags: tuple[str, ...]
) -> None:
    if flags:
        assert "RunFunction" in said.log, "--debug logs every call"
    assert secretsearch.leaks(values, [said.log]) == []


def test_at_debug_level_each_call_and_answer_says_its_size(
    said: Said, flags: tuple[str, ...]
) -> None:
    """make bench-fleet reads the largest request and response from these lines."""
    found = [CALL_LINE.search(ANSI.sub("", line)) for line in said.log.splitlines()]
    sizes = [(bool(m["answered"]), int(m["size"])) for m in found if m is not None]
    if not flags:
        assert sizes == [], "at info level a function writes no line per call"
        return
    assert [size for answered, size in sizes if not answered] == [len(r) for r in said.sent]
    assert [size for answered, size in sizes if answered] == [len(r) for r in said.responses]
