"""Files a trusted process opens where the solution could have planted something: no link
followed at any component, regular files only, sizes bounded, names from a safe alphabet.

The solution process may write its scratch folder: every path named there, and every name it
gives a kernel or an artifact, is the attacker's. A path is opened beneath a root the caller
trusts one component at a time (`os.open(dir_fd=..., O_NOFOLLOW)`, so a link anywhere on the way
is refused, not followed), the last with O_NONBLOCK (a FIFO must not hang the reader) and checked
to be a regular file with `fstat` on what was opened. What a trusted process writes is created
new (O_CREAT|O_EXCL|O_NOFOLLOW), never opened through a name that already exists.
Standard library only: the judge and the controller both use it.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from pathlib import Path, PurePath
from typing import BinaryIO

UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
MAX_NAME_CHARS = 120
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class Refused(Exception):
    """A path a trusted process will not open, and why (`reason`: a few words)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def safe_name(name: str) -> str:
    """`name` in the safe alphabet (letters, digits, `.`, `_`, `-`): every other character (a
    path separator, a control character, a space) becomes `_`, a leading dot too (no `..`, no
    hidden file), cut to MAX_NAME_CHARS keeping its suffix; never empty."""
    cleaned = UNSAFE.sub("_", name)
    cleaned = re.sub(r"^\.", "_", cleaned) or "_"
    if len(cleaned) > MAX_NAME_CHARS:
        suffix = PurePath(cleaned).suffix[:20]
        cleaned = cleaned[: MAX_NAME_CHARS - len(suffix)] + suffix
    return cleaned


def unique_name(name: str, taken: set[str]) -> str:
    """`name`, or `name` with `-2`, `-3`... before its suffix where `taken` holds it; added to `taken`."""
    stem, dot, suffix = name.partition(".")
    found, n = name, 1
    while found in taken:
        n += 1
        found = f"{stem}-{n}{dot}{suffix}"
    taken.add(found)
    return found


def parts_beneath(root: Path, path: str | Path) -> tuple[str, ...]:
    """The components of `path` below `root`, judged as written (nothing resolved): Refused where
    it is not beneath `root` or walks up (`..`)."""
    given = Path(path)
    try:
        parts = given.relative_to(root).parts if given.is_absolute() else given.parts
    except ValueError:
        raise Refused(f"outside {root}") from None
    if not parts or any(p in ("..", ".") for p in parts):
        raise Refused(f"outside {root}")
    return parts


def open_dir(root: Path, parts: tuple[str, ...] = ()) -> int:
    """A descriptor of the folder `root/parts...`: `root` as the caller trusts it, each component
    below it opened without following a link."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    for part in parts:
        fd = _step(fd, part, _DIR)  # closes the folder it opened `part` in, whatever happens
    return fd


def open_beneath(root: Path, path: str | Path) -> int:
    """A read descriptor of the regular file `path` beneath `root`; Refused, with why, where a
    component is a link, the file is not a regular one, or the path leaves `root`."""
    parts = parts_beneath(root, path)
    fd = _step(open_dir(root, parts[:-1]), parts[-1], _FILE)
    found = os.fstat(fd)
    if not stat.S_ISREG(found.st_mode):
        os.close(fd)
        raise Refused("not a regular file")
    if found.st_nlink > 1:  # a hard link to a file outside, where the filesystem let one be made
        os.close(fd)
        raise Refused("a hard link")
    return fd


def _step(dir_fd: int, name: str, flags: int) -> int:
    """`name` opened in `dir_fd` (which is closed); Refused in words where it cannot be."""
    try:
        return os.open(name, flags, dir_fd=dir_fd)
    except OSError as e:
        raise Refused(_why(dir_fd, name, e)) from None
    finally:
        os.close(dir_fd)


def _why(dir_fd: int, name: str, e: OSError) -> str:
    try:
        mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
    except OSError:
        mode = 0
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if e.errno == errno.ENOENT:
        return "no such file"
    if e.errno == errno.ENOTDIR:
        return "not a folder on the way"
    return os.strerror(e.errno or 0).lower()


def read_fd(fd: int, limit: int) -> bytes:
    """At most `limit` bytes of the open file `fd` (closed after); Refused where it holds more."""
    with os.fdopen(fd, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise Refused(f"over {limit} bytes")
    return data


def read_beneath(root: Path, path: str | Path, limit: int) -> bytes:
    """The bytes of the regular file `path` beneath `root`, no link followed; Refused otherwise."""
    return read_fd(open_beneath(root, path), limit)


def own_folder(path: Path) -> Path:
    """`path`, a folder made here (or already one, not a link), for a trusted process to write in."""
    try:
        os.mkdir(path, 0o755)
    except FileExistsError:
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            raise Refused(f"{path.name} is not a folder of this run's own") from None
    return path


def open_new(path: Path) -> BinaryIO:
    """A new file `path` open for writing (a name already there, link or not, is removed first,
    never followed): a trusted process's write can land nowhere but `path`."""
    for _ in range(2):
        try:
            return os.fdopen(os.open(path, _NEW, 0o644), "wb")
        except FileExistsError:
            os.unlink(path)  # removes the name itself, a link included
    raise Refused(f"{path.name} could not be created new")


def write_new(path: Path, data: bytes | str) -> Path:
    """`data` into a new file `path` (`open_new`)."""
    with open_new(path) as f:
        f.write(data.encode() if isinstance(data, str) else data)
    return path
