"""LLM providers through their official SDKs: Anthropic (`anthropic`) and any OpenAI-compatible
endpoint (`openai` with a base URL: OpenAI, vLLM, SGLang, Ollama, llama.cpp servers).

The model and endpoint come from flags or a YAML config file; the API key only from the
environment (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`, or the variable the config names), never
stored and never passed on (judges and solution processes get an environment from an allow-list, every secret-looking variable
removed). A local OpenAI-compatible server needs no key: with a base URL and no key set, a
placeholder is sent.

A version is written in a conversation: the model may call tools (rung.agents.tools) and read
their results before it answers; `Conversation` keeps the messages in each SDK's own format.

Errors split in two. Those that no later call can fix (no key, a key refused, an unknown model,
an endpoint that cannot be reached) raise `UsageError`: one line, exit code 2. Those that may pass
(a timeout, a rate limit still hit after the SDK's retries, a server error, a reply the SDK cannot
read) raise `CallFailed`, and cost one candidate. The SDKs retry rate limits and timeouts
themselves, `max_retries` times, honouring `retry-after`.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import yaml

from rung import knobs
from rung.errors import RungError, UsageError

DEFAULT_KEY_ENV = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}


class CallFailed(RungError):
    """One call went wrong in a way the next call may not: the candidate fails, the loop goes on."""


@dataclass
class LLMConfig:
    provider: str = "anthropic"  # "anthropic" or "openai" (any OpenAI-compatible endpoint)
    model: str = ""
    base_url: str | None = None
    api_key_env: str = ""  # the variable holding the key; default by provider
    max_tokens: int = 16000
    temperature: float | None = None
    timeout_s: float = 600.0
    max_retries: int = 2
    max_tool_turns: int = 8  # replies that may call tools before the model must answer with a version
    price_in_usd_per_mtok: float | None = None  # for the money budget; unknown leaves cost unknown
    price_out_usd_per_mtok: float | None = None

    @classmethod
    def load(cls, path: Path | None, **overrides: Any) -> LLMConfig:
        """The config file's values (if any), then every override that is not None."""
        values: dict[str, Any] = {}
        if path is not None:
            try:
                loaded = yaml.safe_load(path.read_text()) or {}
            except (OSError, yaml.YAMLError) as e:
                raise UsageError(f"{path}: cannot read the LLM config: {e}".replace("\n", " ")) from None
            if not isinstance(loaded, dict):
                raise UsageError(f"{path}: the LLM config must be a mapping of settings")
            known = {f.name for f in fields(cls)}
            unknown = sorted(set(loaded) - known)
            if unknown:
                raise UsageError(
                    f"{path}: unknown LLM setting(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})"
                )
            values.update(loaded)
        values.update({k: v for k, v in overrides.items() if v is not None})
        config = cls(**values)
        if config.provider not in DEFAULT_KEY_ENV:
            raise UsageError(f"unknown provider {config.provider!r} (known: anthropic, openai)")
        if not config.model:
            raise UsageError("the llm agent needs a model: --model NAME or `model:` in the config file")
        return config

    @property
    def endpoint(self) -> str:
        return self.base_url or (
            "https://api.anthropic.com" if self.provider == "anthropic" else "https://api.openai.com/v1"
        )

    def cost(self, tokens_in: int, tokens_out: int) -> float | None:
        if self.price_in_usd_per_mtok is None or self.price_out_usd_per_mtok is None:
            return None
        return (tokens_in * self.price_in_usd_per_mtok + tokens_out * self.price_out_usd_per_mtok) / 1e6


@dataclass
class ToolSpec:
    """A tool as both SDKs declare it: a name, what it does, and a JSON schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass
class ToolRequest:
    id: str  # the provider's id for the call, echoed with its result
    name: str
    args: dict[str, Any]


@dataclass
class Turn:
    """One reply of the model: its text, the tools it asks for (none: it is done), its tokens."""

    text: str
    calls: list[ToolRequest]
    tokens_in: int
    tokens_out: int


class Provider:
    """One model behind one SDK client; safe to use from several threads, one conversation each."""

    def __init__(self, config: LLMConfig, http_client: Any = None, key: str | None = None) -> None:
        """`key` only for an endpoint that checks none (rung.agents.recorded); else the environment's."""
        self.config = config
        key_env = config.api_key_env or DEFAULT_KEY_ENV[config.provider]
        key = key if key is not None else knobs.api_key(key_env)
        if not key and not (config.provider == "openai" and config.base_url):
            raise UsageError(f"no API key: set {key_env} (keys are read from the environment only)")
        common = {
            "api_key": key or "none",
            "base_url": config.base_url,
            "timeout": config.timeout_s,
            "max_retries": config.max_retries,
            "http_client": http_client,
        }
        try:
            sdk = importlib.import_module(config.provider)  # the SDKs are named after their providers
        except ImportError:
            raise UsageError(
                f"the {config.provider} provider needs its SDK: pip install 'rung[llm]'"
            ) from None
        self.sdk: Any = sdk
        self.client: Any = sdk.Anthropic(**common) if config.provider == "anthropic" else sdk.OpenAI(**common)

    def conversation(self, system: str, prompt: str, tools: list[ToolSpec]) -> Conversation:
        kind = AnthropicConversation if self.config.provider == "anthropic" else OpenAIConversation
        return kind(self, system, prompt, tools)

    @contextmanager
    def calling(self) -> Iterator[None]:
        """The SDK's errors as rung's: UsageError for what no later call fixes, CallFailed else."""
        c, sdk = self.config, self.sdk
        try:
            yield
        except (sdk.AuthenticationError, sdk.PermissionDeniedError) as e:
            raise UsageError(f"{c.endpoint} refused the API key: {_said(e)}") from None
        except sdk.NotFoundError as e:
            raise UsageError(f"unknown model {c.model!r} at {c.endpoint}: {_said(e)}") from None
        except sdk.APITimeoutError:
            raise CallFailed(f"no reply within {c.timeout_s:g} s ({c.max_retries} retries)") from None
        except sdk.APIConnectionError as e:
            raise UsageError(f"cannot reach {c.endpoint}: {_said(e)}") from None
        except sdk.RateLimitError as e:
            raise CallFailed(f"rate limited after {c.max_retries} retries: {_said(e)}") from None
        except sdk.APIStatusError as e:
            raise CallFailed(f"{c.endpoint} answered HTTP {e.status_code}: {_said(e)}") from None
        except (sdk.APIResponseValidationError, AttributeError, IndexError, TypeError, ValueError) as e:
            raise CallFailed(f"malformed reply: {type(e).__name__}: {e}".splitlines()[0]) from None

    def sampling(self) -> dict[str, Any]:
        return {} if self.config.temperature is None else {"temperature": self.config.temperature}


