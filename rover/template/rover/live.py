"""The Anthropic Messages API as a Model. Imported only when a live model is asked for."""
from __future__ import annotations

import anthropic

from rover.model import Reply


class AnthropicModel:
    """Any server that speaks the Messages API: Anthropic's, or one named by ANTHROPIC_BASE_URL."""

    def __init__(self, name: str, max_tokens: int = 8192, client: anthropic.Anthropic | None = None):
        self.name = name
        self.max_tokens = max_tokens
        self.client = client or anthropic.Anthropic()

    def complete(self, system: str, messages: list[dict], tools: list[dict]) -> Reply:
        response = self.client.messages.create(
            model=self.name, max_tokens=self.max_tokens, system=system, messages=messages, tools=tools
        )
        content = [block.model_dump(exclude_none=True) for block in response.content]
        usage = response.usage.model_dump(exclude_none=True) if response.usage else {}
        return Reply(content, response.stop_reason or "end_turn", usage)


def describe_failure(failure: Exception) -> str:
    """One line for the errors a person can fix: a bad key, an unknown model, no connection."""
    if isinstance(failure, anthropic.AuthenticationError):
        return "the API rejected the key (401): check ANTHROPIC_API_KEY."
    if isinstance(failure, anthropic.NotFoundError):
        return f"the API does not know that model (404): {failure.message}. Pick another with --model."
    if isinstance(failure, anthropic.APIConnectionError):
        return "could not reach the API: check the network, or ANTHROPIC_BASE_URL if you set it."
    if isinstance(failure, anthropic.APIStatusError):
        return f"the API answered {failure.status_code}: {failure.message}"
    return f"{type(failure).__name__}: {failure}"
