"""What a relayed request costs: an estimate before it is sent, its real usage after (answer or stream).

The Messages API reports input tokens in `message_start` and the cumulative usage in `message_delta`;
some upstreams (a LiteLLM proxy) put the input tokens only in `message_delta`. Each field's largest
value seen is the one that counts. A stream that ends without `message_stop` or an error event was cut:
it is charged its reservation (or what was seen, if more), never 0.
"""
from __future__ import annotations

import json

CHARS_PER_TOKEN = 3  # on the safe side: English runs near 4, code and JSON nearer 3
MEDIA_TOKENS = 3_000  # a base64 image or page, whatever its byte size (an image is at most ~1,600)
INPUT_FIELDS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def estimate_input(body: dict) -> int:
    """An upper estimate of the request's input tokens, from its text; base64 media count a flat amount each."""
    chars, media, todo = 0, 0, [body]
    while todo:
        item = todo.pop()
        if isinstance(item, dict):
            source = item.get("source")
            if isinstance(source, dict) and source.get("type") == "base64":
                media += 1
                todo.extend(value for key, value in item.items() if key != "source")
            else:
                todo.extend(item.values())
            chars += sum(len(key) for key in item)
        elif isinstance(item, list):
            todo.extend(item)
        elif isinstance(item, str):
            chars += len(item)
    return chars // CHARS_PER_TOKEN + media * MEDIA_TOKENS + 16


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
