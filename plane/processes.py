"""The control plane's processes: started with a log each, watched, and always stopped.

Everything runs inside one private network namespace that has only a
loopback interface (``isolate``), so no component can listen beyond this
machine whatever address it binds (provider-kubernetes binds its metrics and
webhook servers on every interface, with no flag to change that), and ports
never collide with anything else on the host.
"""

import contextlib
import ctypes
import http.client
import json
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

CLONE_NEWNET = 0x40000000
STOP_GRACE_S = 10.0
_T = TypeVar("_T")


def isolate() -> None:
    """Move this process (and so every child it starts) into a new network namespace."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNET) != 0:
        errno = ctypes.get_errno()
        raise OSError(
            errno, f"cannot create a network namespace ({os.strerror(errno)}): run as root"
        )
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)


class ProcessDiedError(RuntimeError):
    pass


@dataclass
class Process:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path
    restarted_elsewhere: bool = False  # a controller of ours restarts it, as a kubelet would
    # As started, to start it again.
    argv: Sequence[str] = ()
    env: Mapping[str, str] | None = None
    cwd: Path | None = None

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def peak_rss_kib(self) -> int:
        try:
            for line in Path(f"/proc/{self.popen.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
        except OSError:
            pass
        return 0


@dataclass
class Supervisor:
    """Starts processes and stops all of them, last first, on exit, error or signal."""

    logs: Path
    processes: list[Process] = field(default_factory=list)
    paused: dict[str, Process] = field(default_factory=dict)  # stopped, to start again
    namespaces: dict[str, "Namespace"] = field(default_factory=dict)  # by name, as made
    # Called before any process is stopped: whatever restarts processes stops first.
    on_stop: list[Callable[[], None]] = field(default_factory=list)

    def __enter__(self) -> "Supervisor":
        self.logs.mkdir(parents=True, exist_ok=True)
        # SIGTERM (CI's stop, `make down`) unwinds like Ctrl-C, through __exit__.
        signal.signal(signal.SIGTERM, _interrupt)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_all()

    def start(
        self,
        name: str,
        argv: Sequence[str],
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        restarted_elsewhere: bool = False,
    ) -> Process:
        log = self.logs / f"{name}.log"
        with log.open("ab") as out:
            popen = subprocess.Popen(
                list(argv),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, **(env or {})},
                cwd=cwd,
                start_new_session=True,  # a terminal's Ctrl-C reaches us, and we stop them
            )
        proc = Process(name, popen, log, restarted_elsewhere, list(argv), env, cwd)
        self.processes.append(proc)
        return proc

    def restart(self, name: str) -> Process:
        """Stop the process ``name`` and start it again as it was: a pod deleted and made again."""
        self.pause(name)
        return self.resume(name)

    def pause(self, name: str) -> None:
        """Stop the process ``name`` (SIGTERM), keeping how it was started for ``resume``:
        a machine switched off, its disk kept."""
        (proc,) = [p for p in self.processes if p.name == name]
        self.stop(proc)
        self.paused[name] = proc

    def resume(self, name: str) -> Process:
        proc = self.paused.pop(name)
        return self.start(
            name, proc.argv, proc.env, proc.cwd, restarted_elsewhere=proc.restarted_elsewhere
        )

    def revive(self) -> list[str]:
        """Start again each process that exited and that nothing else restarts, as a kubelet
        restarts a pod's container; their names."""
        exited = [
            p for p in self.processes if p.popen.poll() is not None and not p.restarted_elsewhere
        ]
        for proc in exited:
            self.processes.remove(proc)
            self.start(proc.name, proc.argv, proc.env, proc.cwd)
        return [p.name for p in exited]

    def check(self) -> None:
        """Fail, with its last log lines, when any process has exited."""
        for proc in self.processes:
            code = proc.popen.poll()
            if code is not None and not proc.restarted_elsewhere:
                raise ProcessDiedError(
                    f"{proc.name} exited with {code}; its log ends:\n{proc.tail()}"
                )

    def stop(self, proc: Process) -> None:
        if proc.popen.poll() is None:
            os.killpg(proc.popen.pid, signal.SIGTERM)
            try:
                proc.popen.wait(STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                os.killpg(proc.popen.pid, signal.SIGKILL)
                proc.popen.wait()
        if proc in self.processes:
            self.processes.remove(proc)

    def stop_all(self) -> None:
        for callback in self.on_stop:
            callback()
        for proc in reversed(list(self.processes)):
            with contextlib.suppress(ProcessLookupError):
                self.stop(proc)

    def peak_rss_mib(self) -> float:
        return sum(p.peak_rss_kib() for p in self.processes) / 1024


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def wait_listening(proc: Process, check: "object", timeout: float, what: str) -> None:
    """Wait for ``check()`` to be true, failing early if the process dies."""
    deadline = time.monotonic() + timeout
    while True:
        if proc.popen.poll() is not None:
            raise ProcessDiedError(f"{proc.name} exited while {what}; its log ends:\n{proc.tail()}")
        if callable(check) and check():
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"{proc.name}: timed out {what}; its log ends:\n{proc.tail()}")
        time.sleep(0.5)


