"""A local endpoint that speaks the providers' HTTP APIs (Anthropic Messages at /v1/messages,
OpenAI Chat Completions at /v1/chat/completions) and answers with recorded conversations, so the
llm agent runs through the real SDKs, tool calls and all, with no key and no network: the
replay agent's `--replay FILE.json`, the tests, and bench/agent_eval.py where no key is.

A recording is JSON: `{"conversations": [[step, ...], ...]}`, a step being `{"tools": [{"name",
"args"}, ...]}` (the model calls tools) or `{"text": "..."}` (it answers), either with optional
`"tokens": [in, out]`. A request that opens a conversation (no assistant message yet) is given
the next recorded conversation not yet started; a later request is matched to its conversation
by the tool-call ids it echoes, and answered with that conversation's next step. So k
conversations at once each follow their own recording, whatever order the requests come in.
Every request is kept (`requests`) for a test to read what the agent was sent.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from rung.errors import UsageError

DEFAULT_TOKENS = (1000, 200)


class RecordedEndpoint:
    """The endpoint on 127.0.0.1 (an ephemeral port) while in a `with` block."""

    def __init__(self, conversations: list[list[dict[str, Any]]]) -> None:
        self.conversations = conversations
        self.started = 0
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True

    @classmethod
    def load(cls, path: Path) -> RecordedEndpoint:
        try:
            recorded = json.loads(path.read_text())
            conversations = recorded["conversations"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise UsageError(f"{path}: not a recorded conversation file ({type(e).__name__}: {e})") from None
        return cls(conversations)

    def __enter__(self) -> RecordedEndpoint:
        threading.Thread(target=self.server.serve_forever, daemon=True, name="rung-recorded").start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def left(self) -> int:
        """Conversations not started yet."""
        with self.lock:
            return len(self.conversations) - self.started

    def reply(self, path: str, request: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self.requests.append(request)
            said = [m for m in request.get("messages", []) if m.get("role") == "assistant"]
            if said:
                which = _conversation_of(said[-1])
            elif self.started < len(self.conversations):
                which, self.started = self.started, self.started + 1
            else:
                raise LookupError("every recorded conversation has been started")
            steps = self.conversations[which]
            if len(said) >= len(steps):
                raise LookupError(f"conversation {which} has only {len(steps)} recorded replies")
            step = steps[len(said)]
        form = _anthropic if path.endswith("/messages") else _openai
        return form(step, which, len(said))


def _conversation_of(assistant: dict[str, Any]) -> int:
    """The conversation whose tool-call ids an assistant message echoes (call_<conv>_<step>_<i>)."""
    content = assistant.get("content")
    ids = [c["id"] for c in assistant.get("tool_calls") or []]
    if isinstance(content, list):
        ids += [b["id"] for b in content if b.get("type") == "tool_use"]
    if not ids:
        raise LookupError("a reply without tool calls ended its conversation; nothing follows it")
    return int(ids[0].split("_")[1])


def _anthropic(step: dict[str, Any], which: int, n: int) -> dict[str, Any]:
    tokens = step.get("tokens", DEFAULT_TOKENS)
    content: list[dict[str, Any]] = [{"type": "text", "text": step["text"]}] if step.get("text") else []
    calls = step.get("tools", [])
    content += [
        {"type": "tool_use", "id": f"call_{which}_{n}_{i}", "name": c["name"], "input": c.get("args", {})}
        for i, c in enumerate(calls)
    ]
    return {
        "id": f"msg_{which}_{n}",
        "type": "message",
        "role": "assistant",
        "model": "recorded",
        "content": content,
        "stop_reason": "tool_use" if calls else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": tokens[0], "output_tokens": tokens[1]},
    }


def _openai(step: dict[str, Any], which: int, n: int) -> dict[str, Any]:
    tokens = step.get("tokens", DEFAULT_TOKENS)
    calls = step.get("tools", [])
    message: dict[str, Any] = {"role": "assistant", "content": step.get("text") or None}
    if calls:
        message["tool_calls"] = [
            {
                "id": f"call_{which}_{n}_{i}",
                "type": "function",
                "function": {"name": c["name"], "arguments": json.dumps(c.get("args", {}))},
            }
            for i, c in enumerate(calls)
        ]
    return {
        "id": f"chatcmpl_{which}_{n}",
        "object": "chat.completion",
        "created": 0,
        "model": "recorded",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": {"prompt_tokens": tokens[0], "completion_tokens": tokens[1], "total_tokens": sum(tokens)},
    }


def _handler(endpoint: RecordedEndpoint) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
            try:
                status, answer = 200, endpoint.reply(self.path, body)
            except LookupError as e:  # the agent asked for more than was recorded: a server error
                status, answer = 500, {"error": {"type": "api_error", "message": str(e)}}
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass  # the agent's requests are kept in `requests`, not printed

    return Handler