class Conversation:
    """The messages of one exchange in the provider's own format: `ask` sends them and keeps the
    reply, `answer` adds the results of the tools it asked for."""

    def __init__(self, provider: Provider, system: str, prompt: str, tools: list[ToolSpec]) -> None:
        self.provider, self.system, self.tools = provider, system, tools
        self.messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]

    def ask(self) -> Turn:
        raise NotImplementedError

    def answer(self, results: list[tuple[ToolRequest, str, bool]]) -> None:
        """Each (call, result text, whether the tool refused) back to the model."""
        raise NotImplementedError


class AnthropicConversation(Conversation):
    def _tools(self) -> dict[str, Any]:
        tools = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in self.tools
        ]
        return {"tools": tools} if tools else {}

    def ask(self) -> Turn:
        p = self.provider
        with p.calling():
            r = p.client.messages.create(
                model=p.config.model,
                max_tokens=p.config.max_tokens,
                system=self.system,
                messages=self.messages,
                **self._tools(),
                **p.sampling(),
            )
            blocks = [b for b in r.content if getattr(b, "type", "") in ("text", "tool_use")]
            text = "".join(b.text for b in blocks if b.type == "text")
            calls = [ToolRequest(b.id, b.name, dict(b.input)) for b in blocks if b.type == "tool_use"]
            turn = Turn(text, calls, int(r.usage.input_tokens), int(r.usage.output_tokens))
        content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        content += [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.args} for c in calls]
        self.messages.append({"role": "assistant", "content": content})
        return turn

    def answer(self, results: list[tuple[ToolRequest, str, bool]]) -> None:
        self.messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": call.id, "content": text, "is_error": refused}
                    for call, text, refused in results
                ],
            }
        )


class OpenAIConversation(Conversation):
    def _tools(self) -> dict[str, Any]:
        tools = [
            {
                "type": "function",
                "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
            }
            for t in self.tools
        ]
        return {"tools": tools} if tools else {}

    def __init__(self, provider: Provider, system: str, prompt: str, tools: list[ToolSpec]) -> None:
        super().__init__(provider, system, prompt, tools)
        self.messages.insert(0, {"role": "system", "content": system})

    def ask(self) -> Turn:
        p = self.provider
        with p.calling():
            r = p.client.chat.completions.create(
                model=p.config.model,
                max_completion_tokens=p.config.max_tokens,
                messages=self.messages,
                **self._tools(),
                **p.sampling(),
            )
            message, usage = r.choices[0].message, r.usage
            asked = message.tool_calls or []
            if not isinstance(message.content, str) and not asked:
                raise CallFailed("malformed reply: the completion carries no text and no tool call")
            calls = [ToolRequest(c.id, c.function.name, _arguments(c.function.arguments)) for c in asked]
            turn = Turn(
                message.content or "",
                calls,
                int(usage.prompt_tokens) if usage else 0,
                int(usage.completion_tokens) if usage else 0,
            )
        said: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
        if asked:
            said["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.function.name, "arguments": c.function.arguments},
                }
                for c in asked
            ]
        self.messages.append(said)
        return turn

    def answer(self, results: list[tuple[ToolRequest, str, bool]]) -> None:
        for call, text, _ in results:
            self.messages.append({"role": "tool", "tool_call_id": call.id, "content": text})


def _arguments(text: str) -> dict[str, Any]:
    """A tool call's arguments, JSON text in OpenAI's format; arguments that do not parse are
    handed to the tool as they are, whose refusal the model then reads."""
    try:
        args = json.loads(text or "{}")
    except json.JSONDecodeError:
        return {"unparsed_arguments": text}
    return args if isinstance(args, dict) else {"unparsed_arguments": text}


def _said(e: Exception) -> str:
    """The provider's own words, on one line."""
    body = getattr(e, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"]).splitlines()[0]
    cause = e.__cause__ or e.__context__
    text = str(e) if not cause or str(e) not in ("Connection error.", "") else f"{e} ({cause})"
    return (text.splitlines() or [type(e).__name__])[0]
