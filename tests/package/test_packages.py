"""The Crossplane packages `make packages` builds, checked as Crossplane would use them.

The session fixture runs the same build (cached under .cache/package by its
inputs: seconds when nothing changed; a cold build fetches Debian packages and
wheels). Each function is then started from its own .xpkg: the layers are
unpacked into a root filesystem, the image's entrypoint runs there under
chroot as the image's user, with the environment Crossplane's function runtime
gives it, and is called over gRPC with mutual TLS.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tarfile
import time
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

import celpy
import grpc
import pytest
import yaml
from celpy.adapter import json_to_cel
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from crossplane.function.proto.v1 import run_function_pb2_grpc as grpcv1

from e2e import render
from e2e.functions import wait_for_port
from fleetgate.inference_cluster import gaie_crds
from package import build, debian, oci, wheels
from schemas.validate import validate
from sim import catalog, pki

REPO = build.REPO
TLS_DIR = "/tls/server"  # where Crossplane mounts a function's server certificates
TIMEOUT_S = 15.0
START_TIMEOUT_S = 30.0


def _xr_kinds() -> dict[str, tuple[str, str | None]]:
    """Function → the first kind it serves and a namespace if that kind is namespaced."""
    found: dict[str, tuple[str, str | None]] = {}
    for kind, fn in catalog.registry().items():
        scope = yaml.safe_load(fn.xrd.read_text())["spec"].get("scope", "Namespaced")  # v2 default
        found.setdefault(fn.name, (kind, "team-a" if scope == "Namespaced" else None))
    return found


# A minimal composite of each function's kind: enough to get an answer.
XR_KINDS = _xr_kinds()


@pytest.fixture(scope="session")
def built() -> dict[str, Any]:
    """Every package, built (or taken from the cache) exactly as `make packages` does."""
    return build.build(log=lambda _: None)


def _member(tar: tarfile.TarFile, name: str) -> bytes:
    f = tar.extractfile(name)
    assert f is not None, f"{name} is not a file"
    return f.read()


def read_tarball(path: Path) -> tuple[dict[str, Any], list[str]]:
    """The image config and layer members of a `docker save` tarball, as an .xpkg is one."""
    with tarfile.open(path) as tar:
        (image,) = json.loads(_member(tar, "manifest.json"))
        return json.loads(_member(tar, image["Config"])), list(image["Layers"])


def package_documents(xpkg: Path) -> list[dict[str, Any]]:
    """The package.yaml Crossplane reads from a package: metadata first, then its objects."""
    _, layers = read_tarball(xpkg)
    with tarfile.open(xpkg) as outer:
        for name in layers:
            blob = outer.extractfile(name)
            assert blob is not None
            with tarfile.open(fileobj=blob, mode="r|*") as layer:
                for member in layer:
                    if member.name.lstrip("./") == "package.yaml":
                        data = layer.extractfile(member)
                        assert data is not None
                        return [d for d in yaml.safe_load_all(data.read()) if d]
    raise AssertionError(f"{xpkg.name} has no package.yaml")


def package_path(built: Mapping[str, Any], function: str | None = None) -> Path:
    facts = built["functions"][function] if function else built["configuration"]
    return REPO / str(facts["package"])


def configuration(built: Mapping[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    meta, *objects = package_documents(package_path(built))
    return meta, objects


# --- metadata ------------------------------------------------------------------


def test_package_metadata_and_contents_validate(built: dict[str, Any]) -> None:
    """Every crossplane.yaml, as written and as packaged, against Crossplane's own CRDs."""
    sources = sorted((REPO / "package").glob("*/**/crossplane.yaml"))
    docs = [yaml.safe_load(p.read_text()) for p in sources]
    packaged = [package_path(built, f) for f in build.FUNCTIONS] + [package_path(built)]
    for xpkg in packaged:
        docs += package_documents(xpkg)
    assert len(sources) == len(build.FUNCTIONS) + 1
    assert validate(docs, extra_schema_files=render.schema_files()) == []


