"""Server settings: one validated model, from the CLI or the environment."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

ENV_SETTINGS = "RAGCITE_SERVER_SETTINGS"


class ServerSettings(BaseModel):
    """Everything ``ragcite serve`` can be told; safe defaults throughout."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    build_dir: Path
    host: str = "127.0.0.1"
    port: int = Field(8000, ge=0, le=65535)
    #: extractive measures best (benchmarks/answer_quality.py); "llm" loads a model
    generator: Literal["extractive", "llm"] = "extractive"
    model: str | None = Field(None, description="GGUF model path")
    llm_url: str | None = Field(None, description="OpenAI-compatible endpoint")
    embedding_model: str | None = None
    workers: int = Field(1, ge=1, le=64)
    #: generations waiting or running per process before 503s
    queue_size: int = Field(4, ge=1, le=1000)
    cors_origins: tuple[str, ...] = ()
    #: requests per minute per client address; 0 turns the limit off
    rate_limit: int = Field(120, ge=0)
    request_timeout: float = Field(60.0, gt=0)
    cache_size: int = Field(256, ge=0)
    max_body_bytes: int = Field(64 * 1024, ge=1024)
    #: answer from passages pushed to Qdrant (URL or local-mode folder)
    qdrant: str | None = None
    qdrant_collection: str = "ragcite"
