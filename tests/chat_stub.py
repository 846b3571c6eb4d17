"""A local OpenAI-compatible chat-completions server for the live model's tests (issue 26).

A real HTTP server on 127.0.0.1 (``http.server`` in a thread) that speaks the protocol: it
replays one recording of ``data/recordings`` as tool calls, turn by turn (the turn is the number
of assistant messages in the request, as the recorded model counts), with each turn's usage, and
counts the calls it answered. ``fail`` queues answers to give instead, first to last: an HTTP
status (401, 429, 500 ...), ``"malformed"`` (a 200 without choices), ``"bad-args"`` (a tool call
whose arguments are not JSON) or ``"slow"`` (an answer after ``slow_s`` seconds).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from core.data import FinalTurn, load_recordings


class ChatStub:
    """Serve ``task``'s recording ``variant/model#repeat``; ``url`` is the base URL (``/v1``)."""

    def __init__(self, task: str = "T-65273", variant: str = "agent", model: str = "chat-small", repeat: int = 1) -> None:
        runs = load_recordings(task).runs
        self.turns = next(r for r in runs if (r.variant, r.model, r.repeat) == (variant, model, repeat)).turns
        self.calls = 0
        self.requests: list[dict[str, Any]] = []
        self.fail: list[int | str] = []
        self.slow_s = 3.0
        self.key = "sk-test"
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stub.calls += 1
                stub.requests.append(body)
                if self.headers.get("Authorization") != f"Bearer {stub.key}":
                    return self._send(401, {"error": {"message": "bad key", "type": "invalid_request_error"}})
                how = stub.fail.pop(0) if stub.fail else None
                if isinstance(how, int):
                    return self._send(how, {"error": {"message": f"status {how}"}}, {"retry-after-ms": "5"})
                if how == "malformed":
                    return self._send(200, {"id": "x", "object": "chat.completion", "created": 0, "model": "m"})
                if how == "slow":
                    time.sleep(stub.slow_s)
                position = sum(1 for m in body["messages"] if m["role"] == "assistant")
                self._send(200, stub.answer(position, bad_args=how == "bad-args"))

            def _send(self, code: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
                data = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout)
                    self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def answer(self, position: int, bad_args: bool = False) -> dict[str, Any]:
        """The chat completion for turn ``position`` (0-based) of the recording."""
        turn = self.turns[position]
        if isinstance(turn, FinalTurn):
            name, args = "finish", turn.model_dump(exclude={"usage", "kind"})
        else:
            name, args = turn.tool, turn.args
        call = {"id": f"call_{position}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        if bad_args:
            call["function"]["arguments"] = "{not json"
        return {
            "id": f"chatcmpl-{position}",
            "object": "chat.completion",
            "created": 0,
            "model": "stub-model",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {"role": "assistant", "content": None, "tool_calls": [call]},
                }
            ],
            "usage": {
                "prompt_tokens": turn.usage.tokens_in,
                "completion_tokens": turn.usage.tokens_out,
                "total_tokens": turn.usage.tokens_in + turn.usage.tokens_out,
            },
        }

    def __enter__(self) -> ChatStub:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