@pytest.mark.parametrize("function", build.FUNCTIONS)
def test_function_package_metadata(built: dict[str, Any], function: str) -> None:
    meta, *objects = package_documents(package_path(built, function))
    assert (meta["apiVersion"], meta["kind"]) == ("meta.pkg.crossplane.io/v1", "Function")
    assert meta["metadata"]["name"] == function
    assert meta["spec"]["crossplane"]["version"] == ">=v2.2"
    assert meta["spec"]["capabilities"] == ["composition"]
    inputs = sorted((REPO / "package/functions" / function / "input").glob("*.yaml"))
    assert len(objects) == len(inputs), "the Composition input CRDs, nothing else"
    assert all(o["kind"] == "CustomResourceDefinition" for o in objects)


def test_configuration_depends_on_the_functions_and_pinned_providers(
    built: dict[str, Any],
) -> None:
    meta, _ = configuration(built)
    assert (meta["apiVersion"], meta["kind"]) == ("meta.pkg.crossplane.io/v1", "Configuration")
    assert meta["spec"]["crossplane"]["version"] == ">=v2.2"
    deps = {(d["kind"], d["package"]): d["version"] for d in meta["spec"]["dependsOn"]}
    version = build.project_version()
    expected = {("Function", f"{build.REGISTRY}/{f}"): version for f in build.FUNCTIONS}
    # The provider versions are the ones whose CRDs every composed object is
    # validated against (the pinned CRD set).
    for provider in ("provider-kubernetes", "provider-helm"):
        pinned = sorted(p.name for p in (REPO / ".cache/crds" / provider).iterdir())
        assert len(pinned) == 1, pinned
        expected[("Provider", f"xpkg.crossplane.io/crossplane-contrib/{provider}")] = pinned[0]
    assert deps == expected
    assert all(d["apiVersion"] == "pkg.crossplane.io/v1" for d in meta["spec"]["dependsOn"])


def test_configuration_holds_every_xrd_and_composition(built: dict[str, Any]) -> None:
    _, objects = configuration(built)
    packaged = sorted((o["kind"], o["metadata"]["name"]) for o in objects)
    sources = [*(REPO / "apis").glob("*/definition.yaml"), *(REPO / "compositions").glob("*.yaml")]
    docs = [d for p in sources for d in yaml.safe_load_all(p.read_text()) if d]
    assert packaged == sorted((d["kind"], d["metadata"]["name"]) for d in docs)


def test_compositions_name_the_functions_crossplane_installs(built: dict[str, Any]) -> None:
    """A step's functionRef must be the name Crossplane gives the dependency it installs."""
    meta, objects = configuration(built)
    installed = {
        build.package_object_name(d["package"])
        for d in meta["spec"]["dependsOn"]
        if d["kind"] == "Function"
    }
    refs = {
        step["functionRef"]["name"]
        for o in objects
        if o["kind"] == "Composition"
        for step in o["spec"]["pipeline"]
    }
    assert refs, "no pipeline steps packaged"
    assert refs <= installed, f"steps naming no installed Function: {refs - installed}"


@pytest.mark.parametrize(
    ("reference", "name"),
    [
        pytest.param(
            "xpkg.crossplane.io/fleetgate/compose-model-endpoint",
            "fleetgate-compose-model-endpoint",
            id="function",
        ),
        pytest.param(
            "xpkg.crossplane.io/crossplane-contrib/provider-kubernetes",
            "crossplane-contrib-provider-kubernetes",
            id="provider",
        ),
        # upper case and '_' are dropped
        pytest.param("ghcr.io/Acme.Corp/fn_x", "cme-orp-fnx", id="sanitised"),
        pytest.param("registry.example/" + "a" * 70, "a" * 63, id="bounded"),
    ],
)
def test_package_object_name(reference: str, name: str) -> None:
    assert build.package_object_name(reference) == name


# --- the runtime image ---------------------------------------------------------


def test_image_contract_is_one_everywhere() -> None:
    assert build.CONTRACT["python"] == debian.PYTHON == wheels.PYTHON
    assert build.CONTRACT["bin"] == f"/{wheels.BIN}"
    scripts = build.tree_files(REPO, ["pyproject.toml"])[0].read_text()
    for function in build.FUNCTIONS:
        assert f"{function} = " in scripts, f"{function} is no console script in pyproject.toml"


