"""What a relayed request costs: an estimate before it is sent, its real usage after (answer or stream).

The Messages API reports input tokens in `message_start` and the cumulative usage in `message_delta`;
some upstreams (a LiteLLM proxy) put the input tokens only in `message_delta`. Each field's largest
value seen is the one that counts. A stream that ends without `message_stop` or an error event was cut:
it is charged its reservation (or what was seen, if more), never 0.
"""
from __future__ import annotations

import json

CHARS_PER_TOKEN = 3  # on the safe side: English runs near 4, code and JSON nearer 3
# No request's input passes its model's context window. A document whose pages the text does not show (a PDF, or
# anything by URL or file_id: up to 600 pages with the 1M context) is reserved at that whole window; an image is
# scaled to at most ~1,600 tokens whatever its size, so it is reserved at that.
CONTEXT_WINDOW = 200_000
LONG_CONTEXT_WINDOW, LONG_CONTEXT_BETA = 1_000_000, "context-1m"
IMAGE_TOKENS = 1_600
# What may bring input the body does not show, past any bound the relay could hold: an MCP server's tools, a code
# execution container's files, and server tools (web_fetch, web_search, code execution, tool search...), whose
# results the API feeds back to the model again and again within one request. Tools run by the client
# (a custom tool, or the Anthropic-defined ones below) bring theirs back in the next request's body, where it shows.
UNSEEN_FIELDS = ("mcp_servers", "container")
CLIENT_TOOL_TYPES = ("custom", "bash_", "text_editor_", "computer_", "memory_")
INPUT_FIELDS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def context_window(beta: str | None) -> int:
    """The context window a request may fill: 1M with the long-context beta asked for, else 200k."""
    return LONG_CONTEXT_WINDOW if beta and LONG_CONTEXT_BETA in beta else CONTEXT_WINDOW


def unseen_input(body: dict) -> str:
    """What in the request may bring input its body does not show and no reservation bounds ("" when nothing does)."""
    for field in UNSEEN_FIELDS:
        if body.get(field) is not None:
            return f"`{field}`"
    tools = body.get("tools")
    for tool in tools if isinstance(tools, list) else []:
        kind = tool.get("type") if isinstance(tool, dict) else None
        if kind is not None and not (isinstance(kind, str) and kind.startswith(CLIENT_TOOL_TYPES)):
            return f"the server tool {str(kind)[:60]!r}"
    return ""


def estimate_input(body: dict, window: int = CONTEXT_WINDOW) -> int:
    """An upper estimate of the request's input tokens, at most `window`: its text, plus the worst case of each
    image; the whole window when a document's pages are not in the text."""
    chars, extra, todo = 0, 0, [body]
    while todo:
        item = todo.pop()
        if isinstance(item, dict):
            kind, source = item.get("type"), item.get("source")
            if kind in ("document", "image") and isinstance(source, dict) and source.get("type") not in ("text", "content"):
                if kind == "document":
                    return window
                extra += IMAGE_TOKENS
                todo.extend(value for key, value in item.items() if key != "source")  # its title, context, citations
            else:
                todo.extend(item.values())
            chars += sum(len(key) for key in item)
        elif isinstance(item, list):
            todo.extend(item)
        elif isinstance(item, str):
            chars += len(item)
    return min(window, chars // CHARS_PER_TOKEN + extra + 16)


def usage_of(content: bytes) -> tuple[int, int]:
    """(input, output) tokens of a whole (not streamed) answer; (0, 0) when it carries none."""
    try:
        usage = json.loads(content).get("usage")
    except (ValueError, AttributeError):
        return 0, 0
    usage = usage if isinstance(usage, dict) else {}
    return sum(_int(usage.get(key)) for key in INPUT_FIELDS), _int(usage.get("output_tokens"))


class StreamUsage:
    """Reads the usage out of a server-sent event stream as it passes, chunk by chunk."""

    def __init__(self):
        self.buffer = b""
        self.seen: dict[str, int] = {}
        self.ended = False  # message_stop or an error event: the stream ended as the API ends one

    def feed(self, chunk: bytes) -> None:
        self.buffer += chunk
        *lines, self.buffer = self.buffer.split(b"\n")
        for line in lines:
            if line.startswith(b"data:") and (b'"usage"' in line or b"message_stop" in line or b'"error"' in line):
                self._event(line[5:])

    def charge(self, input_estimate: int, max_tokens: int) -> tuple[int, int]:
        """(input, output) tokens to charge: what the stream reported, or for a cut one, at least its reservation."""
        tokens_in = sum(self.seen.get(key, 0) for key in INPUT_FIELDS)
        tokens_out = self.seen.get("output_tokens", 0)
        if self.ended and tokens_in + tokens_out:
            return tokens_in, tokens_out
        if self.ended and "error" in self.seen:  # the API ended it with an error event before any usage: nothing billed
            return 0, 0
        return max(tokens_in, input_estimate), max(tokens_out, max_tokens)

    def _event(self, data: bytes) -> None:
        try:
            event = json.loads(data)
        except ValueError:
            return
        if not isinstance(event, dict):
            return
        kind = event.get("type")
        usage = (event.get("message") or {}).get("usage") if kind == "message_start" else event.get("usage")
        if isinstance(usage, dict):
            for key in (*INPUT_FIELDS, "output_tokens"):
                self.seen[key] = max(self.seen.get(key, 0), _int(usage.get(key)))
        if kind in ("message_stop", "error"):
            self.ended = True
            if kind == "error":
                self.seen["error"] = 1


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
