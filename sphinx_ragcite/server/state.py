"""What a server process loads once: index, embedder, model, guards, executor."""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, cast

from sphinx_ragcite.answer.engine import AnswerEngine
from sphinx_ragcite.answer.evidence import SentenceVectors
from sphinx_ragcite.errors import RagciteError
from sphinx_ragcite.questions.log import QuestionLog
from sphinx_ragcite.questions.logfile import SiteRow
from sphinx_ragcite.retrieval.site import Site
from sphinx_ragcite.server.guards import AnswerCache, GenerationSlots, RateLimiter
from sphinx_ragcite.server.sites import ServedSite, Sites

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from sphinx_ragcite.answer.llm import Cancel, Generator
    from sphinx_ragcite.encoder import Embedder
    from sphinx_ragcite.retrieval.qdrant import QdrantSite
    from sphinx_ragcite.retrieval.searchable import SearchableSite
    from sphinx_ragcite.server.settings import ServerSettings

logger = logging.getLogger("sphinx_ragcite.server")

#: Threads beside the model's queue, for searches and extractive answers.
SPARE_THREADS = 4
#: How long ``/api/health`` reuses its last look at Qdrant (``--qdrant``).
STORE_CHECK_SECONDS = 5.0


@dataclass(frozen=True)
class SiteScope:
    """What one request asks: its sites, searched as one, and their engine."""

    members: tuple[ServedSite, ...]
    #: the one site served at ``/``, or a union of named sites
    searcher: SearchableSite
    engine: AnswerEngine

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(m.name for m in self.members)


@dataclass(frozen=True)
class State:
    """Lives on ``app.state.ragcite`` from start-up to shutdown.

    ``site`` and ``engine`` are the first site's (the only one, when one is
    served at ``/``); a request asks :meth:`scope` for its own.
    """

    settings: ServerSettings
    site: SearchableSite
    engine: AnswerEngine
    llm: Generator | None
    slots: GenerationSlots
    cache: AnswerCache
    limiter: RateLimiter
    #: the one pool every blocking call runs in (search, answers, streams)
    executor: ThreadPoolExecutor
    sites: Sites
    #: the Qdrant the passages are in (``--qdrant``), else None
    store: QdrantStore | None = None
    #: the question log (``--questions-log``), else None (or if it cannot open)
    questions: QuestionLog | None = None
    #: answers running now, stopped at shutdown
    jobs: set[Cancel] = field(default_factory=set)
    _scopes: dict[tuple[Any, ...], SiteScope] = field(default_factory=dict, repr=False)
    _sentences: dict[int, SentenceVectors] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def scope(self, site: str | None = None, version: str | None = None) -> SiteScope:
        """The sites a request asks (raises ScopeError), with their engine.

        With several sites, no *site* means all of them. Answers of a scope
        of one site name it; ``version`` is the version asked about (*version*,
        or the one version all the sites asked share).
        """
        members = self.sites.resolve(site, version)
        if not self.sites.several:
            return SiteScope(members, self.site, self.engine)
        shared = {m.version for m in members}
        label = version or (shared.pop() if len(shared) == 1 else None) or None
        key = (tuple(m.name for m in members), label)
        with self._lock:
            found = self._scopes.get(key)
        if found is not None:
            return found
        union = self.sites.union(members)
        engine = AnswerEngine(
            cast("SearchableSite", union),  # searched like a Site
            llm=self.llm,
            site_name=members[0].name if len(members) == 1 else None,
            site_version=label,
            shared_sentences=self.sentences_for(union.embedder),
        )
        made = SiteScope(members, cast("SearchableSite", union), engine)
        with self._lock:
            return self._scopes.setdefault(key, made)

    def sentences_for(self, embedder: Embedder) -> SentenceVectors:
        """One sentence-vector cache per encoder, shared by every scope."""
        with self._lock:
            cache = self._sentences.get(id(embedder))
            if cache is None:
                cache = self._sentences[id(embedder)] = SentenceVectors(embedder)
            return cache

    def close(self) -> None:
        for cancel in list(self.jobs):
            cancel.abandon("the server is stopping")
        self.executor.shutdown(wait=False, cancel_futures=True)
        if self.store is not None:
            self.store.close()
        if self.questions is not None:
            self.questions.close()


def load_llm(settings: ServerSettings) -> Generator | None:
    """The generator the settings ask for, or None for extractive answers."""
    from sphinx_ragcite.answer.llm import make_generator

    return make_generator(
        settings.generator,
        model=settings.model,
        llm_url=settings.llm_url,
        timeout=settings.request_timeout,
    )