@pytest.mark.parametrize("function", build.FUNCTIONS)
def test_image_runs_the_console_script_as_crossplane_expects(
    built: dict[str, Any], function: str
) -> None:
    image, _ = read_tarball(package_path(built, function))
    config = image["config"]
    assert (image["os"], image["architecture"]) == ("linux", built["architecture"])
    assert config["Entrypoint"] == [f"/usr/local/bin/{function}"]
    assert config.get("Cmd") is None
    assert config["User"] == "65532:65532", "never root"
    assert config["ExposedPorts"] == {"9443/tcp": {}}
    assert (config["Env"], config["WorkingDir"]) == (list(build.ENV), "/")
    # Crossplane's runtime sets TLS_SERVER_CERTS_DIR; the image must not decide it.
    assert not any(e.startswith(("TLS_SERVER_CERTS_DIR=", "INSECURE=")) for e in config["Env"])


def test_image_holds_only_the_listed_debian_packages(built: dict[str, Any]) -> None:
    assert set(built["debian"]) == set(debian.PACKAGES)
    assert not set(debian.PACKAGES) & set(debian.LEFT_OUT)


def test_lock_follows_pyproject() -> None:
    """uv.lock is what `uv lock` makes of pyproject.toml (checked without the network)."""
    uv = Path(sys.executable).with_name("uv")
    assert uv.is_file(), f"{uv} missing: run `make`"
    proc = subprocess.run(
        [str(uv), "lock", "--check", "--offline", "--quiet"],
        cwd=REPO, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, f"run `make package-lock`:\n{proc.stderr}"


def test_image_and_tests_run_the_locked_versions() -> None:
    """The image runs the versions the tests ran: both are uv.lock's."""
    lock = wheels.read_lock()
    locked = wheels.development_versions(lock)
    for name, version in locked.items():
        assert metadata.version(name) == version, f"{name}: not the locked version; run `make`"
    for arch in wheels.WHEEL_ARCH:
        for entry in wheels.image_wheels(lock, arch):
            assert locked[entry["name"]] == entry["version"], f"{arch}: {entry['name']}"


def test_nix_wheels_are_derived_from_the_lock() -> None:
    text = wheels.NIX_WHEELS.read_text()
    assert json.loads(text) == wheels.nix_wheels(wheels.read_lock()), "run `make package-lock`"


# --- starting each function from its package -------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


# What a container runtime does before it starts the entrypoint, and chroot
# alone does not: /dev (grpcio seeds from /dev/urandom) and /proc, mounted in a
# mount namespace of the function's own so nothing leaks onto the host.
LAUNCH = """
set -e
root=$1 user=$2 chroot=$3 mount=$4
shift 4
"$mount" --rbind /dev "$root/dev"
"$mount" -t proc proc "$root/proc" 2>/dev/null || true
if [ -n "$user" ]; then exec "$chroot" --userspec="$user" "$root" "$@"; fi
exec "$chroot" "$root" "$@"
"""


def rootfs_command(root: Path, config: Mapping[str, Any], *, netns: bool = False) -> list[str]:
    """The image's entrypoint in root as the image's user; one process from start to exit.

    As root: mount (and optionally network) namespaces, chroot --userspec. Without
    root, a user namespace maps us to root inside, where the uid switch is moot.
    """
    tools = {name: shutil.which(name) for name in ("unshare", "chroot", "mount", "sh")}
    missing = [name for name, path in tools.items() if path is None]
    assert not missing, f"needed to start a function from its image: {missing}"
    unshare = [str(tools["unshare"]), "--mount", *(["--net"] if netns else [])]
    user = str(config["User"])
    if os.geteuid() != 0:
        unshare[1:1] = ["--user", "--map-root-user"]
        user = ""
    launcher = [str(tools["sh"]), "-c", LAUNCH, "launch", str(root), user]
    return [*unshare, *launcher, str(tools["chroot"]), str(tools["mount"]), *config["Entrypoint"]]


def image_env(config: Mapping[str, Any], **extra: str) -> dict[str, str]:
    env = dict(e.split("=", 1) for e in config["Env"])
    return {**env, "TLS_SERVER_CERTS_DIR": TLS_DIR, **extra}


@pytest.fixture(scope="module")
def certs() -> dict[str, pki.KeyPair]:
    ca = pki.ca("crossplane function runtime CA")
    return {
        "ca": ca,
        "server": pki.leaf(ca, "function", server=True, dns=("localhost",), ips=("127.0.0.1",)),
        "client": pki.leaf(ca, "crossplane", server=False),
    }


@pytest.fixture(params=build.FUNCTIONS, scope="module")
def unpacked(
    request: pytest.FixtureRequest,
    built: dict[str, Any],
    certs: dict[str, pki.KeyPair],
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[str, Path, dict[str, Any]]:
    """(function, root filesystem, image config) of a function's package, with TLS mounted."""
    function: str = request.param
    if not built["functions"][function]["startable"]:
        pytest.skip(f"{function}: fleetgate has no module for it yet")
    work = tmp_path_factory.mktemp(function)
    root = work / "rootfs"
    root.mkdir()
    xpkg = package_path(built, function)
    # The layers flattened by crane export, as a container runtime would apply them.
    oci.unpack_export(oci.Crane(build.crane_binary(), work), xpkg, root)
    tls = root / TLS_DIR.lstrip("/")
    tls.mkdir(parents=True)
    for name, data in (
        ("tls.crt", certs["server"].cert_pem),
        ("tls.key", certs["server"].key_pem),
        ("ca.crt", certs["ca"].cert_pem),
    ):
        (tls / name).write_bytes(data)
        (tls / name).chmod(0o644)  # the image's user reads them, as from a Secret volume
    return function, root, read_tarball(xpkg)[0]["config"]


def request_for(function: str) -> fnv1.RunFunctionRequest:
    kind, namespace = XR_KINDS[function]
    req = fnv1.RunFunctionRequest(meta=fnv1.RequestMeta(tag=f"package-{function}"))
    meta = {"name": "packaged", **({"namespace": namespace} if namespace else {})}
    xr: dict[str, Any] = {
        "apiVersion": "fleetgate.dev/v1alpha1",
        "kind": kind,
        "metadata": meta,
    }
    if kind == "ModelEndpoint":
        xr["spec"] = {"origin": "https://api.openai.com"}
    req.observed.composite.resource.update(xr)
    return req


def call(
    address: str, req: fnv1.RunFunctionRequest, certs: Mapping[str, pki.KeyPair], client: str | None
) -> fnv1.RunFunctionResponse:
    key = certs[client] if client else None
    creds = grpc.ssl_channel_credentials(
        root_certificates=certs["ca"].cert_pem,
        private_key=key.key_pem if key else None,
        certificate_chain=key.cert_pem if key else None,
    )
    with grpc.secure_channel(address, creds) as channel:
        stub = grpcv1.FunctionRunnerServiceStub(channel)  # type: ignore[no-untyped-call]
        rsp: fnv1.RunFunctionResponse = stub.RunFunction(req, timeout=TIMEOUT_S)
        return rsp


def stop(proc: subprocess.Popen[bytes]) -> int:
    proc.terminate()
    try:
        return proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise


def test_packaged_function_answers_over_mutual_tls(
    unpacked: tuple[str, Path, dict[str, Any]], certs: dict[str, pki.KeyPair]
) -> None:
    function, root, config = unpacked
    address = f"127.0.0.1:{free_port()}"
    proc = subprocess.Popen(
        rootfs_command(root, config),
        env=image_env(config, ADDRESS=address),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for_port(address, proc, START_TIMEOUT_S)
        rsp = call(address, request_for(function), certs, "client")
        assert rsp.meta.tag == f"package-{function}"
        if function == "compose-model-endpoint":
            assert [c.type for c in rsp.conditions] == ["EndpointReady"]
        with pytest.raises(grpc.RpcError) as refused:
            call(address, request_for(function), certs, None)  # no client certificate
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
    finally:
        code = stop(proc)
        stderr = proc.stderr.read().decode() if proc.stderr else ""
    assert code == 0, f"SIGTERM must stop the function cleanly; stderr:\n{stderr}"


def test_packaged_function_holds_its_package_data(
    unpacked: tuple[str, Path, dict[str, Any]],
) -> None:
    """The GAIE CRDs the stack installs are package data: the image must carry each one."""
    _, root, _ = unpacked
    folder = root / wheels.SITE / "fleetgate" / "inference_cluster" / gaie_crds.FOLDER
    shipped = [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]
    assert shipped == gaie_crds.crds(), [crd["metadata"]["name"] for crd in shipped]
    assert {crd["kind"] for crd in shipped} == {"CustomResourceDefinition"}


def listening_ports(pid: int) -> set[int]:
    """TCP ports in LISTEN state in the network namespace of pid."""
    ports = set()
    for table in ("tcp", "tcp6"):
        path = Path(f"/proc/{pid}/net/{table}")
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            if state == "0A":
                ports.add(int(local.rsplit(":", 1)[1], 16))
    return ports


def test_packaged_function_listens_on_9443_by_default(
    unpacked: tuple[str, Path, dict[str, Any]],
) -> None:
    """Started exactly as Crossplane starts it (no address given), it serves on 9443.

    In a network namespace of its own, so the fixed port never collides with
    anything else on the machine.
    """
    _, root, config = unpacked
    proc = subprocess.Popen(
        rootfs_command(root, config, netns=True),
        env=image_env(config),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while build.PORT not in listening_ports(proc.pid):
            assert proc.poll() is None, f"exited with {proc.returncode}"
            assert time.monotonic() < deadline, "nothing listening on 9443"
            time.sleep(0.1)
    finally:
        assert stop(proc) == 0


def test_build_code_is_linted() -> None:
    """`make lint` covers functions/, tests/ and e2e/; the build code gets the same rules here."""
    ruff = Path(sys.executable).parent / "ruff"
    for args in (["check"], ["format", "--check"]):
        proc = subprocess.run(
            [str(ruff), *args, "package"], cwd=REPO, capture_output=True, text=True, check=False
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr


# --- what users install and build with ------------------------------------------

INSTALL = REPO / "package" / "install"


def load_all(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def test_install_manifests_validate() -> None:
    """The provider runtime config and the first objects, against Crossplane's CRDs and the XRDs."""
    docs = load_all(INSTALL / "provider-kubernetes.yaml") + load_all(INSTALL / "first-objects.yaml")
    xrds = sorted((REPO / "apis").glob("*/definition.yaml"))
    assert validate(docs, extra_schema_files=xrds) == []


def test_provider_kubernetes_is_the_configurations_dependency() -> None:
    """Pre-created with --sanitize-secrets, it is the object the dependency resolves to."""
    runtime, provider = load_all(INSTALL / "provider-kubernetes.yaml")
    assert "--sanitize-secrets" in yaml.safe_dump(runtime)
    meta = yaml.safe_load((REPO / "package/configuration/crossplane.yaml").read_text())
    (dep,) = [d for d in meta["spec"]["dependsOn"] if d["package"].endswith("/provider-kubernetes")]
    assert provider["spec"]["package"] == f"{dep['package']}:{dep['version']}"
    assert provider["metadata"]["name"] == build.package_object_name(dep["package"])
    assert provider["spec"]["runtimeConfigRef"]["name"] == runtime["metadata"]["name"]


def test_rbac_covers_every_required_kind_read_only() -> None:
    (role,) = load_all(INSTALL / "rbac.yaml")
    assert role["kind"] == "ClusterRole"
    assert role["metadata"]["labels"] == {"rbac.crossplane.io/aggregate-to-crossplane": "true"}
    granted = {
        (g, r) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"]
    }
    assert all(set(rule["verbs"]) == {"get", "list", "watch"} for rule in role["rules"])
    plurals = {
        ("fleetgate.dev", yaml.safe_load(p.read_text())["spec"]["names"]["plural"])
        for p in (REPO / "apis").glob("*/definition.yaml")
    }
    assert granted == {*plurals, ("", "secrets")}


GC = "system:kube-controller-manager"
BEING_DELETED: dict[str, Any] = {"deletionTimestamp": "2026-12-01T17:56:26Z"}
DELETING: dict[str, Any] = {"metadata": BEING_DELETED, "spec": {"backends": []}}
ROUTE: dict[str, Any] = {"metadata": {}, "spec": {"backends": []}}
CHANGED: dict[str, Any] = {"metadata": {}, "spec": {"backends": [{"endpoint": "mine"}]}}


@pytest.mark.parametrize(
    ("username", "operation", "old", "new", "allowed"),
    [
        pytest.param(
            "system:serviceaccount:crossplane-system:crossplane",
            "CREATE",
            None,
            ROUTE,
            True,
            id="crossplane",
        ),
        pytest.param(
            "system:serviceaccount:team-a:default",
            "CREATE",
            None,
            ROUTE,
            False,
            id="a team's account",
        ),
        pytest.param("alice@example.com", "CREATE", None, ROUTE, False, id="a person"),
        pytest.param("alice@example.com", "UPDATE", ROUTE, CHANGED, False, id="a person's edit"),
        pytest.param(
            GC,
            "UPDATE",
            DELETING,
            {**DELETING, "metadata": {**BEING_DELETED, "finalizers": []}},
            True,
            id="the garbage collector finishing a foreground deletion",
        ),
        pytest.param(
            "alice@example.com",
            "UPDATE",
            DELETING,
            {**CHANGED, "metadata": BEING_DELETED},
            False,
            id="a person's edit of a route being deleted",
        ),
        pytest.param(
            GC, "UPDATE", ROUTE, ROUTE, False, id="an update of a route not being deleted"
        ),
    ],
)
def test_only_crossplane_writes_modelroutes(
    username: str, operation: str, old: dict[str, Any] | None, new: dict[str, Any], allowed: bool
) -> None:
    """The admission policy's rule, evaluated with a real CEL implementation."""
    policy, binding = load_all(INSTALL / "modelroute-guard.yaml")
    assert binding["spec"]["policyName"] == policy["metadata"]["name"]
    assert binding["spec"]["validationActions"] == ["Deny"]
    (rule,) = policy["spec"]["matchConstraints"]["resourceRules"]
    assert (rule["apiGroups"], rule["resources"]) == (["fleetgate.dev"], ["modelroutes"])
    (check,) = policy["spec"]["validations"]
    env = celpy.Environment()
    program = env.program(env.compile(check["expression"]))
    request = json_to_cel({"userInfo": {"username": username}, "operation": operation})
    activation = {"request": request, "object": json_to_cel(new)}
    activation["oldObject"] = json_to_cel(old) if old is not None else None
    assert bool(program.evaluate(activation)) is allowed


def test_dockerfile_builds_the_same_image() -> None:
    text = (REPO / "package" / "Dockerfile").read_text()
    assert "python -m package.build rootfs /rootfs" in text, "the same root filesystem builder"
    stages = dict(re.findall(r"^FROM runtime AS (\S+)\nENTRYPOINT (\[.*\])$", text, re.M))
    assert {k: json.loads(v) for k, v in stages.items()} == {
        f: build.image_config(f)["Entrypoint"] for f in build.FUNCTIONS
    }
    assert re.findall(r"^USER (\S+)$", text, re.M) == [build.USER]
    assert re.findall(r"^EXPOSE (\d+)$", text, re.M) == [str(build.PORT)]
    (env,) = re.findall(r"^ENV (.*)$", text, re.M)
    assert env.split() == list(build.ENV)
    pins = re.findall(r"installer==[\d.]+", (REPO / "pyproject.toml").read_text())
    assert pins
    assert all(pin in text for pin in pins), "the same installer as make packages"


def test_configuration_depends_on_the_functions_of_the_version_it_is_built_as() -> None:
    """make upgrade-packages builds the same packages as another version (make e2e's upgrade
    fault): its Configuration must require those functions, not pyproject's."""
    with build.exclusive(build.CACHE / "build.lock"):  # the stage a build may be using
        stage = build.stage_configuration(build.REGISTRY, "v9.9.9")
        meta = yaml.safe_load((stage / "crossplane.yaml").read_text())
    versions = {d["version"] for d in meta["spec"]["dependsOn"] if d["kind"] == "Function"}
    assert versions == {"v9.9.9"}
