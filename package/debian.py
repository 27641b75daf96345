"""The image's base: Debian bookworm's own Python 3.11, assembled without a container engine.

Packages are resolved and downloaded by ``apt-get`` from a private apt state
under the build cache (so the host's sources and installed packages play no
part, and any host with apt can build an image for either architecture), their
signatures checked by apt against the Debian archive keyring and their sha256
checked again here. Each package's files are unpacked with ``dpkg-deb``;
maintainer scripts never run: nothing in the set needs one beyond byte-compiling
Python, which the build does itself.

The package set is explicit. Every dependency of an included package is either
included or deliberately left out below with the reason, and the build fails
on any other: a new dependency appearing in a Debian update is a decision, not
an accident. Leaving a library out also removes the extension modules that
link it, and ``check_links`` proves that every ELF file left finds every
library it needs inside the image.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import tarfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from package import elf, oci

SUITE = "bookworm"
PYTHON = "3.11"
KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")
SOURCES = (
    ("http://deb.debian.org/debian", (SUITE, f"{SUITE}-updates")),
    ("http://deb.debian.org/debian-security", (f"{SUITE}-security",)),
)

# Debian architecture -> GNU multiarch triplet (library directory).
TRIPLETS = {"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu"}

# What the image holds, and why.
PACKAGES: dict[str, str] = {
    "python3.11-minimal": "the interpreter",
    "libpython3.11-minimal": "the core standard library",
    "libpython3.11-stdlib": "the rest of the standard library",
    "libc6": "the C library and dynamic loader",
    "libgcc-s1": "unwinding, needed by libc6, grpcio and pydantic-core",
    "gcc-12-base": "required by libgcc-s1 and libstdc++6 (copyright only)",
    "libstdc++6": "grpcio's C++ core",
    "libssl3": "ssl and hashlib",
    "zlib1g": "zlib, used by the interpreter",
    "libexpat1": "xml.parsers.expat, used by the interpreter",
    "libffi8": "ctypes",
    "libbz2-1.0": "bz2",
    "liblzma5": "lzma",
    "libcrypt1": "crypt",
    "libuuid1": "uuid",
    "media-types": "/etc/mime.types for mimetypes",
    "base-files": "/etc/os-release and the licence texts copyright files point to",
}

# Dependencies deliberately not installed: the terminal, database and NIS
# libraries serve interactive use and storage formats a function never touches.
LEFT_OUT: dict[str, str] = {
    "libreadline8": "line editing for the interactive prompt (readline)",
    "readline-common": "data for libreadline8",
    "libncursesw6": "terminal UI (curses)",
    "libtinfo6": "terminal capabilities (curses, readline)",
    "libsqlite3-0": "sqlite3",
    "libdb5.3": "Berkeley DB (dbm.ndbm)",
    "libnsl2": "NIS (nis)",
    "libtirpc3": "Sun RPC for NIS",
    "mime-support": "an alternative to media-types, which is included",
    "awk": "base-files' maintainer script, which never runs",
}

# Standard-library extension modules removed with the libraries above, plus
# CPython's own test modules (Debian ships them in libpython3.11-stdlib).
REMOVED_MODULES = (
    "readline",
    "_curses",
    "_curses_panel",
    "_sqlite3",
    "_dbm",
    "nis",
    "_ctypes_test",
    "_testbuffer",
    "_testcapi",
    "_testclinic",
    "_testimportmultiple",
    "_testinternalcapi",
    "_testmultiphase",
    "_xxsubinterpreters",
    "_xxtestfuzz",
    "xxlimited",
    "xxlimited_35",
)

# Paths not kept (after the usr-merge below). Copyright files stay: the
# licences of what the image distributes travel with it.
DROPPED = re.compile(
    r"^usr/share/(man|info|locale|lintian|bug|gdb|binfmts|menu|i18n)(/|$)"
    r"|^usr/share/doc/[^/]+/(?!copyright$)"
    r"|^usr/lib/[^/]+-linux-gnu/gconv(/|$)"  # iconv modules: Python has its own codecs
)

# Debian bookworm systems are usr-merged: these top-level directories are
# symlinks into /usr, so files packaged under them are moved there.
MERGED = ("bin", "sbin", "lib", "lib64")

NONROOT = 65532  # the conventional distroless "nonroot" uid/gid


class DebianError(RuntimeError):
    """The Debian part of the image cannot be built as specified."""


@dataclass(frozen=True)
class Deb:
    name: str
    version: str
    architecture: str
    sha256: str
    depends: tuple[tuple[str, ...], ...]  # clauses of alternatives

    @property
    def filename(self) -> str:
        return f"{self.name}_{self.version.replace(':', '%3a')}_{self.architecture}.deb"


class Apt:
    """apt-get and apt-cache over a private state directory."""

    def __init__(self, root: Path, arch: str) -> None:
        if arch not in TRIPLETS:
            raise DebianError(f"unsupported architecture {arch!r}; one of {sorted(TRIPLETS)}")
        if shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
            raise DebianError("apt-get and dpkg-deb are needed (Debian or Ubuntu host)")
        if not KEYRING.is_file():
            raise DebianError(f"{KEYRING} missing (Debian: apt-get install debian-archive-keyring)")
        self.root = root / arch
        self.arch = arch
        for sub in ("lists/partial", "archives/partial", "etc/preferences.d"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        lines = [
            f"deb [signed-by={KEYRING}] {uri} {suite} main"
            for uri, suites in SOURCES
            for suite in suites
        ]
        (self.root / "etc/sources.list").write_text("\n".join(lines) + "\n")
        (self.root / "status").touch()
        # The host's apt configuration must not leak in: an own main file, no parts.
        config: dict[str, object] = {
            "Dir::State": self.root,
            "Dir::State::Lists": self.root / "lists",
            "Dir::State::status": self.root / "status",
            "Dir::Cache": self.root,
            "Dir::Cache::Archives": self.root / "archives",
            "Dir::Etc::SourceList": self.root / "etc/sources.list",
            "Dir::Etc::SourceParts": self.root / "etc/sources.list.d",
            "Dir::Etc::Preferences": self.root / "etc/preferences",
            "Dir::Etc::PreferencesParts": self.root / "etc/preferences.d",
            "Dir::Etc::Parts": self.root / "etc/apt.conf.d",
            "APT::Architecture": arch,
            "APT::Architectures": arch,
            "APT::Sandbox::User": "root" if os.geteuid() == 0 else None,
            "Debug::NoLocking": "1",
            "Acquire::GzipIndexes": "true",  # keep the package lists compressed in the cache
            "Acquire::Languages": "none",
            "Dir::Cache::pkgcache": "",  # no 70 MB binary caches: a build runs apt a few times
            "Dir::Cache::srcpkgcache": "",
        }
        text = "".join(f'{key} "{value}";\n' for key, value in config.items() if value is not None)
        (self.root / "apt.conf").write_text(text)
        self.env = {**os.environ, "APT_CONFIG": str(self.root / "apt.conf"), "LC_ALL": "C"}

    def _run(self, *args: str, cwd: Path | None = None) -> str:
        proc = subprocess.run(
            args, env=self.env, cwd=cwd, capture_output=True, text=True, check=False
        )
        if proc.returncode != 0:
            raise DebianError(f"{' '.join(args)} failed:\n{proc.stdout}{proc.stderr}")
        return proc.stdout

    def update(self) -> None:
        self._run("apt-get", "update", "-q")

    def show(self, names: Iterable[str]) -> dict[str, Deb]:
        out = self._run("apt-cache", "show", "--no-all-versions", *names)
        debs: dict[str, Deb] = {}
        for paragraph in out.strip().split("\n\n"):
            fields = _control_fields(paragraph)
            depends = ", ".join(f for f in (fields.get("Pre-Depends"), fields.get("Depends")) if f)
            debs[fields["Package"]] = Deb(
                name=fields["Package"],
                version=fields["Version"],
                architecture=fields["Architecture"],
                sha256=fields["SHA256"],
                depends=_parse_depends(depends),
            )
        return debs

    def download(self, debs: Iterable[Deb], into: Path) -> list[Path]:
        into.mkdir(parents=True, exist_ok=True)
        wanted = list(debs)
        missing = [d for d in wanted if not _sha256_ok(into / d.filename, d.sha256)]
        if missing:
            self._run(
                "apt-get", "download", "-q", *(f"{d.name}={d.version}" for d in missing), cwd=into
            )
        for deb in wanted:
            if not _sha256_ok(into / deb.filename, deb.sha256):
                raise DebianError(f"{deb.filename}: missing or sha256 differs from the archive's")
        return [into / d.filename for d in wanted]


def _control_fields(paragraph: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    key = ""
    for line in paragraph.splitlines():
        if line.startswith((" ", "\t")) and key:
            fields[key] += "\n" + line
        elif ":" in line:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return fields


def _parse_depends(text: str) -> tuple[tuple[str, ...], ...]:
    clauses = []
    for clause in filter(None, (c.strip() for c in text.split(","))):
        names = tuple(re.split(r"[\s(:]", alt.strip(), maxsplit=1)[0] for alt in clause.split("|"))
        clauses.append(names)
    return tuple(clauses)


def _sha256_ok(path: Path, expected: str) -> bool:
    return path.is_file() and oci.file_sha256(path) == expected


def check_closure(debs: dict[str, Deb]) -> None:
    """Every dependency is included or deliberately left out; fail on anything else."""
    problems = []
    for deb in debs.values():
        for clause in deb.depends:
            if not any(name in debs or name in LEFT_OUT for name in clause):
                problems.append(f"{deb.name} depends on {' | '.join(clause)}")
    if problems:
        raise DebianError(
            "dependencies neither in PACKAGES nor LEFT_OUT (decide and list them in "
            "package/debian.py):\n  " + "\n  ".join(problems)
        )


def image_path(member: str) -> str | None:
    """Where a packaged path lands in the usr-merged image; None when it is dropped."""
    parts = PurePosixPath(member.lstrip("./") or ".").parts
    if not parts or parts == (".",):
        return None
    if parts[0] in MERGED:
        parts = ("usr", *parts)
    path = "/".join(parts)
    return None if DROPPED.search(path) else path


def unpack(deb: Path, root: Path) -> None:
    """Unpack a .deb's files into root (usr-merged, trimmed); no maintainer scripts."""
    proc = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", str(deb)], stdout=subprocess.PIPE)
    assert proc.stdout is not None
    with tarfile.open(fileobj=proc.stdout, mode="r|") as archive:
        for member in archive:
            path = image_path(member.name)
            if path is None:
                continue
            target = root / path
            if member.isdir():
                target.mkdir(parents=True, exist_ok=True)
                target.chmod(member.mode & 0o7777)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.is_symlink() or target.exists():
                target.unlink()
            if member.issym():
                target.symlink_to(member.linkname)
            elif member.islnk():
                linked = image_path(member.linkname)
                if linked is None:
                    raise DebianError(f"{deb.name}: {member.name} links to a dropped path")
                shutil.copy2(root / linked, target)
            elif member.isfile():
                source = archive.extractfile(member)
                assert source is not None
                with target.open("wb") as out:
                    shutil.copyfileobj(source, out)
                target.chmod(member.mode & 0o7777)
            else:
                raise DebianError(f"{deb.name}: unexpected member type for {member.name}")
    if proc.wait() != 0:
        raise DebianError(f"dpkg-deb --fsys-tarfile {deb} failed")


