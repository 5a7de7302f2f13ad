"""The llm agent through the real SDKs, their HTTP transport replaced by recorded responses."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import httpx2
import pytest

from rung import knobs, runner
from rung.agents import LoopState, Tried
from rung.agents.llm import LLMAgent
from rung.agents.prompt import fenced, read_reply
from rung.agents.providers import LLMConfig, Provider
from rung.errors import UsageError
from rung.optimize import Budget, optimize
from rung.store import Store
from tests.conftest import FIXTURES

TINY = FIXTURES / "tiny"
GOOD = TINY / "solutions" / "good.py"
RECORDED = FIXTURES / "llm"


class Recorded:
    """Plays back a recorded list of responses in order; keeps every request it was sent."""

    def __init__(self, name: str) -> None:
        self.responses = json.loads((RECORDED / name).read_text())
        self.requests: list[dict] = []
        self.lock = threading.Lock()

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        with self.lock:
            self.requests.append(json.loads(request.content))
            if not self.responses:
                raise AssertionError("more requests than recorded responses")
            r = self.responses.pop(0)
        if r.get("raise") == "timeout":
            raise httpx2.ReadTimeout("timed out", request=request)
        return httpx2.Response(r["status"], headers=r.get("headers", {}), json=r["body"])


def provider(name: str, recorded: Recorded, monkeypatch, **settings) -> Provider:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-a-real-key")
    config = LLMConfig.load(None, provider=name, model="test-model", timeout_s=0.2, **settings)
    return Provider(config, http_client=httpx2.Client(transport=httpx2.MockTransport(recorded)))


@pytest.fixture(scope="module")
def state(tmp_path_factory) -> LoopState:
    store = Store(tmp_path_factory.mktemp("llm"))
    problem, device = runner.describe(TINY, store.root / "scratch")
    best = runner.climb(store, problem, device, GOOD)
    return LoopState(problem, device, Tried(best, GOOD.read_text()), hints=["keep it one line"])


def one(agent: LLMAgent, state: LoopState):
    (proposal,) = list(agent.propose(state, 1))
    return proposal


@pytest.mark.parametrize(
    ("name", "recorded", "base_url"),
    [
        ("anthropic", "anthropic_solution.json", None),
        ("openai", "openai_solution.json", "http://127.0.0.1:9/v1"),
    ],
)
def test_a_reply_with_a_solution_becomes_a_version(state, monkeypatch, name, recorded, base_url):
    log = Recorded(recorded)
    prices = {"price_in_usd_per_mtok": 3.0, "price_out_usd_per_mtok": 15.0}
    p = one(LLMAgent(provider(name, log, monkeypatch, base_url=base_url, **prices)), state)
    assert p.error == "" and "return x + x" in p.source and p.note == "add instead of multiply"
    assert p.tokens_in > 0 and p.tokens_out > 0
    assert p.cost_usd == pytest.approx((p.tokens_in * 3 + p.tokens_out * 15) / 1e6)
    (sent,) = log.requests
    assert sent["model"] == "test-model"
    text = json.dumps(sent)
    # The prompt carries the problem's source, its shapes, the best version's ladder and source, the hint.
    for part in (
        "double a float32 vector",
        "def reference",
        "'n': 4096",
        "run ",
        "return x * 2",
        "keep it one line",
    ):
        assert part in text, part
    assert "sk-test-not-a-real-key" not in text


def test_a_reply_without_a_solution_is_a_failed_candidate(state, monkeypatch):
    p = one(LLMAgent(provider("anthropic", Recorded("anthropic_no_solution.json"), monkeypatch)), state)
    assert p.source == "" and "no complete solution file" in p.error and p.tokens_out > 0


def test_a_solution_that_does_not_parse_is_a_failed_candidate(state, monkeypatch):
    agent = LLMAgent(
        provider("openai", Recorded("openai_broken_code.json"), monkeypatch, base_url="http://x/v1")
    )
    p = one(agent, state)
    assert p.source == "" and "does not parse" in p.error


def test_a_malformed_reply_is_a_failed_candidate(state, monkeypatch):
    agent = LLMAgent(
        provider("openai", Recorded("openai_malformed.json"), monkeypatch, base_url="http://x/v1")
    )
    p = one(agent, state)
    assert p.source == "" and p.error.startswith("malformed reply")


def test_a_rate_limit_is_retried(state, monkeypatch):
    log = Recorded("anthropic_rate_limited.json")
    p = one(LLMAgent(provider("anthropic", log, monkeypatch)), state)
    assert p.error == "" and len(log.requests) == 2


def test_a_timeout_after_its_retries_is_a_failed_candidate(state, monkeypatch):
    log = Recorded("openai_timeout.json")
    p = one(LLMAgent(provider("openai", log, monkeypatch, base_url="http://x/v1")), state)
    assert p.source == "" and "no reply within 0.2 s (2 retries)" in p.error and len(log.requests) == 3


@pytest.mark.parametrize(
    ("recorded", "says"),
    [
        ("anthropic_unknown_model.json", "unknown model 'test-model'"),
        ("anthropic_bad_key.json", "refused the API key"),
    ],
)
def test_what_no_later_call_can_fix_ends_the_loop(state, monkeypatch, recorded, says):
    with pytest.raises(UsageError, match=says):
        one(LLMAgent(provider("anthropic", Recorded(recorded), monkeypatch)), state)


def test_no_api_key_is_a_usage_error(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(UsageError, match="no API key: set ANTHROPIC_API_KEY"):
        Provider(LLMConfig.load(None, model="m"))


def test_the_key_variable_never_reaches_a_worker(monkeypatch):
    monkeypatch.setenv("MY_LLM_CREDS", "s3cret")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "x")
    Provider(LLMConfig.load(None, model="m", api_key_env="MY_LLM_CREDS"))
    assert "MY_LLM_CREDS" in knobs.secret_names({"MY_LLM_CREDS": "s3cret", "PATH": "/bin"})


def test_config_file_and_its_mistakes(tmp_path):
    good = tmp_path / "llm.yml"
    good.write_text("provider: openai\nmodel: qwen\nbase_url: http://127.0.0.1:8000/v1\n")
    assert LLMConfig.load(good, model="other").model == "other"  # flags win over the file
    bad = tmp_path / "bad.yml"
    bad.write_text("model: m\napi_key: sk-123\n")
    with pytest.raises(UsageError, match="unknown LLM setting"):
        LLMConfig.load(bad)
    with pytest.raises(UsageError, match="unknown provider"):
        LLMConfig.load(None, provider="gemini", model="m")


def test_reply_reading_takes_the_last_block_that_defines_the_entry():
    text = "```python\nimport torch\n```\nthen\n```py\ndef custom_kernel(x):\n    return x\n```"
    source, note, error = read_reply(text, "def custom_kernel")
    assert error == "" and source.startswith("def custom_kernel") and note == "llm version"
    assert read_reply("```python\nclass ModelNew: pass\n```", "def custom_kernel")[2] != ""
    longer = '````python\ndef custom_kernel(x):\n    """Not ```this```."""\n    return x\n````\n'
    assert read_reply(longer, "def custom_kernel")[0].endswith("return x\n")


def test_prompt_fences_cannot_be_closed_by_what_they_hold():
    text = "a README with\n```\ncode\n```\n"
    assert fenced(text).startswith("````\n") and fenced(text).endswith("\n````")
    assert fenced("plain", "python") == "```python\nplain\n```"


def test_the_loop_runs_end_to_end_through_the_sdk(tmp_path, monkeypatch):
    """Three replies at once: no solution, a wrong version, a right one. Each costs one candidate;
    the token budget then stops the loop, and the store keeps lineage, tokens and the failures."""
    log = Recorded("loop_round.json")
    agent = LLMAgent(
        provider("anthropic", log, monkeypatch, price_in_usd_per_mtok=1.0, price_out_usd_per_mtok=5.0)
    )
    store = Store(tmp_path)
    events: list[dict] = []
    outcome = optimize(
        store, TINY, agent, GOOD, Budget(rounds=5, tokens=3000), parallel=3, on_event=events.append
    )
    assert outcome.reason == "token budget (3000) spent: 3550 tokens"
    assert sorted(r.verdict for r in outcome.candidates) == ["FAIL at correct", "PASS"]
    assert len(outcome.failures) == 1 and "no complete solution file" in outcome.failures[0]
    assert outcome.spent.usd == pytest.approx((3000 * 1 + 550 * 5) / 1e6)
    rows = sqlite3.connect(tmp_path / ".rung" / "rung.db").execute(
        "SELECT run_id, error, tokens_in, tokens_out, cost_usd, agent_s, ladder_s, prompt, reply FROM proposals"
    )
    rows = list(rows)
    assert len(rows) == 3 and sum(r[2] for r in rows) == 3000
    assert all(r[5] > 0 and "double a float32 vector" in r[7] and r[8] for r in rows)
    assert sum(1 for r in rows if r[0] is None and r[1]) == 1 and all(r[6] > 0 for r in rows if r[0])
    kinds = [e["event"] for e in events]
    assert (
        kinds[0] == "start"
        and kinds.count("candidate") == 2
        and "no_version" in kinds
        and kinds[-1] == "round"
    )
    assert events[-1]["overhead_s"] >= 0


class _NoSuchModel(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.dumps(
            {"error": {"message": "The model `nope` does not exist", "type": "invalid_request_error"}}
        )
        self.send_response(404)
        self.send_header("content-type", "application/json")
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args) -> None:
        pass


def _rung(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rung", *args], capture_output=True, text=True, timeout=300, env=env
    )


def test_bad_llm_settings_are_one_line_exit_two_and_keep_the_store(tmp_path, monkeypatch):
    server = HTTPServer(("127.0.0.1", 0), _NoSuchModel)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")}
    base = ["optimize", str(TINY), "--agent", "llm", "--from", str(GOOD), "-w", str(tmp_path)]
    cases = [
        (["--model", "claude-x"], "no API key: set ANTHROPIC_API_KEY"),
        (
            [
                "--provider",
                "openai",
                "--model",
                "nope",
                "--base-url",
                f"http://127.0.0.1:{server.server_port}/v1",
            ],
            "unknown model 'nope'",
        ),
        (
            ["--provider", "openai", "--model", "m", "--base-url", f"http://127.0.0.1:{closed}/v1"],
            "cannot reach http://127.0.0.1",
        ),
        (["--provider", "openai"], "needs a model"),
    ]
    try:
        for extra, says in cases:
            done = _rung(*base, *extra, env=env)
            assert done.returncode == 2, (extra, done.stderr)
            assert says in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    finally:
        server.shutdown()
    history = _rung("history", str(TINY), "--json", "-w", str(tmp_path), env=env)
    runs = json.loads(history.stdout)["runs"]
    assert len(runs) == 2 and all(r["ok"] for r in runs)  # the two starts that ran before the endpoint failed
