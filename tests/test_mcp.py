"""`rung mcp`, driven by the SDK's own client over stdio: the tools answer what `--json` prints,
errors come back as tool errors, and files are read only inside the workspace."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

pytest.importorskip("mcp")
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult

from tests.conftest import FIXTURES

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
def checked(server: Server) -> dict:
    """Runs 1 (passes) and 2 (raises at the run rung), checked through the server with paths
    relative to the workspace."""
    solutions = ["problems/tiny/solutions/good.py", "problems/tiny/solutions/raises.py"]
    return json.loads(server.text("check", problem="problems/tiny", solutions=solutions))


def test_the_verbs_are_listed_as_tools(server):
    listed = server.portal.call(server.session.list_tools).tools
    assert {t.name for t in listed} == TOOLS
    assert all(t.description for t in listed)


def test_check_stores_runs_that_show_exactly_as_the_cli_does(server, checked, workspace):
    assert checked["schema"] == "rung/1" and checked["problem"] == "tiny"
    good, bad = checked["solutions"]
    assert (good["run"], good["verdict"], bad["run"], bad["verdict"]) == (1, "PASS", 2, "FAIL at run")
    assert good["path"] == str(workspace / "problems/tiny/solutions/good.py")
    for run in ("1", "2"):
        assert server.text("show", run=int(run)) == rung("show", run, "--json", "-w", str(workspace))


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
    assert info == rung("problem", f"{ws}/problems/tiny", "--json", "-w", ws)
    assert json.loads(info)["benchmarks"] == [{"n": 4096}]


def test_context_search_answers_what_the_cli_prints(server, workspace):
    ws = str(workspace)
    rung("context", "add", f"{ws}/problems/tiny/problem.py", "-w", ws)
    found = server.text("context_search", query="generate_input", limit=3)
    assert found == rung("context", "search", "generate_input", "--limit", "3", "--json", "-w", ws)
    assert json.loads(found)["snippets"][0]["path"].endswith("problem.py")


def test_read_artifact_reads_only_inside_the_workspace(server, checked, workspace):
    assert json.loads(server.text("read_artifact", path=".rung/runs/1/result.json"))["id"] == 1
    inside = workspace / ".rung" / "runs" / "2" / "logs" / "judge.stderr.log"
    assert server.text("read_artifact", path=str(inside)) == inside.read_text()
    outside = workspace.parent / "outside.txt"
    outside.write_text("secret\n")
    (workspace / "link.txt").symlink_to(outside)
    for path in ("../outside.txt", str(outside), "link.txt", "problems/../../outside.txt"):
        refused = server.call("read_artifact", path=path)
        assert refused.is_error, path
        assert "outside the workspace" in refused.content[0].text
        assert "secret" not in refused.content[0].text
    (workspace / "big.log").write_text("x" * 300_000)
    assert server.text("read_artifact", path="big.log").endswith("the first 200000 are shown]")
    assert server.call("read_artifact", path=".rung/rung.db").is_error  # binary


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