class Namespace:
    """A further loopback-only network namespace, for a process whose fixed ports clash.

    Crossplane's RBAC manager and provider-kubernetes both serve metrics on
    :8080 with no flag to move them. The RBAC manager runs in its own
    namespace; ``forward`` makes the API server it talks to reachable there at
    the same address, so its kubeconfig stays the control plane's.
    """

    def __init__(self, sup: Supervisor, name: str) -> None:
        self.holder = sup.start(f"{name}-netns", ["unshare", "--net", "sleep", "infinity"])
        path = f"/proc/{self.holder.popen.pid}/ns/net"
        deadline = time.monotonic() + 10
        while os.readlink(path) == os.readlink("/proc/self/ns/net"):
            if time.monotonic() > deadline:
                raise TimeoutError("the network namespace holder did not unshare")
            time.sleep(0.05)
        self.path = path
        subprocess.run(["nsenter", f"--net={path}", "ip", "link", "set", "lo", "up"], check=True)
        sup.namespaces[name] = self

    def argv(self, argv: Sequence[str]) -> list[str]:
        return ["nsenter", f"--net={self.path}", *argv]

    def forward(self, port: int, to: "Namespace | None" = None) -> None:
        """Accept on 127.0.0.1:``port`` in this namespace; connect to the same in ours, or
        in ``to``'s (a Service between two pods: the rate-limit service dials Envoy
        Gateway's xDS)."""
        listener = _in_netns(self.path, lambda: socket.create_server(("127.0.0.1", port)))

        def dial() -> socket.socket:
            if to is None:
                return socket.create_connection(("127.0.0.1", port))
            return to.connect(port)

        _relay(listener, dial, f"forward-{port}")

    def expose(self, address: str, port: int) -> int:
        """Accept on ``address`` in ours (a pod's address the plane's API servers dial);
        connect to 127.0.0.1:``port`` in this namespace. The port accepted on is one the
        kernel picks, returned: a plane process listening on every interface may hold
        ``port`` itself (provider-kubernetes' webhook server holds :9443)."""
        listener = socket.create_server((address, 0))
        _relay(listener, lambda: self.connect(port), f"expose-{address}:{port}")
        accepted: int = listener.getsockname()[1]
        return accepted

    def listen(self, address: str, port: int, dial: Callable[[], socket.socket]) -> None:
        """Accept on ``address``:``port`` in this namespace (the address added to its
        loopback) and carry each connection to one ``dial`` makes."""
        subprocess.run(
            self.argv(["ip", "address", "replace", f"{address}/32", "dev", "lo"]), check=True
        )
        listener = _in_netns(self.path, lambda: socket.create_server((address, port)))
        _relay(listener, dial, f"listen-{address}:{port}")

    def publish(self, port: int) -> int:
        """Accept on a free 127.0.0.1 port in ours and carry each connection to
        127.0.0.1:``port`` here, as a port-forward would; returns the port."""
        listener = socket.create_server(("127.0.0.1", 0))
        _relay(listener, lambda: self.connect(port), f"publish-{port}")
        published: int = listener.getsockname()[1]
        return published

    def connect(self, port: int, timeout: float = 10.0) -> socket.socket:
        """A TCP connection to 127.0.0.1:``port`` inside this namespace, for a client here."""
        return _in_netns(
            self.path, lambda: socket.create_connection(("127.0.0.1", port), timeout=timeout)
        )

    def request(
        self, port: int, method: str, path: str, body: Any = None, timeout: float = 10.0
    ) -> tuple[int, bytes]:
        """One HTTP request to 127.0.0.1:``port`` inside this namespace (a JSON ``body``, if
        any): its status and body."""
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        conn.sock = self.connect(port, timeout)
        try:
            data = None if body is None else json.dumps(body).encode()
            headers = {} if data is None else {"Content-Type": "application/json"}
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            return resp.status, resp.read()
        finally:
            conn.close()


def _relay(listener: socket.socket, dial: Callable[[], socket.socket], name: str) -> None:
    """Pipe each connection ``listener`` accepts to one ``dial`` makes, both ways."""

    def pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def serve() -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                continue
            try:
                upstream = dial()
            except OSError:  # nothing behind: the caller sees its connection close
                client.close()
                continue
            # A dial's timeout bounds the connect only: an idle stream (xDS) stays open.
            upstream.settimeout(None)
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=pipe, args=(a, b), daemon=True).start()

    threading.Thread(target=serve, daemon=True, name=name).start()


def _in_netns(path: str, make: Callable[[], _T]) -> _T:
    """``make()`` a socket in the network namespace at ``path``: setns changes only the
    calling thread's namespace, and a socket keeps the namespace it was made in."""
    libc = ctypes.CDLL(None, use_errno=True)
    ours = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    theirs = os.open(path, os.O_RDONLY)
    try:
        if libc.setns(theirs, CLONE_NEWNET) != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"cannot enter {path}: {os.strerror(errno)}")
        return make()
    finally:
        libc.setns(ours, CLONE_NEWNET)
        os.close(ours)
        os.close(theirs)
