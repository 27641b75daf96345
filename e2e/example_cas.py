"""Reissue the CA certificates the examples publish, long-lived, wherever they appear.

``python -m e2e.example_cas [FOLDER ...]`` finds every self-signed CA
certificate in the YAML files under the folders (default: every example) that
expires within ``--renew-within`` days, makes a new CA of the same subject
valid for ``--years`` (``sim.pki.ca``), and puts it in place of the old one in
every file, so a gateway's published ``clientCACertificate`` and the
ConfigMap the cluster composed from it stay the same certificate. The keys
are thrown away: an example publishes certificates, never keys, and a
certificate another one in the folders was issued by is refused, since its
chain would break. Only the certificate lines of a file change, comments and
layout kept; a file where a CA sits elsewhere than in a block scalar (so the
rewritten text would not parse to the renewed documents) is refused.

Certificates made by ``sim.pki`` live a day, which suits a test run; one kept
in a file expires under the tests (Envoy Gateway refuses an expired client
CA), hence this.
"""

import argparse
import datetime
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from cryptography import x509
from cryptography.x509.oid import NameOID

from sim import catalog, pki
from sim.catalog import EXAMPLE_WIDTH

PEM = re.compile(r"-----BEGIN CERTIFICATE-----\n.*?-----END CERTIFICATE-----", re.S)
# a PEM as a YAML block scalar writes it: every line at the same indentation
INDENTED_PEM = re.compile(
    r"^(?P<indent>[ ]*)-----BEGIN CERTIFICATE-----\n(?:(?P=indent)[A-Za-z0-9+/=]+\n)*"
    r"(?P=indent)-----END CERTIFICATE-----",
    re.M,
)
YEAR = datetime.timedelta(days=365)


def swapped(value: Any, swap: Callable[[str], str]) -> Any:
    """``value`` with every certificate PEM inside its strings replaced by ``swap(pem)``."""
    if isinstance(value, dict):
        return {k: swapped(v, swap) for k, v in value.items()}
    if isinstance(value, list):
        return [swapped(v, swap) for v in value]
    if isinstance(value, str):
        return PEM.sub(lambda m: swap(m.group(0)), value)
    return value


def pems(value: Any) -> list[str]:
    """Every certificate PEM inside ``value``'s strings, in order."""
    found: list[str] = []

    def keep(pem: str) -> str:
        found.append(pem)
        return pem

    swapped(value, keep)
    return found


def split(text: str) -> tuple[str, list[Any]]:
    """A file's leading comment lines, and its documents."""
    lines = text.splitlines(keepends=True)
    comments = 0
    while comments < len(lines) and lines[comments].startswith("#"):
        comments += 1
    head = "".join(lines[:comments])
    return head, list(yaml.safe_load_all(text[len(head) :]))


def rewritten(
    path: Path, head: str, docs: list[Any], new_docs: list[Any], renewed: dict[str, str]
) -> str:
    """A file's text holding ``new_docs`` instead of ``docs``, changed as little as can be.

    Each renewed PEM in a block scalar is replaced where it sits, which keeps
    every comment and the file's layout. A PEM written another way (a quoted
    scalar) leaves dumping the documents again, allowed only for a file
    PyYAML wrote, so nothing of it is lost.
    """
    text = path.read_text()
    edited = INDENTED_PEM.sub(lambda m: in_place(m, renewed), text)
    if list(yaml.safe_load_all(edited[len(head) :])) == new_docs:
        return edited
    if head + yaml.safe_dump_all(docs, sort_keys=False, width=EXAMPLE_WIDTH) == text:
        return head + yaml.safe_dump_all(new_docs, sort_keys=False, width=EXAMPLE_WIDTH)
    raise SystemExit(
        f"{path}: a CA outside a block scalar, not as PyYAML writes it; renew it by hand"
    )


def in_place(match: re.Match[str], renewed: dict[str, str]) -> str:
    """The block-scalar PEM ``match`` found, renewed if it is due, at its indentation."""
    indent = match.group("indent")
    pem = "\n".join(line.removeprefix(indent) for line in match.group(0).split("\n"))
    new = renewed.get(pem)
    return match.group(0) if new is None else "\n".join(indent + line for line in new.split("\n"))


def renew(
    files: list[Path], *, within: datetime.timedelta, valid_for: datetime.timedelta
) -> list[Path]:
    """Reissue the CAs in ``files`` that expire within ``within``; the files rewritten."""
    parsed = {path: split(path.read_text()) for path in files}
    certs = {
        pem: x509.load_pem_x509_certificate(pem.encode())
        for _, docs in parsed.values()
        for pem in pems(docs)
    }
    deadline = datetime.datetime.now(datetime.UTC) + within
    due = {
        pem: cert
        for pem, cert in certs.items()
        if cert.issuer == cert.subject and cert.not_valid_after_utc < deadline
    }
    renewed = {}
    for pem, cert in due.items():
        issued = [c for c in certs.values() if c.issuer == cert.subject != c.subject]
        if issued:
            raise SystemExit(f"{cert.subject.rfc4514_string()} issued {len(issued)} certificates")
        names = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
        new = pki.ca(str(names[0].value), valid_for=valid_for)
        if new.cert.subject != cert.subject:
            raise SystemExit(f"cannot reissue {cert.subject.rfc4514_string()}: not a bare CN")
        renewed[pem] = new.cert_pem.decode().removesuffix("\n")  # the text around it stays
    texts = {}  # every file is checked before any is written
    for path, (head, docs) in parsed.items():
        new_docs = swapped(docs, lambda pem: renewed.get(pem, pem))
        if new_docs != docs:
            texts[path] = rewritten(path, head, docs, new_docs, renewed)
    for path, text in texts.items():
        path.write_text(text)
    return list(texts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="*", type=Path, default=[catalog.EXAMPLES])
    parser.add_argument("--years", type=int, default=50, help="validity of a new CA")
    parser.add_argument(
        "--renew-within", type=int, default=365, metavar="DAYS", help="renew what expires sooner"
    )
    args = parser.parse_args(argv)
    files = sorted({p for folder in args.folders for p in folder.rglob("*.yaml")})
    written = renew(
        files,
        within=datetime.timedelta(days=args.renew_within),
        valid_for=args.years * YEAR,
    )
    for path in written:
        print(f"renewed CAs in {path}")
    print(f"{len(written)} files rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
