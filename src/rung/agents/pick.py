"""The agent a command line names, built from its options; every bad option is one UsageError."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rung.agents import Agent
from rung.errors import UsageError

AGENTS = ("tune", "replay", "llm")


@dataclass
class AgentOptions:
    start: Path | None = None  # --from
    replay: list[Path] = field(default_factory=list)
    llm_config: Path | None = None  # a YAML file of LLMConfig settings
    llm: dict[str, Any] = field(default_factory=dict)  # flag overrides: provider, model, base_url
    workspace: Path | None = None  # where .rung/context.db lives, for the llm agent's snippets
    needs_prices: bool = False  # a money budget is set: the model's prices must be known
    candidates: int = 16  # most versions the loop can climb (rounds x parallel): the tuner's budget


def make_agent(name: str, options: AgentOptions) -> Agent:
    if name == "replay":
        from rung.agents.replay import ConversationReplay, ReplayAgent

        if not options.replay:
            raise UsageError("--agent replay needs at least one --replay FILE")
        if options.replay[0].suffix == ".json":
            if len(options.replay) > 1:
                raise UsageError("--agent replay takes one recorded conversation file (.json)")
            return ConversationReplay(options.replay[0], options.workspace)
        return ReplayAgent(options.replay)
    if name == "tune":
        from rung.agents.tune import TuneAgent

        if options.start is None:
            raise UsageError("--agent tune needs --from SOLUTION: the version whose TUNE values it varies")
        study_dir = options.workspace / ".rung" / "tune" if options.workspace is not None else None
        return TuneAgent(options.start.read_text(), budget=options.candidates, study_dir=study_dir)
    if name == "llm":
        from rung.agents.llm import LLMAgent
        from rung.agents.providers import LLMConfig, Provider

        config_path = options.llm_config
        if config_path is None and options.workspace is not None:
            default = options.workspace / ".rung" / "llm.yml"
            config_path = default if default.is_file() else None
        config = LLMConfig.load(config_path, **options.llm)
        if options.needs_prices and config.cost(1, 1) is None:
            raise UsageError(
                "a money budget needs the model's prices: price_in_usd_per_mtok and "
                "price_out_usd_per_mtok in the LLM config"
            )
        provider = Provider(config)
        return LLMAgent(provider, _context_search(options.workspace), options.workspace)
    raise UsageError(f"unknown agent {name!r} (known: {', '.join(AGENTS)})")


def _context_search(workspace: Path | None) -> Any:
    """The workspace's context index as a search function, or None when nothing is indexed."""
    if workspace is None or not (workspace / ".rung" / "context.db").is_file():
        return None
    from rung.context import ContextIndex

    index = ContextIndex(workspace)
    return lambda query: index.search(query, limit=4)