def control(deb: Path) -> str:
    """The package's control paragraph, as dpkg's status database keeps it."""
    out = subprocess.run(
        ["dpkg-deb", "--field", str(deb)], capture_output=True, text=True, check=True
    ).stdout
    return out.rstrip("\n") + "\nStatus: install ok installed\n"


def finish(root: Path, debs: list[Path]) -> None:
    """The usr-merge links, users, writable places, scanner metadata; remove left-out modules."""
    for name in MERGED:
        (root / "usr" / name).mkdir(parents=True, exist_ok=True)
        link = root / name
        if link.is_dir() and not link.is_symlink():
            shutil.rmtree(link)
        if not link.is_symlink():
            link.symlink_to(f"usr/{name}")
    dynload = root / f"usr/lib/python{PYTHON}/lib-dynload"
    for module in REMOVED_MODULES:
        for path in dynload.glob(f"{module}.cpython-*.so"):
            path.unlink()
    python3 = root / "usr/bin/python3"
    if not python3.is_symlink():
        python3.symlink_to(f"python{PYTHON}")
    etc = root / "etc"
    (etc / "passwd").write_text(
        "root:x:0:0:root:/root:/usr/sbin/nologin\n"
        f"nonroot:x:{NONROOT}:{NONROOT}:nonroot:/home/nonroot:/usr/sbin/nologin\n"
    )
    (etc / "group").write_text(f"root:x:0:\nnonroot:x:{NONROOT}:\n")
    # The home is root's and read-only, like everything but /tmp: a function
    # writes nothing, and Docker's COPY --from would reset its owner anyway.
    for directory, mode in (("tmp", 0o1777), ("root", 0o700), ("home/nonroot", 0o755)):
        (root / directory).mkdir(parents=True, exist_ok=True)
        (root / directory).chmod(mode)
    # Vulnerability scanners read one control file per package here (the
    # distroless convention), as no dpkg database is installed.
    status = root / "var/lib/dpkg/status.d"
    status.mkdir(parents=True, exist_ok=True)
    for deb in debs:
        name = deb.name.split("_", 1)[0]
        (status / name).write_text(control(deb))


