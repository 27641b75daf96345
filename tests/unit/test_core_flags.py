"""The functions' flags read exactly as the SDK's click options read them.

The oracle is the SDK itself: ``crossplane.function.cli.standard_options`` on a
click command, given the same command line and environment.
"""

import subprocess
import sys
from typing import Any

import click
import pytest
from crossplane.function import cli as sdkcli

from fleetgate.core import flags
from fleetgate.core.runner import command


def sdk_reads(argv: list[str], env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Any:
    """What the SDK's options make of ``argv`` and ``env``: the values, or the exit code."""
    for flag in flags.FLAGS:
        for variable in flag.envvars:
            monkeypatch.delenv(variable, raising=False)
    for variable, value in env.items():
        monkeypatch.setenv(variable, value)
    seen: dict[str, Any] = {}

    @click.command()
    @sdkcli.standard_options
    def cli(**kwargs: Any) -> None:
        seen.update(kwargs)

    try:
        cli.main(argv, standalone_mode=False)
    except click.UsageError as err:
        return ("exit", err.exit_code)
    return seen


def ours(argv: list[str], env: dict[str, str]) -> Any:
    try:
        return vars(flags.parse(flags.parser("f", ""), argv, env))
    except SystemExit as err:
        return ("exit", err.code)


CASES = [
    pytest.param([], {}, id="defaults"),
    pytest.param(["--insecure", "--address=127.0.0.1:1234", "-d"], {}, id="switches"),
    pytest.param(["--debug", "--address", "[::1]:9443"], {}, id="long-and-separate-value"),
    pytest.param(["--tls-certs-dir", "/tls"], {}, id="tls-alias"),
    pytest.param(["--tls-server-certs-dir=/tls"], {}, id="tls-canonical"),
    pytest.param([], {"TLS_SERVER_CERTS_DIR": "/tls/server"}, id="tls-from-env"),
    pytest.param(["--tls-certs-dir=/a"], {"TLS_SERVER_CERTS_DIR": "/b"}, id="flag-beats-env"),
    pytest.param(["--max-grpc-message-size", "16"], {}, id="recv-alias"),
    pytest.param(["--max-recv-message-size=8", "--max-send-message-size=32"], {}, id="sizes"),
    pytest.param([], {"MAX_GRPC_MESSAGE_SIZE": "12"}, id="recv-second-variable"),
    pytest.param(
        [], {"MAX_RECV_MESSAGE_SIZE": "", "MAX_GRPC_MESSAGE_SIZE": "12"}, id="empty-is-unset"
    ),
    pytest.param(
        [], {"MAX_RECV_MESSAGE_SIZE": "6", "MAX_GRPC_MESSAGE_SIZE": "12"}, id="first-variable"
    ),
    pytest.param([], {"MAX_SEND_MESSAGE_SIZE": " 9 "}, id="int-with-blanks"),
    pytest.param([], {"INSECURE": "true", "DEBUG": "1"}, id="env-switches-on"),
    pytest.param([], {"INSECURE": " Yes ", "DEBUG": "on"}, id="env-switches-case"),
    pytest.param([], {"INSECURE": "false", "DEBUG": "0"}, id="env-switches-off"),
    pytest.param([], {"ADDRESS": "127.0.0.1:9"}, id="address-from-env"),
    pytest.param([], {"INSECURE": "maybe"}, id="bad-boolean"),
    pytest.param([], {"MAX_RECV_MESSAGE_SIZE": "lots"}, id="bad-integer"),
    pytest.param(["--max-recv-message-size=lots"], {}, id="bad-integer-flag"),
    pytest.param(["--insec"], {}, id="no-abbreviations"),
    pytest.param(["--verbose"], {}, id="unknown-flag"),
]


@pytest.mark.parametrize(("argv", "env"), CASES)
def test_flags_read_as_the_sdk_reads_them(
    argv: list[str], env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert ours(argv, env) == sdk_reads(argv, env, monkeypatch)


def test_every_sdk_option_is_a_flag() -> None:
    @click.command()
    @sdkcli.standard_options
    def cli(**_: Any) -> None: ...

    options = [p for p in cli.params if isinstance(p, click.Option)]
    sdk = {
        o.name: (tuple(o.opts), tuple([o.envvar] if isinstance(o.envvar, str) else o.envvar or ()))
        for o in options
    }
    assert sdk == {f.dest: (f.names, f.envvars) for f in flags.FLAGS}


def test_a_bad_variable_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        flags.parse(flags.parser("compose-x", ""), [], {"INSECURE": "maybe"})
    assert exited.value.code == 2
    assert "--insecure: $INSECURE is 'maybe', not a boolean" in capsys.readouterr().err


def test_the_console_script_imports_no_click() -> None:
    """The point of reading flags here: a function's process never imports click."""
    code = "import sys; import fleetgate.model_deployment.main; sys.exit('click' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_help_lists_the_variables(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        command("compose-x", lambda rec: None)(["--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert "Serve the compose-x Crossplane composition function." in out
    assert "$TLS_SERVER_CERTS_DIR" in out
    assert "$MAX_RECV_MESSAGE_SIZE or $MAX_GRPC_MESSAGE_SIZE" in out


def test_booleans_are_clicks() -> None:
    """Every spelling click reads as a boolean (its empty string means unset, here too)."""
    assert {k: v for k, v in click.types.BoolParamType.bool_states.items() if k} == flags.BOOLEANS
