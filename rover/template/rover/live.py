"""The Anthropic Messages API as a Model. Imported only when a live model is asked for: the SDK
takes about a second to load, and scripted runs and the grader never need it.
"""
from __future__ import annotations

import logging
import re
from typing import Callable

import anthropic

from rover.model import Reply

MAX_TOKENS = 8192  # well under the size where the SDK insists on streaming


class AnthropicModel:
    """Any server that speaks the Messages API: Anthropic's, or the one ANTHROPIC_BASE_URL names.

    The SDK retries 408/409/429/5xx/529 by itself (twice by default); `on_retry` hears about each
    retry, so a person watching sees why a turn is slow instead of a frozen screen.
    """

    def __init__(self, name: str, client: anthropic.Anthropic | None = None,
                 on_retry: Callable[[str], None] | None = None, max_tokens: int = MAX_TOKENS):
        self.name = name
        self.max_tokens = max_tokens
        self.client = client or anthropic.Anthropic()
        if on_retry:
            _report_retries(on_retry)

    def complete(self, system: str, messages: list[dict], tools: list[dict]) -> Reply:
        response = self.client.messages.create(
            model=self.name, max_tokens=self.max_tokens, system=_cached_system(system), messages=messages,
            tools=_cached_tools(tools),
        )
        content = [block.model_dump(mode="json", exclude_none=True) for block in response.content]
        usage = response.usage.model_dump(mode="json", exclude_none=True) if response.usage else {}
        return Reply(content, response.stop_reason or "end_turn", usage)


def _cached_system(system: str) -> list[dict] | str:
    """The system prompt is the same on every turn: mark it for prompt caching (cache reads cost a tenth)."""
    return [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}] if system else system


def _cached_tools(tools: list[dict]) -> list[dict]:
    """A cache breakpoint on the last tool caches every tool definition before it too."""
    return [*tools[:-1], {**tools[-1], "cache_control": {"type": "ephemeral"}}] if tools else tools


def describe_failure(failure: Exception) -> str | None:
    """One line for the API failures a person can act on; None for anything else."""
    if isinstance(failure, anthropic.AuthenticationError):
        return "the API rejected the key (401): check ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN)."
    if isinstance(failure, anthropic.NotFoundError) and "without a relay" in _detail(failure):
        return f"the class board answered: {_detail(failure)}"  # joined a class whose board relays no more
    if isinstance(failure, anthropic.NotFoundError):
        return f"the API does not know that model (404): {_detail(failure)}. Choose another with --model or ROVER_MODEL."
    if isinstance(failure, anthropic.APIConnectionError):
        return "could not reach the API: check the network, or ANTHROPIC_BASE_URL if you set it."
    if isinstance(failure, anthropic.APIStatusError):
        return f"the API answered {failure.status_code}: {_detail(failure)}"
    return None


def _detail(failure: anthropic.APIStatusError) -> str:
    body = failure.body if isinstance(failure.body, dict) else {}
    return str(body.get("error", {}).get("message") or failure.message)


class _RetryReporter(logging.Handler):
    """Turns the SDK's retry log lines into one readable line each."""

    def __init__(self, report: Callable[[str], None]):
        super().__init__(logging.DEBUG)
        self.report = report
        self.status = ""

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if status := re.match(r"Retrying due to status code (\d+)", message):
            self.status = status[1]
        elif wait := re.match(r"Retrying request to \S+ in ([\d.]+) seconds", message):
            why = f"the API answered {self.status}" if self.status else "the connection failed"
            self.report(f"{why}; retrying in {float(wait[1]):.1f} s")
            self.status = ""


def _report_retries(report: Callable[[str], None]) -> None:
    logger = logging.getLogger("anthropic._base_client")
    logger.handlers = [handler for handler in logger.handlers if not isinstance(handler, _RetryReporter)]
    logger.addHandler(_RetryReporter(report))
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
