"""Stand-in for an inference engine (vLLM and its peers cannot run here): one per placed
replica, speaking the part of the OpenAI API a gateway relies on. The same program, with
``--any-model``, TLS and ``--api-key-env``, stands in for a third-party provider
(internet.py).

What it fakes, and only that:

* ``POST /v1/chat/completions`` (and ``/v1/completions``): answers as the model
  name it serves (``--served-model-name``, which Fleetgate injects), never the
  name a caller asked for, with ``usage`` counting prompt tokens (words of the
  messages) and completion tokens (the words it answers); with ``"stream":
  true`` as server-sent events ending ``data: [DONE]``, and the usage in a
  last chunk when ``stream_options.include_usage`` asks for it, as vLLM does;
  a request naming another model gets vLLM's 404 error body;
* ``GET /v1/models``, ``GET /health``;
* faults on command (``POST /fault`` ``{"mode": "ok"|"503"|"slow"|"dead"}``):
  503 with an error body, answers after ``FAULT_SLOW_S``, or the connection
  closed without an answer;
* ``GET /requests``: every request it took (path, headers, body), for drills
  that assert what reached an engine.

As a provider: ``--any-model`` answers as whatever model the request names (a
provider serves its catalogue); ``--certfile``/``--keyfile`` serve TLS, and
``--control-port`` serves the same endpoints over plain HTTP for the drills;
``--api-key-env VAR`` answers a request whose ``Authorization`` is not ``Bearer``
and the value of VAR with OpenAI's 401 body.

Run: ``python -m plane.engine [--port P] --served-model-name NAME [vLLM's other flags]``.
"""

import argparse
import json
import os
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FAULT_SLOW_S = 30.0
FAULTS = ("ok", "503", "slow", "dead")


class Engine:
    def __init__(self, served: str, api_key: str | None = None) -> None:
        self.served = served  # empty: a provider, answering as the model asked for
        self.api_key = api_key
        self.fault = "ok"
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def model(self, body: dict[str, Any]) -> str:
        """The model it answers as: the one it serves, or a provider's, the one asked for."""
        return self.served or str(body.get("model") or "")

    def authorized(self, authorization: str | None) -> bool:
        return self.api_key is None or authorization == f"Bearer {self.api_key}"

    def answer(self, body: dict[str, Any]) -> tuple[str, dict[str, int]]:
        """The reply's text and its usage."""
        messages = body.get("messages") or [{"content": body.get("prompt", "")}]
        prompt = " ".join(str(m.get("content", "")) for m in messages)
        text = f"{self.model(body)} answers: {prompt}"
        usage = {"prompt_tokens": len(prompt.split()), "completion_tokens": len(text.split())}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        return text, usage


def handler(engine: Engine) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass  # one line a request would be noise; /requests has them

        def _send(self, status: int, body: Any, content_type: str = "application/json") -> None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path == "/health":
                self._send(200, b"", "text/plain")
            elif self.path == "/v1/models":
                self._send(
                    200, {"object": "list", "data": [{"id": engine.served, "object": "model"}]}
                )
            elif self.path == "/requests":
                with engine.lock:
                    self._send(200, engine.requests)
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                self._send(400, {"error": {"message": "the body is not JSON", "code": 400}})
                return
            if self.path == "/fault":
                if body.get("mode") not in FAULTS:
                    self._send(400, {"error": {"message": f"mode is one of {FAULTS}"}})
                    return
                engine.fault = body["mode"]
                self._send(200, {"mode": engine.fault})
                return
            with engine.lock:
                engine.requests.append(
                    {"path": self.path, "headers": dict(self.headers.items()), "body": body}
                )
            if self.path not in ("/v1/chat/completions", "/v1/completions"):
                self._send(404, {"error": {"message": f"no route {self.path}"}})
            elif not engine.authorized(self.headers.get("Authorization")):
                # OpenAI's answer to a missing or wrong key.
                message = "Incorrect API key provided."
                error = {"message": message, "type": "invalid_request_error"}
                self._send(401, {"error": {**error, "code": "invalid_api_key"}})
            elif engine.fault == "dead":
                self.close_connection = True
                self.connection.close()
            elif engine.fault == "503":
                self._send(503, {"error": {"message": "engine unavailable", "code": 503}})
            else:
                if engine.fault == "slow":
                    time.sleep(FAULT_SLOW_S)
                self._complete(body)

        def _complete(self, body: dict[str, Any]) -> None:
            served = engine.model(body)
            if body.get("model") != served:
                # vLLM's answer to a model it does not serve (its OpenAI server, 404).
                message = f"The model `{body.get('model')}` does not exist."
                self._send(404, {"error": {"message": message, "code": 404}})
                return
            text, usage = engine.answer(body)
            chat = self.path == "/v1/chat/completions"
            ident = f"cmpl-{len(engine.requests)}"
            if not body.get("stream"):
                choice: dict[str, Any] = {"index": 0, "finish_reason": "stop"}
                if chat:
                    choice["message"] = {"role": "assistant", "content": text}
                else:
                    choice["text"] = text
                kind = "chat.completion" if chat else "text_completion"
                self._send(
                    200,
                    {
                        "id": ident,
                        "object": kind,
                        "created": int(time.time()),
                        "model": served,
                        "choices": [choice],
                        "usage": usage,
                    },
                )
                return
            with_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            self._stream(ident, served, text, usage, with_usage)

        def _stream(
            self, ident: str, served: str, text: str, usage: dict[str, int], with_usage: bool
        ) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            base = {"id": ident, "object": "chat.completion.chunk", "created": int(time.time())}
            chunks: list[dict[str, Any]] = [
                {
                    **base,
                    "model": served,
                    "choices": [{"index": 0, "delta": {"content": w + " "}}],
                }
                for w in text.split()
            ]
            chunks.append(
                {
                    **base,
                    "model": served,
                    "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                }
            )
            if with_usage:
                chunks.append({**base, "model": served, "choices": [], "usage": usage})
            events = [f"data: {json.dumps(c)}\n\n" for c in chunks] + ["data: [DONE]\n\n"]
            for event in events:
                data = event.encode()
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")

    return Handler


def main() -> None:
    # vLLM's command line: the flags read here, every other one (weights, parallelism,
    # memory) taken and ignored; the served name defaults to the model's, as vLLM's does.
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--model", default="")
    parser.add_argument("--served-model-name", default="")
    parser.add_argument("--any-model", action="store_true")
    parser.add_argument("--certfile", default="")
    parser.add_argument("--keyfile", default="")
    parser.add_argument("--control-port", type=int, default=0)
    parser.add_argument("--api-key-env", default="")
    args, _ = parser.parse_known_args()
    served = "" if args.any_model else args.served_model_name or args.model
    if not served and not args.any_model:
        parser.error("--served-model-name, --model or --any-model is required")
    api_key = os.environ[args.api_key_env] if args.api_key_env else None
    answers = handler(Engine(served, api_key))
    server = ThreadingHTTPServer((args.host, args.port), answers)
    server.daemon_threads = True
    if args.certfile:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.certfile, args.keyfile)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    if args.control_port:
        control = ThreadingHTTPServer((args.host, args.control_port), answers)
        control.daemon_threads = True
        threading.Thread(target=control.serve_forever, daemon=True).start()
    server.serve_forever()


if __name__ == "__main__":
    main()
