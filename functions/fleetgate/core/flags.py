"""The SDK's standard flags, read without importing click.

Every Fleetgate function takes exactly the flags of the SDK's
``crossplane.function.cli.standard_options`` (crossplane-function-sdk-python
0.15.1, crossplane/function/cli.py:56-108): the same names and aliases, the
same environment variables, the same defaults, an explicit flag winning over
its variable and a variable over the default. They are read here with
``argparse`` because importing click takes ~7 ms of a function's ~130 ms cold
start, and the functions use nothing else of it (bench/README.md, cold start).

The variables are not a nicety: Crossplane runs a function's pod with no
arguments and hands it its server certificates as ``TLS_SERVER_CERTS_DIR=/tls/server``
(Crossplane v2.2.0 internal/controller/pkg/runtime/runtime.go:59-63, mounted by
runtime_override_options.go:204), so that variable is how every packaged
function finds them.

``tests/unit/test_core_flags.py`` parses the same command lines and
environments with the SDK's own click options and requires the same values,
so an SDK upgrade that adds or changes a flag fails there first.
"""

import argparse
from collections.abc import Mapping, Sequence
from typing import NamedTuple

# click's reading of a boolean variable (click 8 BoolParamType.bool_states):
# case and surrounding blanks ignored; an empty variable counts as unset.
BOOLEANS = {
    **dict.fromkeys(("1", "yes", "true", "on", "t", "y"), True),
    **dict.fromkeys(("0", "no", "false", "off", "f", "n"), False),
}


class Flag(NamedTuple):
    names: tuple[str, ...]  # the first is the canonical one
    dest: str
    envvars: tuple[str, ...]  # the first that is set and not empty is read
    kind: type  # bool: a switch that takes no value on the command line
    default: bool | int | str | None
    help: str


FLAGS = (
    Flag(("--debug", "-d"), "debug", ("DEBUG",), bool, False, "Emit debug logs."),
    Flag(
        ("--address",),
        "address",
        ("ADDRESS",),
        str,
        "0.0.0.0:9443",
        "Address at which to listen for gRPC connections.",
    ),
    Flag(
        ("--tls-server-certs-dir", "--tls-certs-dir"),
        "tls_certs_dir",
        ("TLS_SERVER_CERTS_DIR",),
        str,
        None,
        "Serve using mTLS certificates.",
    ),
    Flag(
        ("--insecure",),
        "insecure",
        ("INSECURE",),
        bool,
        False,
        "Run without mTLS credentials. If you supply this flag --tls-server-certs-dir "
        "will be ignored.",
    ),
    Flag(
        ("--max-recv-message-size", "--max-grpc-message-size"),
        "max_recv_message_size",
        ("MAX_RECV_MESSAGE_SIZE", "MAX_GRPC_MESSAGE_SIZE"),
        int,
        4,
        "Maximum size of received gRPC messages in MB.",
    ),
    Flag(
        ("--max-send-message-size",),
        "max_send_message_size",
        ("MAX_SEND_MESSAGE_SIZE",),
        int,
        None,
        "Maximum size of sent gRPC messages in MB. Defaults to --max-recv-message-size.",
    ),
)


def parser(name: str, description: str) -> argparse.ArgumentParser:
    """The command line of one function: the standard flags, none abbreviated."""
    cli = argparse.ArgumentParser(prog=name, description=description, allow_abbrev=False)
    for flag in FLAGS:
        variables = " or ".join(f"${v}" for v in flag.envvars)
        shown = "" if flag.default in (None, False) else f"; default {flag.default}"
        text = f"{flag.help} [env {variables}{shown}]"
        if flag.kind is bool:
            cli.add_argument(
                *flag.names, dest=flag.dest, action="store_const", const=True, help=text
            )
        else:
            metavar = "INTEGER" if flag.kind is int else "TEXT"
            cli.add_argument(
                *flag.names, dest=flag.dest, type=flag.kind, metavar=metavar, help=text
            )
    return cli


def parse(
    cli: argparse.ArgumentParser, argv: Sequence[str] | None, environ: Mapping[str, str]
) -> argparse.Namespace:
    """Each flag's value: the command line's, else its variable's, else its default.

    A variable that does not read as the flag's type ends the process with a
    usage error naming the variable (exit code 2), as click does.
    """
    options = cli.parse_args(argv)
    for flag in FLAGS:
        if getattr(options, flag.dest) is None:
            value = _from_environment(cli, flag, environ)
            setattr(options, flag.dest, flag.default if value is None else value)
    return options


def _from_environment(
    cli: argparse.ArgumentParser, flag: Flag, environ: Mapping[str, str]
) -> bool | int | str | None:
    for variable in flag.envvars:
        raw = environ.get(variable)
        if not raw:
            continue
        if flag.kind is bool:
            value = BOOLEANS.get(raw.strip().lower())
            if value is None:
                cli.error(f"{flag.names[0]}: ${variable} is {raw!r}, not a boolean")
            return value
        if flag.kind is int:
            try:
                return int(raw)
            except ValueError:
                cli.error(f"{flag.names[0]}: ${variable} is {raw!r}, not an integer")
        return raw
    return None
