"""Selection rules: CEL expressions over the deployment, evaluated by Google's CEL runtime.

``cel-expr-python`` binds cel-cpp, the implementation Google maintains next to
cel-go (which Kubernetes and the systems these rules come from use): the
semantics a platform team reads in the CEL spec are the ones they get,
``has()`` on a missing parent, heterogeneous number comparison and
``matches()`` included. It imports in about 2 ms; building the environment
takes about 20 ms, so it is built on first use (a deployment whose engine and
provider are both given never pays for it) and kept for the process.

A rule sees one variable, ``spec``: the deployment's spec as the API server
stores it (defaults applied, unset fields absent), with two changes that keep
rules short and safe: ``spec.engine.type`` is the engine in use (given or just
selected) and ``spec.resources.gpu.count`` is always present (0 on CPU).
``spec.provider.overrides`` is left out: free-form user data is nothing to
choose a provider by.

A rule that does not compile, fails to evaluate (e.g. a field that is not
there without ``has()``), or gives something other than a bool does not
match; its message says why, for the composer to report.
"""

import functools
import threading
from collections.abc import Mapping
from typing import Any

from fleetgate.core.kinds.deployment import ModelDeploymentSpec
from fleetgate.core.models import EngineType
from fleetgate.core.reconcile import bounded

ERROR_MAX = 300
_lock = threading.Lock()


@functools.cache
def _environment() -> tuple[Any, Any]:
    # Imported here: the runtime is a native extension only selection needs.
    from cel_expr_python import cel  # type: ignore[import-untyped]  # noqa: PLC0415

    return cel, cel.NewEnv(variables={"spec": cel.Type.DYN})


@functools.lru_cache(maxsize=512)
def _compiled(condition: str) -> tuple[Any, str | None]:
    _, env = _environment()
    try:
        return env.compile(condition), None
    except RuntimeError as err:
        return None, f"does not compile: {_short(str(err))}"


def _short(message: str) -> str:
    return bounded(" ".join(message.split()))[:ERROR_MAX]


def evaluate(condition: str, spec: Mapping[str, Any]) -> bool | str:
    """Whether ``condition`` holds for ``spec``, or why it could not be evaluated."""
    with _lock:  # one compile per condition, whichever thread asks first
        expression, problem = _compiled(condition)
    if problem is not None:
        return problem
    cel, _ = _environment()
    try:
        value = expression.eval(data={"spec": dict(spec)})
    except (RuntimeError, TypeError, ValueError) as err:
        return f"failed to evaluate: {_short(str(err))}"
    kind = value.type()
    if kind == cel.Type.ERROR:
        return f"failed to evaluate: {_short(str(value.plain_value()))}"
    if kind != cel.Type.BOOL:
        return f"gives {str(kind.name()).lower()}, not a bool"
    return bool(value.plain_value())


def spec_view(spec: ModelDeploymentSpec, engine: EngineType) -> dict[str, Any]:
    """What a rule sees as ``spec`` (module docstring)."""
    view = spec.model_dump(by_alias=True, exclude_none=True)
    view.get("provider", {}).pop("overrides", None)
    view.setdefault("engine", {})["type"] = engine
    gpu = view.setdefault("resources", {}).setdefault("gpu", {})
    gpu.setdefault("count", 0)
    return view
