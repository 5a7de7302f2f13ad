"""The SSH executor: `ssh://[user@]host[:port][?python=PATH]`, the worker started over the system's ssh.

The system's OpenSSH client, not a library: it brings the user's ~/.ssh/config (aliases,
ProxyJump, ControlMaster), agent and known_hosts as they are, and adds no dependency. The remote
host needs rung installed for `python` (default `python3`); problem and solution travel in the
job, the run's folder comes back in its end event. Keepalives make a dead link a lost job within
a minute rather than a hang.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from rung.errors import UsageError
from rung.executors.stream import StreamSlot

SSH_OPTIONS = ["-o", "BatchMode=yes", "-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=4"]


class SshExecutor:
    remote = True  # the problem is packed into each job

    def __init__(self, urls: list[str], workers: int | None = None, ssh_options: list[str] | None = None):
        self.hosts = [_parse(u) for u in urls]
        self.workers = workers or 1
        self.ssh_options = ssh_options or []  # e.g. ["-F", config] (the tests' own sshd)

    def slots(self) -> list[StreamSlot]:
        slots = []
        for name, target, port, python in self.hosts:
            for i in range(self.workers):
                # Several workers on one host: one GPU each, as the local executor does.
                gpu = ["--gpu", str(i)] if self.workers > 1 else []
                command = ["ssh", *SSH_OPTIONS, *self.ssh_options, *(["-p", port] if port else []), target]
                command += ["--", python, "-m", "rung.executors.worker", "--die-with-parent", *gpu]
                slots.append(StreamSlot(f"{name} #{i}" if self.workers > 1 else name, command))
        return slots


def _parse(url: str) -> tuple[str, str, str, str]:
    """`ssh://[user@]host[:port][?python=PATH]` as (name, user@host, port, python)."""
    parts = urlsplit(url)
    if parts.scheme != "ssh" or not parts.hostname:
        raise UsageError(f"{url!r}: an SSH executor is ssh://[user@]host[:port][?python=PATH]")
    target = f"{parts.username}@{parts.hostname}" if parts.username else parts.hostname
    python = parse_qs(parts.query).get("python", ["python3"])[0]
    port = str(parts.port) if parts.port else ""
    return f"ssh://{target}" + (f":{port}" if port else ""), target, port, python