def library_dirs(arch: str) -> tuple[str, ...]:
    return (f"usr/lib/{TRIPLETS[arch]}", "usr/lib")


def sonames(root: Path, arch: str) -> set[str]:
    """Libraries the dynamic loader finds in the image's standard directories."""
    found: set[str] = set()
    for directory in library_dirs(arch):
        base = root / directory
        if base.is_dir():
            found.update(p.name for p in base.iterdir() if ".so" in p.name)
    return found


def check_links(root: Path, provided: set[str]) -> None:
    """Every ELF file under root finds every library it needs (in provided or beside it)."""
    problems = []
    for path in sorted(root.rglob("*")):
        if path.is_symlink() or not path.is_file() or not path.stat().st_mode & stat.S_IRUSR:
            continue
        if not (path.suffix == ".so" or ".so." in path.name or os.access(path, os.X_OK)):
            continue
        if not elf.is_elf(path):
            continue
        info = elf.linking(path)
        if info is None:
            continue
        # auditwheel's bundled libraries sit in <dist>.libs, reached by RPATH $ORIGIN.
        beside = {p.name for p in path.parent.iterdir()} | {
            p.name for libs in path.parents[1].glob("*.libs") for p in libs.iterdir()
        }
        missing = [n for n in info.needed if n not in provided and n not in beside]
        if missing:
            problems.append(f"/{path.relative_to(root)} needs {', '.join(missing)}")
    if problems:
        raise DebianError("libraries missing from the image:\n  " + "\n  ".join(problems))
