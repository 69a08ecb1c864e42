"""An OpenAI-compatible HTTP API in front of the simulator (Starlette + uvicorn).

``POST /v1/chat/completions`` (non-streaming) and ``GET /v1/models``. The ``model`` field
picks the preset (``sim/default`` or ``default``). A request with ``seed`` is answered
deterministically; one without a seed draws a fresh sample, as a sampling model would.
Binds 127.0.0.1 unless told otherwise; ``api_key`` (or ``SIM_API_KEY``) turns on a
bearer-token check that answers 401 in OpenAI's error format.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from llm.sim.chat import simulate_reply
from llm.sim.embeddings import DEFAULT_EMBEDDING_DIMS, hashed_embedding
from llm.sim.extras import MAX_TOP_LOGPROBS, SimExtras
from llm.sim.presets import SimPreset
from llm.sim.registry import all_presets
from llm.sim.response import Classifier
from llm.sim.structured import read_format
from llm.sim.tasks import Answerer
from llm.sim.wire import choice_json, completion_json
from llm.specs import preset_name
from storage.errors import ConfigError

#: ``route(model, body)`` → an OpenAI chat-completion JSON, or ``None`` when not its model.
ModelRoute = Callable[[str, Mapping[str, Any]], dict[str, Any] | None]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765


async def _json_body(request: Request) -> Any:
    """The request's JSON body, or the 400 response that says it is not JSON."""
    try:
        return json.loads(await request.body())
    except (json.JSONDecodeError, UnicodeDecodeError):
        return _error(400, "Request body is not valid JSON.", "invalid_request_error", None)


def _error(status: int, message: str, type_: str, code: str | None) -> JSONResponse:
    return JSONResponse(
        {"error": {"message": message, "type": type_, "param": None, "code": code}},
        status_code=status,
    )


def _content_text(content: Any) -> str:
    # OpenAI allows content as a list of parts; the simulator reads only the text parts.
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(p.get("text", ""))
            for p in content
            if isinstance(p, dict) and p.get("type") == "text"
        )
    return ""


def _extras(body: dict[str, Any], messages: list[tuple[str, str]]) -> SimExtras | JSONResponse:
    """Read and check the request extras as vLLM's server does (400 for what it refuses)."""

    def bad(message: str) -> JSONResponse:
        return _error(400, message, "invalid_request_error", None)

    top = body.get("top_logprobs")
    if top is not None and (
        not isinstance(top, int) or isinstance(top, bool) or not 0 <= top <= MAX_TOP_LOGPROBS
    ):
        return bad(f"'top_logprobs' must be an integer from 0 to {MAX_TOP_LOGPROBS}.")
    if top is not None and not body.get("logprobs"):
        return bad("'top_logprobs' needs 'logprobs' set to true.")
    stop = body.get("stop")
    if isinstance(stop, str):
        stop = [stop]
    if stop is not None and (
        not isinstance(stop, list) or not all(isinstance(x, str) for x in stop)
    ):
        return bad("'stop' must be a string or a list of strings.")
    kwargs = body.get("chat_template_kwargs")
    if kwargs is not None and not isinstance(kwargs, dict):
        return bad("'chat_template_kwargs' must be an object.")
    cont = bool(body.get("continue_final_message"))
    if cont and body.get("add_generation_prompt"):
        return bad("'continue_final_message' and 'add_generation_prompt' cannot both be true.")
    if cont and (not messages or messages[-1][0] != "assistant"):
        return bad("'continue_final_message' needs the last message to be the assistant's.")
    thinking = (kwargs or {}).get("enable_thinking")
    return SimExtras(
        top_logprobs=(int(top or 0) if body.get("logprobs") else None),
        stop=tuple(stop or ()),
        continue_final_message=cont,
        enable_thinking=None if thinking is None else bool(thinking),
        template_kwargs=dict(kwargs or {}),
    )


