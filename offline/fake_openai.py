"""A local stand-in for a model's endpoint: an OpenAI-compatible server that checks the key and streams.

It answers what the platform's front door answers a client (vLLM's OpenAI server behind the gateway):
`GET /v1/models`, `POST /v1/chat/completions` and `POST /v1/completions`, streamed as server-sent events
(`data: {chunk}` then `data: [DONE]`) when the request asks for it; 401 without the right bearer key, 404
for another model, both in OpenAI's error shape. A hold before the first byte stands for the gateway
holding a request while a replica starts, and a delay per token for decoding, so a client's timeouts can
be exercised against it. Every request is recorded.

The README's first-request snippets run against it (tests/test_first_request.py); a benchmark client can
use it the same way. Standard library only: `python -m offline.fake_openai --model <name> --key <key>`
serves one until stopped.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class FakeModel:
    """What the fake serves and how slowly."""

    name: str
    api_key: str | None
    words: tuple[str, ...] = ("Hello", "from", "the", "fake", "model.")
    hold_seconds: float = 0.0
    """Before the first byte (the gateway's hold while a replica starts)."""
    token_seconds: float = 0.0
    """Between streamed tokens."""
    requests: list[dict[str, Any]] = field(default_factory=list)
    """Every request: method, path, its JSON body (None for a GET) and whether its key was accepted."""
    max_sequences: int | None = None
    """Requests it answers at once (a replica's batch); the rest wait their turn, as on a busy replica. None: all."""
    prefill_tokens_per_second: float | None = None
    """How fast it reads a prompt before the first token (a prompt's words count as its tokens). None: at once."""

    def __post_init__(self) -> None:
        self._slots = threading.BoundedSemaphore(self.max_sequences) if self.max_sequences else None

    @contextmanager
    def slot(self) -> Iterator[None]:
        """A place in the batch, waited for when it is full."""
        if self._slots is None:
            yield
            return
        with self._slots:
            yield

    def prefill_seconds(self, body: dict[str, Any]) -> float:
        if not self.prefill_tokens_per_second:
            return 0.0
        return _prompt_tokens(body) / self.prefill_tokens_per_second

    def answer(self, body: dict[str, Any]) -> list[str]:
        """Its words up to max_tokens; with vLLM's `ignore_eos`, exactly max_tokens of them (repeated)."""
        limit = int(body.get("max_tokens") or len(self.words))
        if body.get("ignore_eos"):
            return [self.words[i % len(self.words)] for i in range(limit)]
        return list(self.words)[:limit]


def _prompt_tokens(body: dict[str, Any]) -> int:
    """The prompt's words (a stand-in for its tokens): a completion's prompt or a chat's messages."""
    if isinstance(body.get("prompt"), str):
        return len(body["prompt"].split())
    return sum(len(str(m.get("content", "")).split()) for m in body.get("messages") or [] if isinstance(m, dict))


def _error(status: int, message: str, kind: str, code: str | None) -> tuple[int, dict[str, Any]]:
    return status, {"error": {"message": message, "type": kind, "param": None, "code": code}}


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _send_json(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _authorized(self) -> bool:
        key = self.server.model.api_key
        return key is None or self.headers.get("Authorization") == f"Bearer {key}"

    def do_GET(self) -> None:
        model = self.server.model
        model.requests.append({"method": "GET", "path": self.path, "body": None, "authorized": self._authorized()})
        if not self._authorized():
            self._send_json(*_error(401, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key"))
        elif self.path.rstrip("/") == "/v1/models":
            self._send_json(200, {"object": "list", "data": [{"id": model.name, "object": "model", "owned_by": "llm-platform"}]})
        else:
            self._send_json(*_error(404, f"No route for {self.path}", "invalid_request_error", None))

    def do_POST(self) -> None:
        model = self.server.model
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError:
            body = None
        model.requests.append({"method": "POST", "path": self.path, "body": body, "authorized": self._authorized()})
        chat = self.path == "/v1/chat/completions"
        if not self._authorized():
            self._send_json(*_error(401, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key"))
        elif self.path not in ("/v1/chat/completions", "/v1/completions"):
            self._send_json(*_error(404, f"No route for {self.path}", "invalid_request_error", None))
        elif not isinstance(body, dict):
            self._send_json(*_error(400, "The body is not JSON.", "invalid_request_error", None))
        elif body.get("model") != model.name:
            self._send_json(*_error(404, f"The model `{body.get('model')}` does not exist.", "invalid_request_error", "model_not_found"))
        else:
            time.sleep(model.hold_seconds)
            with model.slot():
                time.sleep(model.prefill_seconds(body))
                words = model.answer(body)
                usage = _usage(_prompt_tokens(body), len(words))
                if body.get("stream"):
                    self._stream(words, chat, usage if (body.get("stream_options") or {}).get("include_usage") else None)
                else:
                    self._send_json(200, _completion(model.name, " ".join(words), chat, usage))

    def _stream(self, words: list[str], chat: bool, usage: dict[str, int] | None = None) -> None:
        model = self.server.model
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        ident = f"cmpl-{uuid.uuid4().hex}"
        for i, word in enumerate(words):
            text = word if i == 0 else f" {word}"
            self._event(_chunk(ident, model.name, text, chat, first=i == 0, finish=None))
            time.sleep(model.token_seconds)
        self._event(_chunk(ident, model.name, "", chat, first=False, finish="length"))
        if usage is not None:  # OpenAI's stream_options.include_usage: a last chunk without choices
            self._event({**_chunk(ident, model.name, "", chat, first=False, finish=None), "choices": [], "usage": usage})
        self._write(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")

    def _event(self, body: dict[str, Any]) -> None:
        self._write(f"data: {json.dumps(body)}\n\n".encode())

    def _write(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


def _chunk(ident: str, model: str, text: str, chat: bool, *, first: bool, finish: str | None) -> dict[str, Any]:
    if chat:
        delta: dict[str, Any] = {"content": text} if text or not finish else {}
        if first:
            delta["role"] = "assistant"
        choice: dict[str, Any] = {"index": 0, "delta": delta, "finish_reason": finish}
        return {"id": ident, "object": "chat.completion.chunk", "created": int(time.time()), "model": model, "choices": [choice]}
    return {
        "id": ident,
        "object": "text_completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "text": text, "finish_reason": finish}],
    }


def _usage(prompt: int, completion: int) -> dict[str, int]:
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _completion(model: str, text: str, chat: bool, usage: dict[str, int]) -> dict[str, Any]:
    ident = f"cmpl-{uuid.uuid4().hex}"
    if chat:
        choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "length"}
        return {"id": ident, "object": "chat.completion", "created": int(time.time()), "model": model, "choices": [choice], "usage": usage}
    choice = {"index": 0, "text": text, "finish_reason": "length"}
    return {"id": ident, "object": "text_completion", "created": int(time.time()), "model": model, "choices": [choice], "usage": usage}


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, model: FakeModel, port: int) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.model = model

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gives up mid-answer (its timeout before the hold ends) is what clients do: not an error."""
        error = sys.exc_info()[1]
        if isinstance(error, ConnectionError):
            return
        super().handle_error(request, client_address)


@contextmanager
def serving(model: FakeModel, port: int = 0) -> Iterator[str]:
    """Serve the model on localhost (port 0: any free one) while the block runs; yields its base URL (`.../v1`)."""
    server = _Server(model, port)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="the served model name clients send")
    parser.add_argument("--key", default=None, help="the bearer key it requires (none: any)")
    parser.add_argument("--port", type=int, default=8081)
    parser.add_argument("--hold", type=float, default=0.0, help="seconds before the first byte")
    parser.add_argument("--token-seconds", type=float, default=0.0)
    args = parser.parse_args(argv)
    model = FakeModel(args.model, args.key, hold_seconds=args.hold, token_seconds=args.token_seconds)
    with serving(model, args.port) as url:
        print(f"serving {args.model} at {url} (Ctrl-C stops)", flush=True)
        with suppress(KeyboardInterrupt):
            threading.Event().wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
