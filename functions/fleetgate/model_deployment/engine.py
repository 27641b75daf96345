"""The engine as it runs: served model name, image, command line and listening port.

Every engine answers to ``<namespace>/<name>``: the fleet gateways rewrite a
caller's model to that name, so an engine started under any other name
answers 404 to every routed request. Fleetgate injects the name as the first
environment variable of the engine container (so args and later env entries
can use ``$(FLEETGATE_SERVED_MODEL_NAME)``) and warns when nothing uses it.
"""

import math
from collections.abc import Sequence
from typing import NamedTuple

from fleetgate.core.constants import SERVED_MODEL_ENV
from fleetgate.core.errors import InputError
from fleetgate.core.kinds.deployment import EngineSpec, EnvVar
from fleetgate.core.models import EngineType
from fleetgate.model_deployment.providers.base import EngineRun

SERVED_MODEL_REF = f"$({SERVED_MODEL_ENV})"
HEALTH_PATH = "/health"  # all four engines answer 200 there once the model is loaded


class EngineProfile(NamedTuple):
    """Defaults of one engine: what to run when the user names only the engine."""

    image: str
    command: tuple[str, ...]  # empty: the image's entrypoint starts the server
    port: int
    binds_loopback: bool  # listens on 127.0.0.1 unless told --host


# Pinned images. vLLM's and llama.cpp's images start their server themselves;
# SGLang's and TensorRT-LLM's are toolkits whose server must be named.
PROFILES: dict[EngineType, EngineProfile] = {
    "vllm": EngineProfile("vllm/vllm-openai:v0.10.2", (), 8000, binds_loopback=False),
    "sglang": EngineProfile(
        "lmsysorg/sglang:v0.5.19-cu129",
        ("python3", "-m", "sglang.launch_server"),
        30000,
        binds_loopback=True,
    ),
    "trtllm": EngineProfile(
        "nvcr.io/nvidia/tensorrt-llm/release:1.0.0", ("trtllm-serve",), 8000, binds_loopback=True
    ),
    "llamacpp": EngineProfile(
        "ghcr.io/ggml-org/llama.cpp:server-b6000", (), 8080, binds_loopback=True
    ),
}


