"""Server settings: one validated model, from the CLI or the environment."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from sphinx_ragcite.errors import RagciteError
from sphinx_ragcite.questions.log import MAX_DAYS
from sphinx_ragcite.server.schemas import MAX_BODY_BYTES
from sphinx_ragcite.server.sites import check_site_name

ENV_SETTINGS = "RAGCITE_SERVER_SETTINGS"
#: ``--timeout`` at most: a day (``1e308`` overflows the clocks generation
#: waits on, and every generation would fail).
MAX_TIMEOUT = 24 * 3600.0
#: (name, BUILD_DIR) of ``--site NAME=BUILD_DIR``
SiteSpec = tuple[str, Path]


class ServerSettings(BaseModel):
    """Everything ``ragcite serve`` can be told; safe defaults throughout."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: the one site, served at ``/`` (``ragcite serve BUILD_DIR``)
    build_dir: Path | None = None
    #: several sites, each at ``/NAME/`` (``--site NAME=BUILD_DIR``, repeated)
    sites: tuple[SiteSpec, ...] = ()
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
    #: the proxies whose X-Forwarded-For (the client's address, so its rate
    #: limit) and X-Forwarded-Proto are believed: IP addresses, networks, or
    #: "*" for any (``--forwarded-allow-ips``); none: the peer is the client
    forwarded_allow_ips: tuple[str, ...] = ()
    request_timeout: float = Field(60.0, gt=0, le=MAX_TIMEOUT)
    cache_size: int = Field(256, ge=0)
    #: admits the largest valid request, however it is escaped (schemas.py)
    max_body_bytes: int = Field(MAX_BODY_BYTES, ge=1024)
    #: answer from passages pushed to Qdrant (URL or local-mode folder)
    qdrant: str | None = None
    qdrant_collection: str = "ragcite"
    #: the question log (``--questions-log``): one SQLite row per answer
    questions_log: Path | None = None
    #: days a logged question is kept (``--questions-log-days``); None: always
    questions_log_days: int | None = Field(None, ge=1, le=MAX_DAYS)
    #: keep the selected text of a question (``--log-selections``)
    log_selections: bool = False

    @field_validator("sites")
    @classmethod
    def _names(cls, value: tuple[SiteSpec, ...]) -> tuple[SiteSpec, ...]:
        names = [name for name, _ in value]
        for name in names:
            try:
                check_site_name(name)
            except RagciteError as error:
                raise ValueError(str(error)) from None
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"site name given twice: {', '.join(twice)}")
        return value

    @field_validator("forwarded_allow_ips")
    @classmethod
    def _proxies(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for item in value:
            if item == "*":
                continue
            try:
                if "/" in item:
                    ipaddress.ip_network(item)  # strict, as uvicorn reads it
                else:
                    ipaddress.ip_address(item)
            except ValueError:
                raise ValueError(
                    f"{item!r} is not an IP address (127.0.0.1, ::1), a network "
                    "(10.0.0.0/8) or *"
                ) from None
        return value

    @model_validator(mode="after")
    def _one_layout(self) -> ServerSettings:
        if (self.build_dir is None) == (not self.sites):
            raise ValueError(
                "give BUILD_DIR (one site at /) or --site NAME=BUILD_DIR "
                "(repeat it; each site at /NAME/), not both"
                if self.sites
                else "give BUILD_DIR or --site NAME=BUILD_DIR"
            )
        if self.questions_log is None and (
            self.questions_log_days is not None or self.log_selections
        ):
            raise ValueError(
                "--questions-log-days and --log-selections need --questions-log FILE"
            )
        return self

    def check_folders(self) -> None:
        """Raise RagciteError, with the fix, if a BUILD_DIR is not a folder."""
        for name, folder in self.site_specs():
            if not folder.is_dir():
                raise RagciteError(
                    f"{folder}{f' (site {name})' if name else ''} is not a folder: "
                    "pass the HTML output of `python -m sphinx -b html SRC OUT`."
                )

    def site_specs(self) -> tuple[SiteSpec, ...]:
        """(name, folder) of every site; the name is "" for the one at ``/``."""
        if self.build_dir is not None:
            return (("", self.build_dir),)
        return self.sites
