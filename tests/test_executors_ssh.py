"""The SSH executor against real OpenSSH servers on 127.0.0.1 (this machine plays the remote host,
with rung installed): the same verdicts as local workers, the device record and artifacts brought
back, and a server killed mid-batch costing one recorded ERROR and a retry on the other host.
Skipped, saying so, where sshd or ssh is not installed (CI installs Debian's openssh-server)."""

from __future__ import annotations

import contextlib
import getpass
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rung.executors import check_batch
from rung.executors.local import LocalExecutor
from rung.executors.ssh import SshExecutor
from rung.spec import Run, Status
from rung.store import Store
from tests.test_executors import BATCH, SOL, TINY, slow_solution, summary

SSHD = shutil.which("sshd") or ("/usr/sbin/sshd" if Path("/usr/sbin/sshd").exists() else None)
pytestmark = pytest.mark.skipif(
    SSHD is None or shutil.which("ssh") is None or shutil.which("ssh-keygen") is None,
    reason="needs OpenSSH's sshd, ssh and ssh-keygen (apt-get install openssh-server openssh-client)",
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Sshd:
    """A real sshd on a free loopback port, keys and configuration in its own folder."""

    def __init__(self, folder: Path, user_key: Path) -> None:
        folder.mkdir()
        self.folder, self.port = folder, free_port()
        host_key = folder / "host_key"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", host_key], check=True)
        (folder / "authorized_keys").write_text(user_key.with_suffix(".pub").read_text())
        (folder / "sshd_config").write_text(
            f"Port {self.port}\nListenAddress 127.0.0.1\nHostKey {host_key}\n"
            f"AuthorizedKeysFile {folder / 'authorized_keys'}\nPidFile {folder / 'sshd.pid'}\n"
            "StrictModes no\nUsePAM no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
            "PermitRootLogin prohibit-password\n"
        )
        self.known_host = f"[127.0.0.1]:{self.port} {(folder / 'host_key.pub').read_text().split(' ', 2)[0]} "
        self.known_host += (folder / "host_key.pub").read_text().split(" ")[1]
        with open(folder / "sshd.log", "w") as log:
            self.proc = subprocess.Popen([SSHD, "-D", "-e", "-f", folder / "sshd_config"], stderr=log)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.05)
        raise RuntimeError(f"sshd did not listen: {(folder / 'sshd.log').read_text()}")

    def url(self) -> str:
        return f"ssh://{getpass.getuser()}@127.0.0.1:{self.port}?python={sys.executable}"

    def kill_all(self) -> None:
        """The server and every connection it serves: what a host that goes away looks like."""
        for pid in [*descendants(self.proc.pid), self.proc.pid]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.proc.wait()


def descendants(pid: int) -> list[int]:
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    found, frontier = [], [pid]
    while frontier:
        children = [p for p, parent in parents.items() if parent in frontier]
        found += children
        frontier = children
    return found


@pytest.fixture(scope="module")
def ssh_home(tmp_path_factory) -> Iterator[tuple[Path, list[Sshd]]]:
    """Two servers ("two hosts") and a client configuration that trusts both and uses a fresh key."""
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege-separation folder, absent in containers
    folder = tmp_path_factory.mktemp("ssh")
    key = folder / "user_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key], check=True)
    servers = [Sshd(folder / f"server{i}", key) for i in range(2)]
    (folder / "known_hosts").write_text("".join(s.known_host + "\n" for s in servers))
    (folder / "ssh_config").write_text(
        f"Host *\n  IdentityFile {key}\n  IdentitiesOnly yes\n  UserKnownHostsFile {folder / 'known_hosts'}\n"
        "  StrictHostKeyChecking yes\n  LogLevel ERROR\n"
    )
    yield folder / "ssh_config", servers
    for server in servers:
        if server.proc.poll() is None:
            server.proc.terminate()
            server.proc.wait()


def climb(workspace: Path, executor: Any, solutions: list[Path], **hooks: Any) -> list[Run]:
    store = Store(workspace)
    try:
        return check_batch(store, executor, TINY, solutions, **hooks)
    finally:
        store.close()


def test_ssh_gives_the_verdicts_of_local_workers_with_where_it_ran(tmp_path, ssh_home):
    config, servers = ssh_home
    local = climb(tmp_path / "local", LocalExecutor(2), BATCH)
    remote = climb(tmp_path / "ssh", SshExecutor([servers[0].url()], 2, ["-F", str(config)]), BATCH)
    assert [summary(r) for r in remote] == [summary(r) for r in local]
    assert [r.solution.sha256 for r in remote] == [r.solution.sha256 for r in local]
    store = Store(tmp_path / "ssh")
    try:
        for run in store.runs("tiny"):
            assert run.environment["executor"].startswith(
                f"ssh://{getpass.getuser()}@127.0.0.1:{servers[0].port}"
            )
            assert run.environment["host"] == socket.gethostname() and run.device.kind == "cpu"
            assert run.solution.path in {str(p) for p in BATCH}  # the path given here, not the worker's copy
            assert (store.run_dir(run.id) / "logs" / "judge.stderr.log").is_file()  # artifacts came back
    finally:
        store.close()


def test_an_unreachable_host_records_every_candidate_as_an_error(tmp_path, ssh_home):
    config, _ = ssh_home
    nobody = SshExecutor([f"ssh://127.0.0.1:{free_port()}"], 1, ["-F", str(config)])
    runs = climb(tmp_path, nobody, [SOL / "good.py", SOL / "raises.py"])
    assert [r.verdict for r in runs] == ["FAIL at executor", "FAIL at executor"]
    for run in runs:
        assert run.rungs[-1].status == Status.ERROR and "the worker did not start" in run.rungs[-1].message
        assert "Connection refused" in run.rungs[-1].message  # ssh's own words travel with it


def test_a_server_killed_mid_batch_loses_one_climb_retried_on_the_other_host(tmp_path, ssh_home):
    config, servers = ssh_home
    slow = slow_solution(tmp_path)
    doomed = servers[1]
    executor = SshExecutor([doomed.url(), servers[0].url()], 1, ["-F", str(config)])

    def kill_the_host_climbing_slow(run: Run, result: Any) -> None:
        if run.solution.path == str(slow) and doomed.proc.poll() is None:
            assert run.environment["executor"].endswith(f":{doomed.port}")
            doomed.kill_all()

    batch = [slow, SOL / "good.py", SOL / "wrong_shape.py"]
    runs = climb(tmp_path, executor, batch, on_rung=kill_the_host_climbing_slow)
    assert doomed.proc.poll() is not None
    assert [r.verdict for r in runs] == ["PASS", "PASS", "FAIL at run"]  # nothing lost, in order
    store = Store(tmp_path)
    try:
        stored = store.runs("tiny")
    finally:
        store.close()
    lost = [r for r in stored if r.rungs[-1].name == "executor"]
    assert len(lost) == 1 and lost[0].solution.path == str(slow) and lost[0].rungs[0].name == "load"
    assert lost[0].rungs[-1].status == Status.ERROR
    assert f"127.0.0.1:{doomed.port}: the worker went away mid-climb" in lost[0].rungs[-1].message
    assert {r.environment["executor"] for r in runs} == {servers[0].url().split("?")[0]}
    assert len(stored) == len(batch) + 1
