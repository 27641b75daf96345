"""Property-based fuzzing of every function's RunFunction, in process.

Well-formed worlds (what the XRDs accept) are walked pass after pass; the
answers must hold, on every pass:

* nothing escapes and nothing fails inside the function (no fatal at all:
  the input is well-formed), every message is bounded;
* the same request gives byte-identical bytes, whatever order Crossplane
  lists required resources and observed resources in;
* the response stays under the default gRPC message limit;
* no Secret value of the world appears anywhere in the response;
* the first call of a later reconcile (nothing resolved yet) drops nothing;
* every composed object validates against the pinned CRDs (checked once per
  function, in a batch, after the examples ran: the CLI takes a second a call).

Malformed inputs (``test_malformed``) must give one fatal result naming the
field, never an internal error.
"""

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fleetgate.core.reconcile import MESSAGE_MAX
from fleetgate.core.runner import encode, run_composer
from oracles import secretsearch
from schemas import validate
from sim import catalog
from tests.hardening import harness
from tests.hardening.conftest import LOGGED
from tests.hardening.harness import INTERNAL_ERROR, KINDS, MESSAGE_LIMIT, Obj, Walk
from tests.hardening.mutations import mutate
from tests.hardening.strategies import Scenario, scenario
from tests.support.dynamo import dynamo_schema

# Bounded and deterministic: the same examples on every run and machine.
EXAMPLES = 30
MALFORMED_EXAMPLES = 60
FUZZ = settings(
    max_examples=EXAMPLES,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def check_call(walked: Walk, answered: harness.Call, values: set[str]) -> list[str]:
    """Every per-call property; returns the problems found."""
    problems = [f"Secret value logged: {v}" for v in secretsearch.leaks(values, LOGGED)]
    compose = harness.composer(walked.kind)
    if answered.fatal:
        problems.append(f"fatal on well-formed input: {answered.fatal}")
    problems += [f"unbounded message ({len(m)})" for m in answered.messages if len(m) > MESSAGE_MAX]
    data = answered.data
    if encode(run_composer(compose, answered.req)) != data:
        problems.append("the same request answered with different bytes")
    for seed in (1, 2):
        if encode(run_composer(compose, harness.shuffled(answered.req, seed))) != data:
            problems.append(f"the answer depends on the order of inputs (shuffle {seed})")
    if len(data) >= MESSAGE_LIMIT:
        problems.append(f"response of {len(data)} bytes")
    problems += [f"Secret value in the response: {v}" for v in secretsearch.leaks(values, [data])]
    return problems


def check_first_call_drops_nothing(walked: Walk) -> list[str]:
    """A later reconcile's first call (no requirement resolved) keeps all that was composed."""
    if not walked.observed:
        return []
    before = set(walked.last.desired)
    first = harness.call(
        harness.composer(walked.kind), harness.request(walked.xr, observed=walked.observed)
    )
    dropped = sorted(before - set(first.desired))
    return [f"first call of a reconcile drops {dropped}"] if dropped else []


def composed_objects(walked: Walk) -> list[Obj]:
    """What each pass composed, named the way Crossplane names composed resources."""
    out = []
    for answered in walked.answered:
        for name, obj in answered.desired.items():
            meta = obj.setdefault("metadata", {})
            if "name" not in meta:
                meta["generateName"] = f"{walked.xr['metadata']['name']}-"
            meta.setdefault("annotations", {})["crossplane.io/composition-resource-name"] = name
            out.append(obj)
    return out


def fingerprint(obj: Obj) -> str:
    return json.dumps(obj, sort_keys=True)


XRDS = sorted({t.xrd for t in catalog.registry().values()})


@pytest.mark.parametrize("kind", KINDS)
def test_well_formed(kind: str) -> None:
    """Every property over generated well-formed worlds; then their output against the CRDs."""
    to_validate: dict[str, Obj] = {}

    @FUZZ
    @given(case=scenario(kind))
    def check(case: Scenario) -> None:
        LOGGED.clear()
        walked = Walk.of(kind, case.xr, case.world)
        values = set(secretsearch.needles(case.world))
        problems: list[str] = []
        for _ in range(case.passes):
            answered = walked.step()
            problems += check_call(walked, answered, values)
            if problems:
                break
        problems += check_first_call_drops_nothing(walked)
        assert problems == [], problems
        for obj in [case.xr, *composed_objects(walked)]:
            to_validate.setdefault(fingerprint(obj), obj)

    check()
    # Inputs too: a well-formed input the XRD would refuse is a bug in the strategy.
    with tempfile.TemporaryDirectory() as scratch:
        errors = validate.validate(
            list(to_validate.values()), extra_schema_files=[*XRDS, dynamo_schema(Path(scratch))]
        )
    assert errors == [], "\n".join(errors[:20])


# --- malformed input ----------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_malformed(kind: str) -> None:
    """Wrong types, missing fields, bounds exceeded: a fatal naming the field, never a crash."""

    @settings(FUZZ, max_examples=MALFORMED_EXAMPLES)
    @given(case=scenario(kind, max_passes=2), data=st.data())
    def check(case: Scenario, data: st.DataObject) -> None:
        LOGGED.clear()
        walked = Walk.of(kind, case.xr, case.world)
        for _ in range(case.passes):
            walked.step()
        broken = data.draw(mutate(walked))
        answered = harness.reconcile(kind, broken.xr, broken.world, broken.observed)
        problems = [m for m in answered.fatal if m.startswith(INTERNAL_ERROR)]
        values = set(secretsearch.needles(broken.world))
        problems += [
            f"Secret value leaked: {v}" for v in secretsearch.leaks(values, [answered.data])
        ]
        problems += [f"Secret value logged: {v}" for v in secretsearch.leaks(values, LOGGED)]
        if broken.path is not None:
            if not answered.fatal:
                problems.append(f"no fatal result for {broken.description}")
            elif not any(broken.path in m for m in answered.fatal):
                problems.append(f"fatal does not name {broken.path}: {answered.fatal}")
        compose = harness.composer(kind)
        for seed in (0, 1):
            again = encode(run_composer(compose, harness.shuffled(answered.req, seed)))
            if again != answered.data:
                problems.append(f"the answer depends on the order of inputs (shuffle {seed})")
        problems += [
            f"unbounded message ({len(m)})" for m in answered.messages if len(m) > MESSAGE_MAX
        ]
        assert problems == [], f"{broken.description}: {problems}"

    check()
