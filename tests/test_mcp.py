"""`rung mcp`, driven by the SDK's own client over stdio: the tools answer what `--json` prints,
errors come back as tool errors, files are read only inside the workspace and a page at a time,
a check reports progress per rung and case, and resources and the optimize prompt answer."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import NamedTuple

import pytest

pytest.importorskip("mcp")
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult

from rung import api, views
from rung.ladder import NAMES
from rung.mcp_progress import HEARTBEAT_S
from tests.conftest import FIXTURES


class Update(NamedTuple):
    at_s: float
    progress: float
    total: float | None
    message: str


TOOLS = {
    "check",
    "bench",
    "profile",
    "dump",
    "history",
    "show",
    "diff",
    "problem_info",
    "context_search",
    "read_artifact",
}


def rung(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "rung", *args], capture_output=True, text=True, timeout=300, check=True
    )
    return done.stdout.rstrip("\n")


class Server:
    """One `rung mcp` process and a client session on it, called from synchronous tests."""

    def __init__(self, portal: BlockingPortal, session: ClientSession) -> None:
        self.portal = portal
        self.session = session

    def call(self, tool: str, **arguments: object) -> CallToolResult:
        return self.portal.call(self.session.call_tool, tool, arguments)

    def call_with_progress(self, tool: str, **arguments: object) -> tuple[CallToolResult, list[Update]]:
        """The tool's result and every progress notification that came before it, timed from
        the request (the client sets no timeout of its own: the test measures the silences)."""
        updates: list[Update] = []
        began = time.monotonic()

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            updates.append(Update(time.monotonic() - began, progress, total, message or ""))

        async def call() -> CallToolResult:
            return await self.session.call_tool(tool, arguments, progress_callback=on_progress)

        result = self.portal.call(call)
        updates.append(Update(time.monotonic() - began, math.inf, None, "result"))
        return result, updates

    def text(self, tool: str, **arguments: object) -> str:
        result = self.call(tool, **arguments)
        assert not result.is_error, result.content
        return result.content[0].text


@asynccontextmanager
async def _session(workspace: Path) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "rung", "mcp", "-w", str(workspace)], env=dict(os.environ)
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("mcp").resolve()
    shutil.copytree(FIXTURES / "tiny", ws / "problems" / "tiny")
    return ws


@pytest.fixture(scope="module")
def server(workspace: Path) -> Iterator[Server]:
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(_session(workspace)) as session:
        yield Server(portal, session)


@pytest.fixture(scope="module")
def checked_with_progress(server: Server) -> tuple[dict, list[Update]]:
    """Runs 1 (passes) and 2 (raises at the run rung), checked through the server with paths
    relative to the workspace, and the progress the check reported."""
    solutions = ["problems/tiny/solutions/good.py", "problems/tiny/solutions/raises.py"]
    result, updates = server.call_with_progress("check", problem="problems/tiny", solutions=solutions)
    assert not result.is_error, result.content
    return json.loads(result.content[0].text), updates


@pytest.fixture(scope="module")
def checked(checked_with_progress: tuple[dict, list[Update]]) -> dict:
    return checked_with_progress[0]


def test_the_verbs_are_listed_as_tools(server):
    listed = server.portal.call(server.session.list_tools).tools
    assert {t.name for t in listed} == TOOLS
    assert all(t.description for t in listed)


def test_check_stores_runs_that_show_exactly_as_the_cli_does(server, checked, workspace):
    assert checked["schema"] == "rung/3" and checked["problem"] == "tiny"
    good, bad = checked["solutions"]
    assert (good["run"], good["verdict"], bad["run"], bad["verdict"]) == (1, "PASS", 2, "FAIL at run")
    assert good["path"] == str(workspace / "problems/tiny/solutions/good.py")
    for run in ("1", "2"):
        assert server.text("show", run=int(run)) == rung("show", run, "--json", "-w", str(workspace))
    chain = api.lineage(1, workspace)
    assert json.loads(server.text("show", run=1))["lineage"] == json.loads(
        json.dumps(views.lineage_rows(chain))
    )


def test_check_reports_progress_per_rung_and_case(checked_with_progress):
    _, updates = checked_with_progress
    said = "; ".join(u.message for u in updates)
    for rung_ended in ("run 1 good.py: load OK", "run 1 good.py: correct OK", "run 2 raises.py: run ERROR"):
        assert rung_ended in said
    assert "run 1: correct case 6 of 6 {'n': 300}" in said  # 2 tests x 3 trials
    assert "run 1: scale case 1 of 1 {'n': 4096}" in said
    values = [u.progress for u in updates]
    assert values == sorted(values) and len(set(values)) == len(values)  # the protocol's "only grows"
    assert {u.total for u in updates[:-1]} == {2.0 * len(NAMES)}  # every rung of the ladder x 2 solutions


def test_history_diff_rungs_and_problem_answer_what_the_cli_prints(server, checked, workspace):
    ws = str(workspace)
    assert server.text("history", problem="problems/tiny") == rung(
        "history", f"{ws}/problems/tiny", "--json", "-w", ws
    )
    diff = server.text("diff", run_a=1, run_b=2)
    assert diff == rung("diff", "1", "2", "--json", "-w", ws)
    doc = json.loads(diff)
    assert "+    raise ValueError" in doc["source_diff"]
    assert {"name": "run", "a": "OK", "b": "ERROR"} in doc["rungs"]
    for tool in ("bench", "dump", "profile"):
        assert server.text(tool, run=1) == rung("show", "1", "--rung", tool, "--json", "-w", ws)
    info = server.text("problem_info", problem="problems/tiny")
    assert info == rung("problem", f"{ws}/problems/tiny", "--json")
    assert json.loads(info)["benchmarks"] == [{"n": 4096}]


def test_context_search_answers_what_the_cli_prints(server, workspace):
    ws = str(workspace)
    rung("context", "add", f"{ws}/problems/tiny/problem.py", "-w", ws)
    found = server.text("context_search", query="generate_input", limit=3)
    assert found == rung("context", "search", "generate_input", "--limit", "3", "--json", "-w", ws)
    assert json.loads(found)["snippets"][0]["path"].endswith("problem.py")


def test_read_artifact_reads_only_inside_the_workspace(server, checked, workspace):
    page = json.loads(server.text("read_artifact", path=".rung/runs/1/result.json"))
    assert json.loads(page["text"])["run"] == 1 and page["next_offset"] is None
    inside = workspace / ".rung" / "runs" / "2" / "logs" / "judge.stderr.log"
    assert json.loads(server.text("read_artifact", path=str(inside)))["text"] == inside.read_text()
    outside = workspace.parent / "outside.txt"
    outside.write_text("secret\n")
    (workspace / "link.txt").symlink_to(outside)
    for path in ("../outside.txt", str(outside), "link.txt", "problems/../../outside.txt"):
        refused = server.call("read_artifact", path=path)
        assert refused.is_error, path
        assert "outside the workspace" in refused.content[0].text
        assert "secret" not in refused.content[0].text
    assert server.call("read_artifact", path=".rung/rung.db").is_error  # binary


def test_read_artifact_pages_through_a_large_file(server, workspace):
    text = "".join(f"line {i} é\n" for i in range(40_000))  # 2-byte characters: pages cut between bytes
    (workspace / "big.log").write_text(text)
    pages, offset = [], 0
    while offset is not None:
        page = json.loads(server.text("read_artifact", path="big.log", offset=offset))
        assert page["total_bytes"] == len(text.encode()) and page["length"] <= 200_000
        pages.append(page["text"])
        offset = page["next_offset"]
    assert len(pages) == 3 and "".join(pages) == text
    cut = json.loads(server.text("read_artifact", path="big.log", offset=5, length=3))
    assert (cut["text"], cut["length"], cut["next_offset"]) == ("0 ", 2, 7)  # not half of the é
    for offset, length in ((-1, 10), (0, 0), (0, 200_001)):
        refused = server.call("read_artifact", path="big.log", offset=offset, length=length)
        assert refused.is_error and "1 to 200000 bytes at a time" in refused.content[0].text


def test_history_comes_a_page_at_a_time(server, checked):
    first = json.loads(server.text("history", problem="problems/tiny", limit=1))
    assert (first["total"], first["next_offset"], [r["run"] for r in first["runs"]]) == (2, 1, [1])
    second = json.loads(server.text("history", problem="tiny", offset=1, limit=1))
    assert (second["next_offset"], [r["run"] for r in second["runs"]]) == (None, [2])
    assert second["runs"][0]["why"].startswith("ValueError: kernel exploded on purpose")
    refused = server.call("history", problem="tiny", limit=0)
    assert refused.is_error and "1 to 200 versions at a time" in refused.content[0].text


def _resource(server: Server, uri: str) -> dict:
    return json.loads(server.portal.call(server.session.read_resource, uri).contents[0].text)


def test_resources_are_the_problems_and_runs(server, checked, workspace):
    listed = server.portal.call(server.session.list_resources).resources
    assert {str(r.uri) for r in listed} == {"rung://problems", "rung://runs"}
    templates = server.portal.call(server.session.list_resource_templates).resource_templates
    assert {t.uri_template for t in templates} == {"rung://problem/{name}", "rung://run/{run}"}
    (problem,) = _resource(server, "rung://problems")["problems"]
    assert problem == {
        "name": "tiny",
        "folder": "problems/tiny",
        "runs": 2,
        "passed": 1,
        "best": {
            "run": 1,
            "path": f"{workspace}/problems/tiny/solutions/good.py",
            "speedup_vs_reference": None,
            "pct_of_roofline": None,
        },
    }
    ws = str(workspace)
    assert _resource(server, "rung://problem/tiny") == json.loads(
        rung("problem", f"{ws}/problems/tiny", "--json")
    )
    assert [(r["run"], r["problem"], r["verdict"]) for r in _resource(server, "rung://runs")["runs"]] == [
        (2, "tiny", "FAIL at run"),
        (1, "tiny", "PASS"),
    ]
    assert _resource(server, "rung://run/2") == json.loads(server.text("show", run=2))
    with pytest.raises(MCPError):
        server.portal.call(server.session.read_resource, "rung://problem/nope")


def test_the_optimize_prompt_starts_from_the_best_version(server, checked):
    (prompt,) = server.portal.call(server.session.list_prompts).prompts
    assert prompt.name == "optimize" and {a.name for a in prompt.arguments or []} == {"problem", "goal"}
    got = server.portal.call(
        server.session.get_prompt, "optimize", {"problem": "problems/tiny", "goal": "try vector loads"}
    )
    text = got.messages[0].content.text
    assert "The best version so far is run 1 (" in text and "2 version(s) have been checked" in text
    assert "`check` it (problem `problems/tiny`)" in text
    assert text.endswith("Your person asks: try vector loads")


def test_errors_are_tool_errors_and_the_server_keeps_answering(server, checked, workspace):
    for tool, arguments, says in (
        ("show", {"run": 99}, f"no run 99 in {workspace}/.rung"),
        ("bench", {"run": 99}, "no run 99"),
        ("check", {"problem": "problems/tiny", "solutions": ["nope.py"]}, "nope.py: no such solution file"),
        ("problem_info", {"problem": "problems/none"}, "no such folder or file"),
    ):
        result = server.call(tool, **arguments)
        assert result.is_error, tool
        text = result.content[0].text
        assert says in text and "\n" not in text and "Traceback" not in text
    assert json.loads(server.text("show", run=1))["verdict"] == "PASS"


@pytest.mark.slow
def test_a_check_longer_than_a_client_waits_reports_progress_all_along(tmp_path):
    """About 80 s: a right solution taking 2.5 s a call over 8 test cases x 3 seeds. Progress
    arrives every few seconds, so a client that restarts its 60 s timeout on progress (as the
    TypeScript SDK's resetTimeoutOnProgress does) never gives up on it."""
    shutil.copytree(FIXTURES / "slow_cases", tmp_path / "problems" / "slow_cases")
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(_session(tmp_path)) as session:
        result, updates = Server(portal, session).call_with_progress(
            "check", problem="problems/slow_cases", solutions=["problems/slow_cases/solutions/sleepy.py"]
        )
    assert not result.is_error and json.loads(result.content[0].text)["solutions"][0]["verdict"] == "PASS"
    assert updates[-1].at_s > 60
    silences = [
        b.at_s - a.at_s for a, b in zip([Update(0.0, 0.0, None, ""), *updates], updates, strict=False)
    ]
    assert max(silences) < HEARTBEAT_S + 5, silences
    said = "; ".join(u.message for u in updates)
    assert "correct case 24 of 24" in said and "run 1 sleepy.py: correct OK" in said


def test_the_next_check_of_a_problem_adopts_the_judge_started_after_the_last(tmp_path):
    shutil.copytree(FIXTURES / "tiny", tmp_path / "problems" / "tiny")
    scratch = tmp_path / ".rung" / "scratch"
    judges = lambda: {p.name for p in scratch.glob("judge-*")}  # noqa: E731
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(_session(tmp_path)) as session:
        server = Server(portal, session)
        first = json.loads(
            server.text("check", problem="problems/tiny", solutions=["problems/tiny/solutions/good.py"])
        )
        spare = judges()
        assert len(spare) == 1  # started once the check was done, for the next one
        wrong = ["problems/tiny/solutions/wrong_shape.py"]
        second = json.loads(server.text("check", problem="problems/tiny", solutions=wrong))
        assert not spare & judges()  # adopted by the second check, and ended with it
        assert len(judges()) == 1  # and another started for the check after
    assert first["solutions"][0]["verdict"] == "PASS"
    assert second["solutions"][0]["verdict"].startswith("FAIL")  # an adopted judge fails what is wrong
    assert not judges()  # the server's spare ended with it


def test_without_the_sdk_rung_mcp_says_how_to_install_it():
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; sys.modules['mcp'] = None; sys.argv = ['rung', 'mcp']; "
            "from rung.cli import main; main()",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.strip() == "rung: error: rung mcp needs the mcp package: pip install 'rung[mcp]'"
