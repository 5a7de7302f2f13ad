"""Settings from flags, the environment and project files: precedence, blame, and the judge's share."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from rung import judge_process, knobs, settings
from rung.errors import UsageError
from tests.conftest import FIXTURES

TINY = FIXTURES / "tiny"


def rung(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("RUNG_")}
    return subprocess.run(
        [sys.executable, "-m", "rung", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        env={**clean, **(env or {})},
    )


@pytest.fixture
def no_rung_env(monkeypatch):
    for name in knobs.KNOBS:
        monkeypatch.delenv(name, raising=False)


def test_a_flag_beats_the_environment_which_beats_the_file_which_beats_the_default(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text('[tool.rung]\ntrials = 5\nseed = 11\nskip = "profile"\n')
    for name in knobs.KNOBS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RUNG_SEED", "7")
    monkeypatch.setenv("RUNG_TRIALS", "4")
    got = settings.resolve({"RUNG_TRIALS": "2"}, tmp_path)
    assert (got["RUNG_TRIALS"].value, got["RUNG_TRIALS"].source) == (2, "flag --trials")
    assert (got["RUNG_SEED"].value, got["RUNG_SEED"].source) == (7, "environment RUNG_SEED")
    assert got["RUNG_SKIP"].value == "profile"
    assert got["RUNG_SKIP"].source == f"{tmp_path / 'pyproject.toml'} [tool.rung]"
    assert (got["RUNG_ARCH"].value, got["RUNG_ARCH"].source) == ("sm_90", "default")


def test_the_nearest_project_file_upwards_is_read_and_rung_toml_comes_first(tmp_path, no_rung_env):
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")  # no [tool.rung]: not rung's
    assert settings.find_project_file(deep) is None
    (tmp_path / "a" / "pyproject.toml").write_text("[tool.rung]\ntrials = 5\n")
    (tmp_path / "a" / "rung.toml").write_text('trials = 6\ncache_dir = "cache"\n')
    got = settings.resolve({}, deep)
    assert got["RUNG_TRIALS"].value == 6 and got["RUNG_TRIALS"].source == str(tmp_path / "a" / "rung.toml")
    assert got["RUNG_CACHE_DIR"].value == str(tmp_path / "a" / "cache")  # relative to the file


@pytest.mark.parametrize(
    ("args", "env", "files", "says"),
    [
        (["--trials", "three"], {}, {}, "flag --trials: trials = 'three': Input should be a valid integer"),
        (
            [],
            {"RUNG_TIMEOUT_S": "soon"},
            {},
            "environment RUNG_TIMEOUT_S: timeout_s = 'soon': Input should be a valid number",
        ),
        ([], {}, {"pyproject.toml": '[tool.rung]\nseed = "x"\n'}, "pyproject.toml [tool.rung]: seed = 'x'"),
        (
            [],
            {},
            {"rung.toml": "bench_max_s = [1]\n"},
            "rung.toml: bench_max_s = [1]: Input should be a valid number",
        ),
        (
            [],
            {},
            {"rung.toml": "trails = 3\n"},
            "rung.toml: unknown setting 'trails' (did you mean 'trials'?",
        ),
        (
            ["--trials", "-3"],
            {},
            {},
            "flag --trials: trials = '-3': Input should be greater than or equal to 1",
        ),
        ([], {"RUNG_TIMEOUT_S": "-1"}, {}, "timeout_s = '-1': Input should be greater than or equal to 0"),
        (
            [],
            {"RUNG_BASELINE": "compil"},
            {},
            "environment RUNG_BASELINE: baseline = 'compil': not valid here: baseline timed beside the reference",
        ),
        (
            ["--skip", "profile,profiel"],
            {},
            {},
            "flag --skip: skip = 'profile,profiel': not valid here: comma-separated rungs",
        ),
        (
            ["--skip", "profiel"],
            {},
            {},
            "(the rungs: load, compile, run, guard, correct, scale, memcheck, bench, roofline, dump, trace, profile, scopes)",
        ),
        (
            [],
            {},
            {"rung.toml": 'executor = "smoke"\n'},
            "rung.toml: executor = 'smoke': not valid here: where rung check",
        ),
        ([], {}, {"rung.toml": "trials = \n"}, "rung.toml: not readable as TOML"),
    ],
    ids=[
        "flag",
        "environment",
        "pyproject",
        "rung.toml",
        "unknown-key",
        "negative-count",
        "negative-duration",
        "baseline",
        "skip",
        "skip-names-the-rungs",
        "executor",
        "not-toml",
    ],
)
def test_a_bad_value_from_any_source_is_one_usage_line_naming_setting_and_source(
    tmp_path, args, env, files, says
):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    done = rung(*args, "history", "tiny", cwd=tmp_path, env=env)
    assert done.returncode == 2
    assert done.stderr.startswith("rung: error: ") and done.stderr.count("\n") == 1, done.stderr
    assert says in done.stderr
    assert not (tmp_path / ".rung").exists()


def test_an_outranked_bad_value_is_still_an_error(tmp_path, no_rung_env):
    (tmp_path / "rung.toml").write_text('trials = "many"\n')
    with pytest.raises(UsageError, match=r"rung\.toml: trials = 'many'"):
        settings.resolve({"RUNG_TRIALS": "1"}, tmp_path)


def test_config_shows_every_value_and_where_it_came_from(tmp_path):
    (tmp_path / "rung.toml").write_text("trials = 5\n")
    doc = json.loads(
        rung("--skip", "profile", "config", "--json", cwd=tmp_path, env={"RUNG_SEED": "7"}).stdout
    )
    rows = {row["name"]: row for row in doc["settings"]}
    assert doc["project_file"] == str(tmp_path / "rung.toml")
    assert set(rows) == {settings.field(n) for n in knobs.KNOBS}
    assert (rows["trials"]["value"], rows["trials"]["source"]) == (5, str(tmp_path / "rung.toml"))
    assert (rows["seed"]["value"], rows["seed"]["source"]) == (7, "environment RUNG_SEED")
    assert (rows["skip"]["value"], rows["skip"]["source"]) == ("profile", "flag --skip")
    assert rows["arch"] == {
        "name": "arch",
        "env": "RUNG_ARCH",
        "flag": "--arch",
        "value": "sm_90",
        "default": "sm_90",
        "source": "default",
    }
    text = rung("config", cwd=tmp_path).stdout.splitlines()
    assert text[0] == f"project file: {tmp_path / 'rung.toml'}"
    assert next(line for line in text if line.startswith("trials ")).split() == [
        "trials",
        "5",
        str(tmp_path / "rung.toml"),
    ]


def test_every_setting_is_a_flag_in_help(tmp_path):
    shown = rung("--help", cwd=tmp_path, env={"COLUMNS": "200"}).stdout
    for name in knobs.KNOBS:
        assert settings.flag(name) in shown and f"[{name}]" in shown, name


def test_resolved_values_reach_knobs_and_the_judges_environment_then_go(tmp_path, no_rung_env):
    (tmp_path / "rung.toml").write_text("trials = 1\n")
    resolved = settings.resolve({"RUNG_ARCH": "sm_100"}, tmp_path)
    with settings.exported(resolved):
        assert knobs.get("RUNG_TRIALS") == 1 and knobs.get("RUNG_ARCH") == "sm_100"
        env = judge_process.judge_environment()
        assert env["RUNG_TRIALS"] == "1" and env["RUNG_ARCH"] == "sm_100"
        assert "RUNG_SEED" not in env  # a default stays unset: the judge's knobs give it
    assert "RUNG_TRIALS" not in os.environ and knobs.get("RUNG_ARCH") == "sm_90"


def test_a_project_file_setting_reaches_the_judge_of_a_real_check(tmp_path):
    (tmp_path / "rung.toml").write_text("trials = 1\n")
    done = rung("check", str(TINY), str(TINY / "solutions" / "good.py"), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    correct = next(r for r in json.loads(done.stdout)["solutions"][0]["rungs"] if r["name"] == "correct")
    assert correct["message"].endswith("x 1 fresh seeds match the reference"), correct["message"]


def test_version():
    done = rung("--version", cwd=Path.cwd())
    assert done.returncode == 0 and done.stdout == f"rung {version('rung')}\n"
