"""What a relayed request costs: an estimate before it is sent, its real usage after (answer or stream).

The Messages API reports input tokens in `message_start` and the cumulative usage in `message_delta`;
some upstreams (a LiteLLM proxy) put the input tokens only in `message_delta`. Each field's largest
value seen is the one that counts. A stream that ends without `message_stop` or an error event was cut:
it is charged its reservation (or what was seen, if more), never 0.
"""
from __future__ import annotations

import json

CHARS_PER_TOKEN = 3  # on the safe side: English runs near 4, code and JSON nearer 3
# Worst cases for what the text does not show. The API takes a PDF of up to 100 pages, each page costing its
# text plus an image of it (up to ~3,000 tokens); an image is scaled to at most ~1,600 tokens whatever its size.
# A document or image by URL or file_id is fetched upstream, so only its worst case can be reserved.
DOCUMENT_TOKENS = 100 * 3_000
IMAGE_TOKENS = 1_600
# Server tools bring input of their own: each use adds what it fetched or found. A web_fetch use counts its
# max_content_tokens (when set) or 100,000; a web_search use 20,000 (about ten results); max_uses when set, else 10.
SERVER_TOOL_USE_TOKENS = {"web_fetch": 100_000, "web_search": 20_000}
SERVER_TOOL_USES = 10
INPUT_FIELDS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def estimate_input(body: dict) -> int:
    """An upper estimate of the request's input tokens: its text, plus the worst case of each document, image and
    server tool (web_fetch, web_search), which bring input the text does not show."""
    chars, extra, todo = 0, 0, [body]
    while todo:
        item = todo.pop()
        if isinstance(item, dict):
            kind, source = item.get("type"), item.get("source")
            if kind in ("document", "image") and isinstance(source, dict) and source.get("type") not in ("text", "content"):
                extra += DOCUMENT_TOKENS if kind == "document" else IMAGE_TOKENS
                todo.extend(value for key, value in item.items() if key != "source")  # its title, context, citations
            else:
                extra += server_tool_worst_case(item)
                todo.extend(item.values())
            chars += sum(len(key) for key in item)
        elif isinstance(item, list):
            todo.extend(item)
        elif isinstance(item, str):
            chars += len(item)
    return chars // CHARS_PER_TOKEN + extra + 16


def server_tool_worst_case(tool: dict) -> int:
    """The input a server tool definition (`{"type": "web_fetch_20250910", ...}`) may add; 0 for anything else."""
    kind = tool.get("type")
    family = next((name for name in SERVER_TOOL_USE_TOKENS if isinstance(kind, str) and kind.startswith(name + "_")), None)
    if family is None or "name" not in tool:
        return 0
    per_use = _int(tool.get("max_content_tokens")) or SERVER_TOOL_USE_TOKENS[family]
    return per_use * (_int(tool.get("max_uses")) or SERVER_TOOL_USES)


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
