"""``ragcite serve``: check everything up front, then hand over to uvicorn."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from sphinx_ragcite.errors import RagciteError
from sphinx_ragcite.server.settings import ENV_SETTINGS, ServerSettings

if TYPE_CHECKING:
    import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "build_dir", metavar="BUILD_DIR", help="HTML output with _ragcite/"
    )
    parser.add_argument("--host", default="127.0.0.1", help="default: loopback only")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument(
        "--generator",
        choices=("extractive", "llm"),
        default="llm",
        help="default answer generator (requests may ask for the other)",
    )
    parser.add_argument("--workers", type=int, default=1, help="worker processes")
    parser.add_argument(
        "--queue-size", type=int, default=4, help="LLM queue per worker"
    )
    parser.add_argument(
        "--cors-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="allow this origin to call the API (repeat; none by default)",
    )
    parser.add_argument(
        "--rate-limit", type=int, default=120, help="requests/minute per client; 0=off"
    )
    parser.add_argument(
        "--timeout", type=float, default=60.0, help="seconds per answer"
    )
    parser.add_argument("--log-level", default="info")


def settings_from(args: argparse.Namespace) -> ServerSettings:
    return ServerSettings(
        build_dir=Path(args.build_dir).resolve(),
        host=args.host,
        port=args.port,
        generator=args.generator,
        model=args.model,
        llm_url=args.llm_url,
        embedding_model=getattr(args, "embedding_model", None),
        workers=args.workers,
        queue_size=args.queue_size,
        cors_origins=tuple(args.cors_origin),
        rate_limit=args.rate_limit,
        request_timeout=args.timeout,
    )


def serve(args: argparse.Namespace) -> int:
    import uvicorn

    from sphinx_ragcite.server.app import create_app, load_state

    logging.basicConfig(
        level=args.log_level.upper(), format="%(levelname)s: %(name)s: %(message)s"
    )
    try:
        settings = settings_from(args)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors()
        )
        raise RagciteError(f"invalid server options: {problems}") from None
    if not settings.build_dir.is_dir():
        raise RagciteError(
            f"{settings.build_dir} is not a folder: pass the HTML output of "
            "`python -m sphinx -b html SRC OUT`."
        )
    # Load everything now: a broken index or a missing model stops here with
    # its message, before any port is opened.
    state = load_state(settings)
    logging.getLogger("sphinx_ragcite.server").info(
        "serving %s at http://%s:%d/ (%d passages; generator: %s)",
        settings.build_dir,
        settings.host,
        settings.port,
        len(state.site.passages),
        state.llm.name if state.llm else "extractive",
    )
    if settings.workers == 1:
        uvicorn.run(
            create_app(settings, state=state),
            host=settings.host,
            port=settings.port,
            log_level=args.log_level,
        )
    else:
        os.environ[ENV_SETTINGS] = settings.model_dump_json()
        uvicorn.run(
            "sphinx_ragcite.server.app:app_from_env",
            factory=True,
            host=settings.host,
            port=settings.port,
            workers=settings.workers,
            log_level=args.log_level,
        )
    return 0
