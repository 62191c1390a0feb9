"""A small fake Messages API on 127.0.0.1: answers POST /v1/messages from a queue, records requests."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeMessagesAPI:
    def __init__(self) -> None:
        self.answers: list[tuple[int, dict, dict]] = []  # (status, body, headers)
        self.requests: list[dict] = []
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                api.requests.append({"path": self.path, "body": body, "headers": dict(self.headers)})
                status, answer, headers = api.answers.pop(0) if api.answers else (500, {"error": "no answer queued"}, {})
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def reply(self, *blocks: dict, stop: str = "end_turn", usage: dict | None = None) -> None:
        self.answers.append((200, message(list(blocks), stop, usage), {}))

    def fail(self, status: int, kind: str, text: str, headers: dict | None = None) -> None:
        self.answers.append((status, {"type": "error", "error": {"type": kind, "message": text}}, headers or {}))

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def message(content: list[dict], stop: str = "end_turn", usage: dict | None = None) -> dict:
    return {
        "id": "msg_fake", "type": "message", "role": "assistant", "model": "claude-sonnet-5-5",
        "content": content, "stop_reason": stop, "stop_sequence": None,
        "usage": usage or {"input_tokens": 100, "output_tokens": 20, "cache_read_input_tokens": 0},
    }