def create_app(
    *,
    presets: dict[str, SimPreset] | None = None,
    api_key: str | None = None,
    classify_memory: Classifier | None = None,
    default_preset: str | None = None,
    answerers: Sequence[Answerer] = (),
    model_routes: Sequence[ModelRoute] = (),
    delay_s: float = 0.0,
    structured: str = "honour",
) -> Starlette:
    """Build the Starlette application.

    Args:
        presets: Presets served by name (default: every family's, see :mod:`llm.sim.registry`).
        default_preset: Preset also served under the bare model name ``sim``.
        api_key: When set, requests must carry ``Authorization: Bearer <api_key>``.
        classify_memory: Optional catalog-based classifier of memory lines.
        answerers: Extra answerers for requests of layers above ``llm`` (for example the
            ontology studio's labeling prompts; see :data:`llm.sim.tasks.Answerer`).
        model_routes: Simulators of other model families, asked first with the model name
            and the request body; one returning a completion answers the request (e.g.
            :class:`study.disposition.sim.responder.DispositionRoute` for ``disp-*`` arms).
        delay_s: Wait this long before answering each chat request (without holding a
            thread): a latency-bound endpoint, standing in for a GPU node in benchmarks.
        structured: What a request's structured output format gets: ``honour`` (the reply
            follows it, :mod:`llm.sim.structured`), ``reject`` (400, a server without
            structured outputs) or ``ignore`` (accepted, answered as free text).
    """
    if structured not in ("honour", "reject", "ignore"):
        raise ConfigError(f"structured must be honour, reject or ignore, not {structured!r}.")
    table = dict(presets or all_presets())
    if default_preset is not None:
        if default_preset not in table:
            raise ConfigError(
                f"Unknown simulator preset {default_preset!r}; known presets: "
                f"{', '.join(sorted(table))}."
            )
        # A bare ``sim`` model name (e.g. ``openai-api/local/sim``) gets the chosen preset.
        table.setdefault("sim", table[default_preset])
    expected = f"Bearer {api_key}".encode() if api_key else None

    def authorised(request: Request) -> bool:
        if expected is None:
            return True
        given = request.headers.get("authorization", "").encode()
        return hmac.compare_digest(given, expected)

    def unauthorised() -> JSONResponse:
        return _error(
            401, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key"
        )

    async def models(request: Request) -> JSONResponse:
        if not authorised(request):
            return unauthorised()
        data = [
            {"id": f"sim/{name}", "object": "model", "created": 0, "owned_by": "driftlens-sim"}
            for name in sorted(table)
            if name != "sim"
        ]
        return JSONResponse({"object": "list", "data": data})

    async def chat(request: Request) -> JSONResponse:
        if not authorised(request):
            return unauthorised()
        if delay_s > 0:
            await asyncio.sleep(delay_s)
        body = await _json_body(request)
        if isinstance(body, JSONResponse):
            return body
        if not isinstance(body, dict):
            return _error(400, "Request body must be a JSON object.", "invalid_request_error", None)
        model = str(body.get("model") or "")
        for route in model_routes:
            routed = route(model, body)
            if routed is not None:
                return JSONResponse(routed)
        preset = table.get(preset_name(model))
        if preset is None:
            return _error(
                404,
                f"The model `{model}` does not exist.",
                "invalid_request_error",
                "model_not_found",
            )
        if body.get("stream"):
            return _error(
                400, "Streaming is not supported by the simulator.", "invalid_request_error", None
            )
        raw = body.get("messages")
        if not isinstance(raw, list) or not raw:
            return _error(
                400, "'messages' must be a non-empty list.", "invalid_request_error", None
            )
        messages = [
            (str(m.get("role", "")), _content_text(m.get("content")))
            for m in raw
            if isinstance(m, dict)
        ]
        seed = body.get("seed")
        if seed is not None and not isinstance(seed, int):
            return _error(400, "'seed' must be an integer.", "invalid_request_error", None)
        extras = _extras(body, messages)
        if isinstance(extras, JSONResponse):
            return extras
        fmt = read_format(body)
        if isinstance(fmt, str):
            return _error(400, fmt, "invalid_request_error", None)
        if fmt is not None and structured == "reject":
            return _error(
                400,
                "This server does not support structured outputs (response_format).",
                "invalid_request_error",
                None,
            )
        if fmt is not None and structured == "honour":
            extras = replace(extras, response_format=fmt)
        n = int(body.get("n") or 1)
        max_tokens = body.get("max_completion_tokens") or body.get("max_tokens") or 2048
        choices: list[dict[str, Any]] = []
        prompt_tokens = completion_tokens = 0
        for k in range(n):
            # Without a seed every call is a fresh draw; with one, choice k is sample k.
            s = seed if seed is not None else secrets.randbits(31)
            out = simulate_reply(
                messages,
                preset=preset,
                sample_index=k,
                seed=s,
                extras=extras,
                max_tokens=int(max_tokens),
                classify_memory=classify_memory,
                answerers=answerers,
            )
            prompt_tokens = out.prompt_tokens
            completion_tokens += out.completion_tokens
            choices.append(choice_json(k, out.text, out.finish_reason, out.logprobs))
        return JSONResponse(
            completion_json(
                f"sim/{preset.name}",
                choices,
                prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens,
                system_fingerprint=f"driftlens-sim-v{preset.version}",
            )
        )

    async def embeddings(request: Request) -> JSONResponse:
        # Deterministic bag-of-words vectors (llm/sim/embeddings.py): enough for a
        # memory system's vector store to retrieve offline, with no model weights.
        if not authorised(request):
            return unauthorised()
        body = await _json_body(request)
        if isinstance(body, JSONResponse):
            return body
        raw = body.get("input") if isinstance(body, dict) else None
        texts = [raw] if isinstance(raw, str) else raw
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            return _error(
                400, "'input' must be a string or a list of strings.", "invalid_request_error", None
            )
        dims = body.get("dimensions") or DEFAULT_EMBEDDING_DIMS
        if not isinstance(dims, int) or not 1 <= dims <= 4096:
            return _error(400, "'dimensions' must be 1-4096.", "invalid_request_error", None)
        data = [
            {"object": "embedding", "index": i, "embedding": hashed_embedding(t, dims)}
            for i, t in enumerate(texts)
        ]
        n_words = sum(len(t.split()) for t in texts)
        return JSONResponse(
            {
                "object": "list",
                "data": data,
                "model": str(body.get("model") or "sim-embedding"),
                "usage": {"prompt_tokens": n_words, "total_tokens": n_words},
            }
        )

    return Starlette(
        routes=[
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/v1/embeddings", embeddings, methods=["POST"]),
            Route("/v1/models", models, methods=["GET"]),
        ]
    )