def served_model_name(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


def inject_served_name(served: str, env: Sequence[EnvVar]) -> tuple[tuple[str, str], ...]:
    """The served model name first, then the user's entries except one of the same name."""
    user = tuple((e.name, e.value) for e in env if e.name != SERVED_MODEL_ENV)
    return ((SERVED_MODEL_ENV, served), *user)


def served_name_warnings(spec: EngineSpec) -> list[str]:
    """What to tell the user about the served model name, before anything runs."""
    warnings = []
    if any(e.name == SERVED_MODEL_ENV for e in spec.env):
        warnings.append(
            f"spec.engine.env sets {SERVED_MODEL_ENV}: Fleetgate sets it to the served model "
            "name, so that entry is dropped"
        )
    used = any(SERVED_MODEL_REF in a for a in spec.args) or any(
        SERVED_MODEL_REF in e.value for e in spec.env if e.name != SERVED_MODEL_ENV
    )
    if not used:
        warnings.append(
            f"no spec.engine.args or env entry references {SERVED_MODEL_REF}: the engine will "
            "not answer to the served model name and every routed request gets a 404 "
            "(pass e.g. --served-model-name $(FLEETGATE_SERVED_MODEL_NAME))"
        )
    return warnings


def flag(args: Sequence[str], flag: str) -> tuple[int, str] | None:
    """The index and value of ``--flag value`` or ``--flag=value`` in ``args``, last one wins."""
    found = None
    for i, arg in enumerate(args):
        if arg == flag and i + 1 < len(args):
            found = (i + 1, args[i + 1])
        elif arg.startswith(flag + "="):
            found = (i, arg.split("=", 1)[1])
    return found


def listen_port(args: Sequence[str], default: int) -> int:
    """The port the engine listens on: ``--port`` from args, else the engine's default."""
    found = flag(args, "--port")
    if found is None:
        return default
    index, value = found
    if not value.isdigit() or not 1 <= int(value) <= 65535:
        raise InputError(f"spec.engine.args[{index}]: --port must be a number from 1 to 65535")
    return int(value)


def resolve(
    spec: EngineSpec, engine: EngineType, served: str, image: str | None = None
) -> EngineRun:
    """The engine to run from the user's spec and the engine's profile.

    ``image`` is the provider's default for the engine, when it has its own
    (a runtime that starts the engine its way); the user's image wins.
    """
    profile = PROFILES[engine]
    args = tuple(spec.args)
    if profile.binds_loopback and flag(args, "--host") is None:
        # Bound to loopback the engine is unreachable from its Service or pool.
        args += ("--host", "0.0.0.0")
    return EngineRun(
        type=engine,
        image=spec.image or image or profile.image,
        command=profile.command,
        args=args,
        env=inject_served_name(served, spec.env),
        port=listen_port(spec.args, profile.port),
        health_path=HEALTH_PATH,
    )


# --- providers that start the engine themselves ------------------------------------

# How each engine's server is told the model to load and the name to answer to.
# The first spelling is the one Fleetgate adds; any spelling the user wrote
# means the user said it already.
MODEL_FLAGS: dict[EngineType, tuple[str, ...]] = {
    "vllm": ("--model",),
    "sglang": ("--model-path",),
    "trtllm": ("--model-path",),
    "llamacpp": ("-hf", "--hf-repo", "-m", "--model"),
}
SERVED_NAME_FLAGS: dict[EngineType, tuple[str, ...]] = {
    "vllm": ("--served-model-name",),
    "sglang": ("--served-model-name",),
    "trtllm": ("--served-model-name",),
    "llamacpp": ("--alias", "-a"),
}


def given(args: Sequence[str], spellings: Sequence[str]) -> bool:
    return any(flag(args, s) is not None or s in args for s in spellings)


def launch_args(engine: EngineType, args: Sequence[str], model: str) -> tuple[str, ...]:
    """``args`` preceded by the model and served-name flags the user did not give."""
    added: list[str] = []
    if not given(args, MODEL_FLAGS[engine]):
        added += [MODEL_FLAGS[engine][0], model]
    if not given(args, SERVED_NAME_FLAGS[engine]):
        added += [SERVED_NAME_FLAGS[engine][0], SERVED_MODEL_REF]
    return (*added, *args)


Scalar = str | int | float | bool


def _scalar(raw: str, served: str) -> Scalar:
    """A flag's value as the engine's own config would type it."""
    if raw.lower() in ("true", "false"):
        return raw.lower() == "true"
    for kind in (int, float):
        try:
            number = kind(raw)
        except ValueError:
            continue
        if math.isfinite(number):  # "nan" and "inf" have no JSON spelling
            return number
    # A config file is not expanded like a command line: the name goes in as itself.
    return raw.replace(SERVED_MODEL_REF, served)


def _is_value(arg: str) -> bool:
    """Whether ``arg`` after a flag is its value (a negative number is, another flag is not)."""
    if not arg.startswith("-"):
        return True
    try:
        float(arg)
    except ValueError:
        return False
    return True


def flag_values(args: Sequence[str], served: str) -> tuple[dict[str, Scalar], tuple[str, ...]]:
    """``--key value``, ``--key=value`` and bare ``--flag`` as ``{key: value}``; positionals apart.

    For engines a provider configures through a file or keyword arguments
    (KAITO's vLLM preset, Ray Serve) rather than a command line. A later
    spelling of a key wins, as it would on a command line.
    """
    values: dict[str, Scalar] = {}
    positionals: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if not arg.startswith("--") or arg == "--":
            positionals.append(arg)
            i += 1
            continue
        key, sep, inline = arg[2:].partition("=")
        if sep:
            values[key] = _scalar(inline, served)
        elif i + 1 < len(args) and _is_value(args[i + 1]):
            values[key] = _scalar(args[i + 1], served)
            i += 1
        else:
            values[key] = True
        i += 1
    return dict(sorted(values.items())), tuple(positionals)