class QdrantStore:
    """The Qdrant the sites' passages are in (``--qdrant``): one client for
    every site (local mode lets one client at a time open a folder), and a
    look, cached for :data:`STORE_CHECK_SECONDS`, at whether it can still
    answer for them (``/api/health``)."""

    def __init__(self, settings: ServerSettings) -> None:
        from sphinx_ragcite.retrieval.qdrant import connect

        self.location = settings.qdrant or ""
        self.collection = settings.qdrant_collection
        self.model_dir = settings.embedding_model
        self.client = connect(self.location)
        #: (BUILD_DIR, its site) of every site loaded
        self.sites: list[tuple[Path, QdrantSite]] = []
        self._lock = threading.Lock()
        self._seen: tuple[float, str | None] | None = None

    def load(self, folder: Path) -> QdrantSite:
        """*folder*'s pushed passages; refuses a store that cannot answer."""
        from sphinx_ragcite.retrieval.qdrant import QdrantSite

        site = QdrantSite.for_build(
            self.location,
            folder,
            self.collection,
            model_dir=self.model_dir,
            client=self.client,
        )
        self.sites.append((folder, site))
        return site

    def problem(self) -> str | None:
        """Why the store cannot answer now (with the fix), or None."""
        with self._lock:  # one look at a time; the others wait for it
            seen = self._seen
            if seen is not None and time.monotonic() - seen[0] < STORE_CHECK_SECONDS:
                return seen[1]
            problem = self._look()
            self._seen = (time.monotonic(), problem)
            return problem

    def _look(self) -> str | None:
        for folder, site in self.sites:
            try:
                problem = site.problem(folder, exact=False)
            except RagciteError as error:  # Qdrant unreachable, or failing
                problem = str(error)
            except Exception as error:  # health reports it, never fails
                logger.warning("cannot check %s: %r", site.where, error)
                problem = f"cannot check {site.where}: {error!r}"
            if problem:
                return problem
        return None

    def close(self) -> None:
        self.client.close()


def open_questions(settings: ServerSettings, sites: Sites) -> QuestionLog | None:
    """The question log, each site registered, or None (off, or unusable)."""
    if settings.questions_log is None:
        return None
    folders = dict(settings.site_specs())
    rows = []
    for member in sites:
        baseurl = member.site.manifest.html_baseurl
        rows.append(
            SiteRow(
                name=member.name,
                build_dir=str(folders[member.name].resolve()),
                base_url=baseurl.rstrip("/") + "/" if baseurl else "",
            )
        )
    return QuestionLog.open(
        settings.questions_log,
        days=settings.questions_log_days,
        keep_selections=settings.log_selections,
        sites=rows,
    )


def site_loader(
    settings: ServerSettings, store: QdrantStore | None = None
) -> Callable[[Path], SearchableSite]:
    """How each build folder is read: its index in memory, or its passages
    pushed to Qdrant (*store*)."""
    if store is None:
        return lambda folder: Site.load(folder, model_dir=settings.embedding_model)
    return store.load


def load_state(settings: ServerSettings, llm: Generator | None = None) -> State:
    """Load indexes, embedder and model once; raises RagciteError with a fix."""
    store = QdrantStore(settings) if settings.qdrant else None
    try:
        return _load_state(settings, llm, store)
    except BaseException:
        if store is not None:
            store.close()  # local mode: free the folder for the next client
        raise


def _load_state(
    settings: ServerSettings, llm: Generator | None, store: QdrantStore | None
) -> State:
    started = time.perf_counter()
    sites = Sites.load(
        settings.site_specs(),
        model_dir=settings.embedding_model,
        load=site_loader(settings, store),
    )
    warmed: set[int] = set()
    for member in sites:
        if member.site.has_dense and id(member.site.embedder) not in warmed:
            member.site.embedder.embed(["warm up"])
            warmed.add(id(member.site.embedder))
    loaded = time.perf_counter()
    logger.info(
        "loaded %d passages of %d site(s) in %.2f s",
        sites.passages,
        len(sites),
        loaded - started,
    )
    if llm is None:
        llm = load_llm(settings)
        if llm is not None:
            logger.info(
                "loaded generator %s in %.2f s", llm.name, time.perf_counter() - loaded
            )
    first = sites.members[0]
    state = State(
        settings=settings,
        site=first.site,
        engine=AnswerEngine(first.site, llm=llm),
        llm=llm,
        slots=GenerationSlots(settings.queue_size),
        cache=AnswerCache(settings.cache_size),
        limiter=RateLimiter(settings.rate_limit),
        executor=ThreadPoolExecutor(
            max_workers=settings.queue_size + SPARE_THREADS,
            thread_name_prefix="ragcite",
        ),
        sites=sites,
        store=store,
        questions=open_questions(settings, sites),
    )
    if sites.several:  # the first site's engine names its site, as its scope's does
        state = replace(state, engine=state.scope(first.name).engine)
    return state