def bind_socket(host: str, port: int) -> socket.socket:
    """Bind a listening TCP socket, with a one-line :class:`ConfigError` when that fails."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ConfigError(
            f"Cannot listen on {host}:{port} ({exc.strerror or exc}); choose another --port."
        ) from None
    return sock


def serve(
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    *,
    api_key: str | None = None,
    classify_memory: Classifier | None = None,
    default_preset: str = "default",
    log_level: str = "warning",
    sock: socket.socket | None = None,
    answerers: Sequence[Answerer] = (),
    model_routes: Sequence[ModelRoute] = (),
    delay_s: float = 0.0,
) -> None:
    """Run the simulator API in the foreground until interrupted.

    Args:
        host: Interface to bind (127.0.0.1 by default; anything else exposes it).
        port: TCP port.
        api_key: Bearer token to require (default: ``SIM_API_KEY`` if set, else none).
        classify_memory: Optional catalog-based classifier of memory lines.
        default_preset: Preset answering the bare model name ``sim``.
        log_level: uvicorn log level.
        sock: A socket already bound by :func:`bind_socket` (then host and port are
            informational).
        answerers: Extra answerers for requests of layers above ``llm``.
        model_routes: Simulators of other model families (see :func:`create_app`).
        delay_s: Per-request delay (see :func:`create_app`).

    Raises:
        ConfigError: When the address cannot be bound (port in use, bad interface).
    """
    import uvicorn

    key = api_key if api_key is not None else (os.environ.get("SIM_API_KEY") or None)
    app = create_app(
        api_key=key,
        classify_memory=classify_memory,
        default_preset=default_preset,
        answerers=answerers,
        model_routes=model_routes,
        delay_s=delay_s,
    )
    sock = sock if sock is not None else bind_socket(host, port)
    config = uvicorn.Config(
        app, log_level=log_level, access_log=False, lifespan="off", backlog=2048
    )
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()


class BackgroundServer:
    """Run an ASGI app with uvicorn in a daemon thread on 127.0.0.1 (tests, demo, bench).

    ``with BackgroundServer(app) as base: ...`` yields ``http://127.0.0.1:PORT``; port 0
    picks a free port (the socket is bound before the thread starts, so no race).
    """

    def __init__(
        self, app: Any, *, host: str = DEFAULT_HOST, port: int = 0, path: str = ""
    ) -> None:
        self.app = app
        self.host = host
        self.port = port
        self.path = path
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._sock: socket.socket | None = None

    @property
    def url(self) -> str:
        """Base URL of the running server."""
        return f"http://{self.host}:{self.port}{self.path}"

    def start(self) -> str:
        """Start the server and wait until it accepts connections; return its URL."""
        import uvicorn

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        self.port = sock.getsockname()[1]
        self._sock = sock
        config = uvicorn.Config(
            self.app,
            log_level="warning",
            access_log=False,
            lifespan="off",
            loop="asyncio",
            backlog=2048,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run,
            kwargs={"sockets": [sock]},
            name=f"uvicorn-{self.port}",
            daemon=True,
        )
        self._thread.start()
        deadline = time.monotonic() + 15
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"server on {self.url} did not start")
            time.sleep(0.01)
        return self.url

    def stop(self) -> None:
        """Ask the server to exit and wait for its thread."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=15)
        if self._sock is not None:
            self._sock.close()

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class SimServer(BackgroundServer):
    """The simulator API in a background thread: ``with SimServer() as url`` (url ends in /v1).

    Args:
        api_key: Bearer token to require, if any.
        port: Port to bind (0 = a free one).
        presets: Presets to serve (default: the built-in ones).
        classify_memory: Optional catalog-based classifier of memory lines.
        answerers: Extra answerers for requests of layers above ``llm``.
        structured: ``honour``, ``reject`` or ``ignore`` structured output formats (see
            :func:`create_app`).
    """

    def __init__(
        self,
        *,
        api_key: str | None = None,
        port: int = 0,
        presets: dict[str, SimPreset] | None = None,
        classify_memory: Classifier | None = None,
        answerers: Sequence[Answerer] = (),
        structured: str = "honour",
    ) -> None:
        super().__init__(
            create_app(
                presets=presets,
                api_key=api_key,
                classify_memory=classify_memory,
                answerers=answerers,
                structured=structured,
            ),
            host=DEFAULT_HOST,
            port=port,
            path="/v1",
        )


def main(argv: list[str] | None = None) -> None:
    """``python -m llm.sim.server [--host H] [--port P] [--api-key K]`` (used by the bench)."""
    import argparse

    parser = argparse.ArgumentParser(description="DriftLens simulator, OpenAI-compatible API")
    parser.add_argument("--host", default=DEFAULT_HOST)
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument("--api-key", default=None)
    parser.add_argument("--preset", default="default")
    args = parser.parse_args(argv)
    serve(args.host, args.port, api_key=args.api_key, default_preset=args.preset)


if __name__ == "__main__":
    main()
