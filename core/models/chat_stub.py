"""A local OpenAI-compatible chat-completions server that replays a recording.

``python -m core.models.chat_stub`` serves one recording of ``data/recordings`` on 127.0.0.1 over
real HTTP, so a trainer can show a live model route without a network or a key that costs money,
and the tests can drive the real ``openai`` client against it::

    python -m core.models.chat_stub --task T-65273 --model chat-small --repeat 1 --port 8000

It answers ``POST /v1/chat/completions`` with the recording's turn at the position the request
has reached (the number of assistant messages in it, as the recorded model counts), as one tool
call (a read-only tool, or ``finish`` with the final turn's fields) with the turn's usage in
tokens, and prints one line per call on stderr (its tokens and their cost at the recording's model's
prices). Past the recording's last turn it answers
HTTP 400. With ``--key-env VAR`` only the key in ``$VAR`` is accepted (HTTP 401 otherwise);
without it any key is.

:class:`ChatStub` is the same server for Python (the tests): ``calls`` counts the requests it
received, ``requests`` keeps their bodies, ``fail`` queues answers to give instead, first to
last (an HTTP status such as 401, 429 or 500, ``"malformed"``: a 200 without choices,
``"bad-args"``: a tool call whose arguments are not JSON, ``"slow"``: the answer after
``slow_s`` seconds, or a dict such as ``{"arguments": '{"order_id": ["LK-507862"]}'}``: the
turn's answer with its function's ``name`` or ``arguments`` text replaced, any tool call a model
could make), and ``on_request(n)`` is called with each request's number before it is answered.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from core.ground.data import FinalTurn, ToolCallTurn, load_recordings
from core.ground.errors import BadArgument, ResolverError
from core.models.pricing import cost_usd, show_usd


class ChatStub:
    """Serve ``task``'s recording ``variant/model#repeat`` on 127.0.0.1.

    Args:
        task, variant, model, repeat: the recording (``T-65273``, ``agent``, ``chat-small``, 1).
        port: the TCP port; 0 (the default) takes a free one.
        key: the only API key accepted (HTTP 401 for another); None accepts any.
        say: called with one line per call answered (the command prints it on stderr).

    Attributes:
        url: the base URL to give a route (``http://127.0.0.1:PORT/v1``).

    Raises:
        TaskNotFound: no recordings for ``task``.
        BadArgument: no such recording, or the port cannot be taken (one sentence each).
    """

    def __init__(
        self,
        task: str = "T-65273",
        variant: str = "agent",
        model: str = "chat-small",
        repeat: int = 1,
        *,
        port: int = 0,
        key: str | None = None,
        say: Callable[[str], None] | None = None,
    ) -> None:
        runs = load_recordings(task).runs
        match = [r for r in runs if (r.variant, r.model, r.repeat) == (variant, model, repeat)]
        if not match:
            have = ", ".join(f"{r.variant}/{r.model}#{r.repeat}" for r in runs)
            raise BadArgument(f"{task} has no recording {variant}/{model}#{repeat}; there are {have}.")
        self.name = f"{task} {variant}/{model}#{repeat}"
        self.model = model
        self.turns: list[ToolCallTurn | FinalTurn] = list(match[0].turns)
        self.calls = 0
        self.requests: list[dict[str, Any]] = []
        self.fail: list[int | str | dict[str, str]] = []
        self.slow_s = 3.0
        self.key = key
        self.on_request: Callable[[int], None] | None = None
        self._say = say
        self._lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                try:
                    body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                    position = sum(1 for m in body["messages"] if m.get("role") == "assistant")
                except (ValueError, KeyError, TypeError, AttributeError):
                    return self._send(400, {"error": {"message": "the body is not a chat-completions request"}})
                with stub._lock:
                    stub.calls += 1
                    n = stub.calls
                    stub.requests.append(body)
                    how = stub.fail.pop(0) if stub.fail else None
                if stub.on_request is not None:
                    stub.on_request(n)
                if stub.key is not None and self.headers.get("Authorization") != f"Bearer {stub.key}":
                    return self._send(401, {"error": {"message": "bad key", "type": "invalid_request_error"}})
                if isinstance(how, int):
                    return self._send(how, {"error": {"message": f"status {how}"}}, {"retry-after-ms": "5"})
                if how == "malformed":
                    return self._send(200, {"id": "x", "object": "chat.completion", "created": 0, "model": "m"})
                if how == "slow":
                    time.sleep(stub.slow_s)
                if position >= len(stub.turns):
                    message = f"{stub.name} has {len(stub.turns)} turns; turn {position + 1} was asked for"
                    return self._send(400, {"error": {"message": message, "type": "invalid_request_error"}})
                answer = stub.answer(position, bad_args=how == "bad-args", override=how if isinstance(how, dict) else None)
                if stub._say is not None:
                    call = answer["choices"][0]["message"]["tool_calls"][0]["function"]["name"]
                    usage = answer["usage"]
                    cost = show_usd(cost_usd(stub.model, usage["prompt_tokens"], usage["completion_tokens"]))
                    stub._say(
                        f"call {n}: turn {position + 1} of {len(stub.turns)}, {call} "
                        f"({usage['prompt_tokens']} tokens in, {usage['completion_tokens']} out, {cost} as {stub.model})"
                    )
                self._send(200, answer)

            def _send(self, code: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
                data = json.dumps(payload).encode()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client gave up or died
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)

        try:
            self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        except OSError as exc:
            raise BadArgument(f"Cannot serve on 127.0.0.1 port {port}: {exc.strerror or exc}.") from None
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def answer(self, position: int, bad_args: bool = False, override: dict[str, str] | None = None) -> dict[str, Any]:
        """The chat completion (a JSON object) for turn ``position`` (0-based) of the recording:
        one tool call with the ID ``call_<position>``, and the turn's usage in tokens.
        ``bad_args`` makes its arguments text not JSON; ``override`` replaces the call's
        ``name`` or ``arguments`` (text, sent as given), for an answer no recording holds."""
        turn = self.turns[position]
        if isinstance(turn, FinalTurn):
            name, args = "finish", turn.model_dump(exclude={"usage", "kind"})
        else:
            name, args = turn.tool, turn.args
        function = {"name": name, "arguments": "{not json" if bad_args else json.dumps(args), **(override or {})}
        call = {"id": f"call_{position}", "type": "function", "function": function}
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


def main(argv: list[str] | None = None) -> int:
    """``python -m core.models.chat_stub``: serve a recording until Ctrl-C. Exit 0 on Ctrl-C; 2 with one
    sentence for a bad option, an unknown ticket or recording, or a port that cannot be taken."""
    parser = argparse.ArgumentParser(
        prog="python -m core.models.chat_stub",
        description="Serve one recording of data/recordings as an OpenAI-compatible chat-completions server on 127.0.0.1.",
    )
    parser.add_argument("--task", default="T-65273", help="the ticket (default T-65273)")
    parser.add_argument("--variant", default="agent", help="the recording's variant (default agent)")
    parser.add_argument("--model", default="chat-small", help="the recording's model (default chat-small)")
    parser.add_argument("--repeat", type=int, default=1, help="the recording's repeat (default 1)")
    parser.add_argument("--port", type=int, default=8000, help="the TCP port on 127.0.0.1 (default 8000; 0: any free one)")
    parser.add_argument("--key-env", default=None, help="accept only the key in this environment variable (default: any key)")
    args = parser.parse_args(argv)
    try:
        key = None
        if args.key_env is not None:
            key = os.environ.get(args.key_env) or None
            if key is None:
                raise BadArgument(f"--key-env names ${args.key_env}, which is not set; set it or leave --key-env out.")
        if not 0 <= args.port <= 65535:
            raise BadArgument(f"--port is a TCP port from 0 to 65535, not {args.port}.")
        stub = ChatStub(
            args.task,
            args.variant,
            args.model,
            args.repeat,
            port=args.port,
            key=key,
            say=lambda line: print(line, file=sys.stderr),
        )
    except ResolverError as exc:
        print(f"resolver: {exc}", file=sys.stderr)
        return 2
    print(f"Serving {stub.name} at {stub.url} (Ctrl-C stops).", flush=True)
    try:
        stub.server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        stub.server.server_close()
    print(f"{stub.calls} call(s) answered.", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
