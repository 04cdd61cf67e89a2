"""``ragcite serve``: check everything up front, then hand over to uvicorn."""

from __future__ import annotations

import logging
import os

from sphinx_ragcite.errors import RagciteError
from sphinx_ragcite.server.settings import ENV_SETTINGS, ServerSettings


def serve(settings: ServerSettings, log_level: str = "info") -> int:
    import uvicorn

    from sphinx_ragcite.retrieval.qdrant import is_server
    from sphinx_ragcite.server.app import create_app, load_state

    logging.basicConfig(
        level=log_level.upper(), format="%(levelname)s: %(name)s: %(message)s"
    )
    settings.check_folders()
    qdrant = settings.qdrant or ""
    if qdrant and settings.workers > 1 and not is_server(qdrant):
        raise RagciteError(
            f"--qdrant {qdrant} is qdrant-client's local mode, which one process "
            "opens at a time: use --workers 1, or a Qdrant server (http://...)."
        )
    # Load everything now: a broken index or a missing model stops here with
    # its message, before any port is opened.
    state = load_state(settings)
    log = logging.getLogger("sphinx_ragcite.server")
    for member in state.sites:
        log.info(
            "serving %s at http://%s:%d/%s (%d passages; version %s)",
            member.site.where,
            settings.host,
            settings.port,
            f"{member.name}/" if member.name else "",
            len(member.site.passages),
            member.version or "not set",
        )
    log.info("generator: %s", state.llm.name if state.llm else "extractive")
    trusted = ",".join(settings.forwarded_allow_ips)
    if trusted:
        log.info("believing X-Forwarded-For and X-Forwarded-Proto from %s", trusted)
    if state.questions is not None:
        log.info("logging questions to %s", state.questions.path)
    if settings.workers == 1:
        uvicorn.run(
            create_app(settings, state=state),
            host=settings.host,
            port=settings.port,
            log_level=log_level,
            # uvicorn reads the proxy headers, from the proxies named only
            # (by default it would believe any client on loopback)
            proxy_headers=bool(trusted),
            forwarded_allow_ips=trusted or None,
        )
    else:
        state.close()  # each worker loads its own (and its question log writer)
        os.environ[ENV_SETTINGS] = settings.model_dump_json()
        uvicorn.run(
            "sphinx_ragcite.server.app:app_from_env",
            factory=True,
            host=settings.host,
            port=settings.port,
            workers=settings.workers,
            log_level=log_level,
            # uvicorn reads the proxy headers, from the proxies named only
            # (by default it would believe any client on loopback)
            proxy_headers=bool(trusted),
            forwarded_allow_ips=trusted or None,
        )
    return 0
