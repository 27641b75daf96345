"""The engine as it runs: served model name, image, command line and listening port.

Every engine answers to ``<namespace>/<name>``: the fleet gateways rewrite a
caller's model to that name, so an engine started under any other name
answers 404 to every routed request. Fleetgate injects the name as the first
environment variable of the engine container (so args and later env entries
can use ``$(FLEETGATE_SERVED_MODEL_NAME)``) and warns when nothing uses it.
"""

from collections.abc import Sequence
from dataclasses import dataclass

from fleetgate.core.constants import SERVED_MODEL_ENV
from fleetgate.core.errors import InputError
from fleetgate.core.models import EngineSpec, EngineType, EnvVar
from fleetgate.model_deployment.providers.base import EngineRun

SERVED_MODEL_REF = f"$({SERVED_MODEL_ENV})"
HEALTH_PATH = "/health"  # all four engines answer 200 there once the model is loaded


@dataclass(frozen=True)
class EngineProfile:
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


def _flag(args: Sequence[str], flag: str) -> tuple[int, str] | None:
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
    flag = _flag(args, "--port")
    if flag is None:
        return default
    index, value = flag
    if not value.isdigit() or not 1 <= int(value) <= 65535:
        raise InputError(f"spec.engine.args[{index}]: --port must be a number from 1 to 65535")
    return int(value)


def resolve(spec: EngineSpec, engine: EngineType, served: str) -> EngineRun:
    """The engine to run from the user's spec and the engine's profile."""
    profile = PROFILES[engine]
    args = tuple(spec.args)
    if profile.binds_loopback and _flag(args, "--host") is None:
        # Bound to loopback the engine is unreachable from its Service or pool.
        args += ("--host", "0.0.0.0")
    return EngineRun(
        type=engine,
        image=spec.image or profile.image,
        command=profile.command,
        args=args,
        env=inject_served_name(served, spec.env),
        port=listen_port(spec.args, profile.port),
        health_path=HEALTH_PATH,
    )
