"""`rung cache info|clear`: the platform's cache folder, and nothing outside rung's entries removed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import platformdirs

from rung import cache, devices, knobs
from rung.backends import build_cache
from rung.judge import kept_timings


def rung(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("RUNG_")}
    return subprocess.run(
        [sys.executable, "-m", "rung", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**clean, **env},
    )


def test_the_default_cache_folder_is_the_platforms(monkeypatch, tmp_path):
    monkeypatch.delenv("RUNG_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # where platformdirs looks on Linux
    assert knobs.cache_dir() == platformdirs.user_cache_path("rung", appauthor=False) == tmp_path / "rung"


def test_entries_name_everything_rung_writes_in_its_cache(tmp_path):
    with knobs.scoped(RUNG_CACHE_DIR=str(tmp_path)):
        written = {devices.cache_path(), kept_timings.path(), build_cache.root()}
    assert {p.relative_to(tmp_path).as_posix() for p in written} == set(cache.ENTRIES)


def _fill(folder: Path, outside: Path) -> None:
    (folder / "builds" / "triton" / "ab").mkdir(parents=True)
    (folder / "builds" / "triton" / "ab" / "k.cubin").write_bytes(b"\0" * 1000)
    (folder / "devices.json").write_text("{}")
    (folder / ".timings.x1y2").write_text("half-written")
    (folder / "notes.txt").write_text("not rung's")  # RUNG_CACHE_DIR may name a shared folder
    (folder / "photos").mkdir()
    (folder / "photos" / "cat.jpg").write_bytes(b"jpg")
    outside.mkdir()
    (outside / "keep.txt").write_text("elsewhere")
    (folder / "builds" / "link").symlink_to(outside)  # a link out of the cache is unlinked, not followed
    (folder / "timings.json").symlink_to(outside / "keep.txt")


def test_clear_removes_rungs_entries_and_nothing_else(tmp_path):
    folder, outside = tmp_path / "shared", tmp_path / "outside"
    folder.mkdir()
    _fill(folder, outside)
    env = {"RUNG_CACHE_DIR": str(folder)}
    info = json.loads(rung("cache", "info", "--json", env=env).stdout)
    assert info["folder"] == str(folder)
    sizes = {Path(e["path"]).name: (e["files"], e["bytes"]) for e in info["entries"]}
    assert sizes["builds"] == (1, 1000) and set(sizes) == {
        "builds",
        "devices.json",
        "timings.json",
        ".timings.x1y2",
    }

    done = rung("cache", "clear", env=env)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt", "photos"]
    assert (folder / "photos" / "cat.jpg").read_bytes() == b"jpg"
    assert (outside / "keep.txt").read_text() == "elsewhere"
    assert rung("cache", "clear", env=env).stdout == f"nothing to remove in {folder}\n"
    assert rung("cache", "info", env=env).stdout == f"cache folder: {folder}\nempty\n"
