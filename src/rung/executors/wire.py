"""What travels between the controller and an executor worker: jobs, events and packed folders.

One JSON object per line, both ways. A job carries the solution as the source that was read (and
will be hashed and stored), the problem as a path where the worker shares this file system or as
a packed folder where it does not, and the RUNG_* settings in force. Events name their job; the
worker's first line (`hello`) says where it runs.
"""

from __future__ import annotations

import base64
import io
import json
import tarfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

from rung import knobs

# Settings that name this machine's folders mean nothing to a worker elsewhere.
LOCAL_ONLY_SETTINGS = {"RUNG_WORKSPACE", "RUNG_CACHE_DIR"}
# Settings of the controller's batch, not of a climb: a worker climbs one job at a time.
BATCH_SETTINGS = {"RUNG_EXECUTOR", "RUNG_WORKERS"}


@dataclass
class Job:
    """One candidate to climb: its index in the batch, the solution's source and the problem."""

    id: int
    solution_path: str  # as given to the controller; the worker runs a copy of the same name
    source: str  # the file's bytes, decoded with surrogateescape so that any bytes travel exactly
    problem_path: str
    problem_key: str  # names the problem's bytes, so a worker unpacks and describes it once
    problem_tar: str = ""  # the problem packed (pack_folder), for a worker on another machine
    settings: dict[str, str] = field(default_factory=dict)
    parent: str | None = None  # the hash of the version it was made from (the optimize loop's)

    @property
    def solution_name(self) -> str:
        return Path(self.solution_path).name

    def source_bytes(self) -> bytes:
        return self.source.encode(errors="surrogateescape")

    @classmethod
    def of(cls, job_id: int, solution: Path, problem: Path, problem_key: str, **rest: Any) -> Job:
        """The job for the solution file at `solution`, read once here."""
        source = solution.read_bytes().decode(errors="surrogateescape")
        return cls(job_id, str(solution), source, str(problem), problem_key, **rest)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, line: str) -> Job:
        return cls(**json.loads(line))


def settings_to_send(environ: dict[str, str], remote: bool) -> dict[str, str]:
    """The RUNG_* settings set here that a worker should climb with (never a secret)."""
    secret = knobs.secret_names(environ)
    skip = secret | BATCH_SETTINGS | (LOCAL_ONLY_SETTINGS if remote else {"RUNG_WORKSPACE"})
    return {n: v for n, v in environ.items() if n in knobs.KNOBS and n not in skip and v != ""}


def write_event(out: IO[str], event: str, job: int | None, **fields: Any) -> None:
    out.write(json.dumps({"event": event, "job": job, **fields}, default=str) + "\n")
    out.flush()


def pack_folder(path: Path, leave_out: tuple[str, ...] = ()) -> str:
    """`path` (a folder or a file) as a gzipped tar in base64, its own name at the top; the
    entries of `path` named in `leave_out` left out."""
    buffer = io.BytesIO()

    def kept(member: tarfile.TarInfo) -> tarfile.TarInfo | None:
        return None if member.name.split("/")[1:2] in ([n] for n in leave_out) else member

    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(path, arcname=path.name, filter=kept)
    return base64.b64encode(buffer.getvalue()).decode()


def unpack_folder(packed: str, into: Path) -> Path:
    """Unpack what pack_folder made into `into`; the path of its top entry."""
    into.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(base64.b64decode(packed)), mode="r:gz") as tar:
        top = {m.name.split("/")[0] for m in tar.getmembers()}
        tar.extractall(into, filter="data")
    if len(top) != 1:
        raise ValueError(f"a packed folder holds one top entry, not {sorted(top)}")
    return into / top.pop()
