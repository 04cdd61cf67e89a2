"""What a server process loads once: index, embedder, model, guards, executor."""

from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sphinx_ragcite.answer.engine import AnswerEngine
from sphinx_ragcite.retrieval import SearchableSite, Site
from sphinx_ragcite.server.guards import AnswerCache, GenerationSlots, RateLimiter

if TYPE_CHECKING:
    from sphinx_ragcite.answer.llm import Cancel, Generator
    from sphinx_ragcite.server.settings import ServerSettings

logger = logging.getLogger("sphinx_ragcite.server")

#: Threads beside the model's queue, for searches and extractive answers.
SPARE_THREADS = 4


@dataclass(frozen=True)
class State:
    """Lives on ``app.state.ragcite`` from start-up to shutdown."""

    settings: ServerSettings
    site: SearchableSite
    engine: AnswerEngine
    llm: Generator | None
    slots: GenerationSlots
    cache: AnswerCache
    limiter: RateLimiter
    #: the one pool every blocking call runs in (search, answers, streams)
    executor: ThreadPoolExecutor
    #: answers running now, stopped at shutdown
    jobs: set[Cancel] = field(default_factory=set)

    def close(self) -> None:
        for cancel in list(self.jobs):
            cancel.abandon("the server is stopping")
        self.executor.shutdown(wait=False, cancel_futures=True)


def load_llm(settings: ServerSettings) -> Generator | None:
    """The generator the settings ask for, or None for extractive answers."""
    from sphinx_ragcite.answer.llm import make_generator

    return make_generator(
        settings.generator,
        model=settings.model,
        llm_url=settings.llm_url,
        timeout=settings.request_timeout,
    )


def load_site(settings: ServerSettings) -> SearchableSite:
    """BUILD_DIR's index in memory, or its passages pushed to Qdrant."""
    if settings.qdrant:
        from sphinx_ragcite.qdrant_store import QdrantSite

        return QdrantSite.for_build(
            settings.qdrant,
            settings.build_dir,
            settings.qdrant_collection,
            model_dir=settings.embedding_model,
        )
    return Site.load(settings.build_dir, model_dir=settings.embedding_model)


def load_state(settings: ServerSettings, llm: Generator | None = None) -> State:
    """Load index, embedder and model once; raises RagciteError with a fix."""
    started = time.perf_counter()
    site = load_site(settings)
    if site.has_dense:
        site.embedder.embed(["warm up"])
    loaded = time.perf_counter()
    logger.info(
        "loaded %d passages from %s in %.2f s",
        len(site.passages),
        site.where,
        loaded - started,
    )
    if llm is None:
        llm = load_llm(settings)
        if llm is not None:
            logger.info(
                "loaded generator %s in %.2f s", llm.name, time.perf_counter() - loaded
            )
    return State(
        settings=settings,
        site=site,
        engine=AnswerEngine(site, llm=llm),
        llm=llm,
        slots=GenerationSlots(settings.queue_size),
        cache=AnswerCache(settings.cache_size),
        limiter=RateLimiter(settings.rate_limit),
        executor=ThreadPoolExecutor(
            max_workers=settings.queue_size + SPARE_THREADS,
            thread_name_prefix="ragcite",
        ),
    )
