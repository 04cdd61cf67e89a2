"""Books in other languages (issue 29): every target of the issue, one table.

Why: issue 29 made the book's ``language`` decide the text pipeline (Snowball
stemmers and stop words, CJK character bigrams for zh/ja/ko, a JS tokenizer
that must cut alike). Its targets span answer quality on the Chinese dev set,
no regression on the English ones, the build cost of the CJK tokenizer and
Python/JS parity; this script measures all six rows in one run, whatever the
code is when it runs, and says for each whether it is met.

1. Chinese dev set (``xuance_zh``): ``answer_quality.py``'s own machinery,
   imported and run in-process (its loaders, ``run`` and ``metrics``; the
   judging code is not copied), extractive generator, no near-topic folds
   (they are issue 25's, and cost a rebuild per fold). Supported is
   ``gold_shown`` (gold in an answer's citation or a shown passage), precision
   is ``answer_precision``, unanswerable answered ``unanswerable_answered``.
2. English dev sets (example_book, click, packaging_guide, requests, squad,
   flask, attrs, jinja), the same way. "Before, same run": ``answer_quality.py``
   of ``--baseline REV`` runs in a child process from a git worktree of that
   revision (``/tmp/ragcite-baseline-<rev>``, kept between runs so that its
   site builds, in its own ``benchmarks/results/.sites``, are reused), with
   ``PYTHONPATH`` at the worktree so it imports that revision's package, on
   the same questions (main's question files are copied in when they differ)
   and the same sets, while this process answers with today's code. A set's
   row is met when none of its quality figures is worse than before (more
   than ``--tolerance``; lower is better for false abstention, unanswerable
   answered, ECE and AURC); latencies are not compared (they measure the
   machine's load as much as the code). The Chinese set's before-figures come
   from the same baseline run.

   The default baseline is ``fc079f3``, main just before the merge that
   brought the language work in (``a0a3181``'s main-side parent): every
   change on main except issue 29's, so a difference is the language work's.
   The literal "commit before the first issue-29 commit to text.py"
   (``fa300ee``, parent of ``9fb7d2b``) cannot build a book: it imports
   ``sphinx_ragcite.formats.llms_links``, which only ``1dbca65`` added.
   ``answer_quality.py``, its dev sets and the question files were the
   same at both revisions and at the commit this script was written on.
3. Build overhead of the CJK tokenizer: the Chinese XuanCe corpus
   (``xuance-docs-zh``, ``-D language=zh_CN``) built with the extension as
   is (CJK bigrams) and with the English tokenizer forced on the same book:
   the second copy's ``conf.py`` ends with a few lines that replace
   ``sphinx_ragcite.text.spec_for``, and every ``sphinx_ragcite`` module's
   own name for it, by one returning the English ``SPEC`` before Sphinx
   loads the extension; Sphinx's language stays ``zh_CN`` (its own search
   index, the dense-search decision, sentences and snippets alike), so only
   our BM25/static-index tokenizer differs. Each built manifest's
   ``tokenizer`` is checked to be the one intended. Both share one warm
   embedding cache (``results/.languages/embedding-cache``, keyed by text;
   a warm-up build first), fresh output and doctree folders every build;
   ``--repeat`` rounds, each building both, which one first alternating;
   the ratio is of the median whole-build seconds, zh over en, and the
   tokenizer's own stages of ``<doctrees>/ragcite-stages.json`` (``bm25``,
   ``static index``) are reported beside it, with the English build plus
   their difference as a second ratio (on a busy machine the whole-build
   seconds move by more than the tokenizer costs; met/NO is still decided
   by the whole-build ratio, as the issue asks). These builds run last, alone:
   the answering and the baseline child run concurrently before them.
4. Static search parity: the shared case file
   ``tests/golden/tokenizer_cases.json`` through
   ``tokenizer(spec_for(language))`` and through ``js/tokenize.js`` in Node
   (the runner of ``tests/test_static_parity.py``, imported) with the same
   spec, per language; met when Python and JS give the same tokens on every
   case. Whether both still give the file's recorded tokens, and the wider
   sample of the parity tests (their tricky strings and CJK texts, words and
   tokens) under every language's spec, are reported beside it (Finnish
   stems differ by design there: Snowball 3.0.1 in JS, 3.1 in PyStemmer).

Run from the repository root::

    .venv/bin/python benchmarks/languages.py [--repeat 3] [--baseline REV]
        [--sets xuance_zh click ...] [--skip answers|baseline|builds|parity]

Prints the table and writes ``benchmarks/results/languages.json`` (``--out``).
Exit status 0 also when a target is missed (as the other benchmarks); 2 when
the Chinese set cannot be built.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks import _corpora
from benchmarks import answer_quality as aq
from benchmarks._harness import (
    REPO,
    RESULTS,
    envelope,
    git_commit,
    git_dirty,
    read_manifest,
    sphinx_build,
    table,
    write_result,
)

OUT = RESULTS / "languages.json"
WORK = RESULTS / ".languages"
CHINESE = "xuance_zh"
ENGLISH_SETS = (
    *("example_book", "click", "packaging_guide", "requests", "squad"),
    *("flask", "attrs", "jinja"),
)
#: main just before the language work was merged in (see the docstring)
DEFAULT_BASELINE = "fc079f3"
CORPUS = "xuance-docs-zh"
#: answer_quality figures compared with the baseline: key -> higher is better
FIGURES = {
    "citation_validity": True,
    "citation_precision": True,
    "answered_with_supporting_citation": True,
    "gold_in_answer": True,
    "answer_precision": True,
    "coverage": True,
    "gold_shown": True,
    "abstention_unanswerable": True,
    "false_abstention": False,
    "unanswerable_answered": False,
    "ece": False,
    "aurc": False,
}
SHORT = {
    "citation_validity": "validity",
    "citation_precision": "cit. precision",
    "answered_with_supporting_citation": "supported",
    "gold_in_answer": "gold in answer",
    "answer_precision": "precision",
    "coverage": "coverage",
    "gold_shown": "gold shown",
    "abstention_unanswerable": "abst. unans.",
    "false_abstention": "false abst.",
    "unanswerable_answered": "U answered",
    "ece": "ECE",
    "aurc": "AURC",
}
#: issue 29's targets on the Chinese set: (key, label, op, goal)
CHINESE_TARGETS = (
    ("gold_shown", "supported (gold cited or shown)", ">=", 0.80),
    ("answer_precision", "precision of answers", ">=", 0.90),
    ("unanswerable_answered", "unanswerable questions answered", "<=", 0.10),
)
OVERHEAD_GOAL = 1.1
#: the stages of ragcite-stages.json that run the BM25 tokenizer
TOKENIZER_STAGES = ("bm25", "static index")
#: the question files answer_quality reads (copied into the baseline worktree)
QUESTION_FILES = (
    "example_book/qa.jsonl",
    "benchmarks/click_qa.jsonl",
    *(
        str(p.relative_to(REPO))
        for p in sorted((REPO / "benchmarks" / "qa").glob("*"))
        if p.suffix in (".jsonl", ".json")
    ),
)
#: appended to the English copy's conf.py: the English tokenizer forced
FORCE_ENGLISH = """

def _ragcite_force_english_tokenizer():  # added by benchmarks/languages.py
    import sys

    import sphinx_ragcite.extension  # noqa: F401  (imports every module)
    import sphinx_ragcite.text as text

    original = text.spec_for

    def english(language=None):
        return text.SPEC

    for name, module in list(sys.modules.items()):
        if name.startswith("sphinx_ragcite") and (
            getattr(module, "spec_for", None) is original
        ):
            module.spec_for = english


_ragcite_force_english_tokenizer()
del _ragcite_force_english_tokenizer
"""


def met_text(met: bool | None) -> str:
    return {True: "met", False: "NO", None: "-"}[met]


def fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


# --------------------------------------------------------------------------
# Answers now (in-process) and before (a worktree of the baseline)


def load_sets(names: list[str], rebuild: bool) -> tuple[dict[str, Any], dict[str, str]]:
    """answer_quality's dev sets, built or reused; the ones that cannot be."""
    devsets, missing = {}, {}
    for name in names:
        try:
            devsets[name] = devsets.LOADERS[name](rebuild)
        except (FileNotFoundError, RuntimeError, subprocess.CalledProcessError) as e:
            print(f"{name}: cannot build: {e}", file=sys.stderr)
            missing[name] = str(e).splitlines()[0][:200]
    return devsets, missing


def answer_now(devsets: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every question of every set answered by today's engine (extractive)."""
    out = {}
    for name, devset in devsets.items():
        print(f"now: {name}: {len(devset.items)} questions ...", flush=True)
        dump = WORK / "answers" / f"{name}.extractive.jsonl"
        result, _ = aq.run(devset, devset.items, "extractive", None, dump, False)
        out[name] = result
    return out


def baseline_worktree(rev: str) -> tuple[Path, str]:
    """``/tmp/ragcite-baseline-<rev>``: a detached worktree of *rev*, made
    once and reused (its site builds with it); its full commit id."""
    full = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--verify", f"{rev}^{{commit}}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    path = Path(tempfile.gettempdir()) / f"ragcite-baseline-{full[:7]}"
    head = (
        subprocess.run(
            ["git", "-C", str(path), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
        ).stdout.strip()
        if path.is_dir()
        else ""
    )
    if head != full:
        if path.exists():
            subprocess.run(
                ["git", "-C", str(REPO), "worktree", "remove", "--force", str(path)],
                capture_output=True,
            )
            shutil.rmtree(path, ignore_errors=True)
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "add", "--detach", str(path), full],
            check=True,
            capture_output=True,
        )
    # the same questions as today's (equal at the default baseline)
    for name in QUESTION_FILES:
        mine, theirs = REPO / name, path / name
        if mine.is_file() and (
            not theirs.is_file() or theirs.read_bytes() != mine.read_bytes()
        ):
            theirs.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(mine, theirs)
    return path, full


def start_baseline(
    worktree: Path, sets: list[str]
) -> tuple[subprocess.Popen[bytes], Path, Path]:
    """The baseline's answer_quality.py on *sets* in a child process."""
    out = worktree / "benchmarks" / "results" / "languages-baseline.json"
    log = worktree / "benchmarks" / "results" / "languages-baseline.log"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.unlink(missing_ok=True)
    env = dict(os.environ)
    env["PYTHONPATH"] = str(worktree)
    corpora = _corpora.corpora_dir()  # the worktree's parent holds no shared/
    if corpora is not None:
        env[_corpora.ENV_VAR] = str(corpora)
    cmd = [sys.executable, "benchmarks/answer_quality.py", "--sets", *sets]
    cmd += ["--generators", "extractive", "--no-near-topic", "--out", str(out)]
    cmd += ["--dump-dir", str(worktree / "benchmarks" / "results" / ".languages")]
    with log.open("wb") as f:
        proc = subprocess.Popen(
            cmd, cwd=worktree, env=env, stdout=f, stderr=subprocess.STDOUT
        )
    return proc, out, log


def finish_baseline(
    proc: subprocess.Popen[bytes], out: Path, log: Path
) -> tuple[dict[str, dict[str, Any]], str | None]:
    """The baseline's extractive figures per set, or why there are none."""
    code = proc.wait()
    if code != 0 or not out.is_file():
        tail = "\n".join(log.read_text("utf-8", "replace").splitlines()[-5:])
        return {}, f"baseline answer_quality.py exited {code}: {tail}"
    data = json.loads(out.read_text("utf-8"))
    return {
        name: entry["generators"]["extractive"]
        for name, entry in data["sets"].items()
        if "extractive" in entry["generators"]
    }, None


def compare(
    now: dict[str, Any], before: dict[str, Any] | None, tolerance: float
) -> dict[str, Any]:
    """Figure by figure: now, before, and which are worse."""
    figures, worse = {}, []
    for key, higher in FIGURES.items():
        value = now.get(key)
        was = before.get(key) if before else None
        figures[key] = {"now": value, "before": was}
        if value is None or was is None:
            continue
        if ((was - value) if higher else (value - was)) > tolerance:
            worse.append(key)
    met = None if before is None else not worse
    return {"figures": figures, "worse": worse, "met": met}


# --------------------------------------------------------------------------
# Build overhead of the CJK tokenizer


def overhead(repeat: int) -> dict[str, Any]:
    """The Chinese corpus built with its CJK tokenizer and with the English
    one forced, *repeat* rounds after a warm-up, warm embedding cache."""
    if _corpora.corpus_path(CORPUS) is None or _corpora.missing_deps(CORPUS):
        return {"skipped": f"{CORPUS} or its modules missing"}
    options = [*_corpora.BUILD_OPTIONS.get(CORPUS, ()), "-N"]
    env = {"SPHINX_RAGCITE_CACHE_DIR": str(WORK / "embedding-cache")}
    variants = ("zh", "en")
    seconds: dict[str, list[float]] = {v: [] for v in variants}
    stages: dict[str, list[dict[str, float]]] = {v: [] for v in variants}
    specs: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="ragcite-languages-") as tmp:
        work = Path(tmp)
        sources = {v: _corpora.prepare_corpus(CORPUS, work / v, True) for v in variants}
        with (sources["en"] / "conf.py").open("a", encoding="utf-8") as conf:
            conf.write(FORCE_ENGLISH)

        def build(variant: str, label: str) -> float:
            out = work / f"{variant}-{label}"
            result = sphinx_build(
                sources[variant],
                out / "html",
                *options,
                doctrees=out / "doctrees",
                env=env,
            )
            spec = read_manifest(out / "html")["tokenizer"]
            specs[variant] = spec
            file = out / "doctrees" / "ragcite-stages.json"
            if file.is_file() and label != "warm-up":
                stages[variant].append(json.loads(file.read_text("utf-8")))
            shutil.rmtree(out)
            print(
                f"  {variant} {label}: {result.seconds:.1f} s",
                file=sys.stderr,
                flush=True,
            )
            return result.seconds

        print(f"building {CORPUS}: warm-up ...", file=sys.stderr, flush=True)
        build("zh", "warm-up")
        for r in range(repeat):
            for variant in variants if r % 2 == 0 else variants[::-1]:
                seconds[variant].append(build(variant, f"#{r + 1}"))
    problems = []
    if specs.get("zh", {}).get("segment") != "cjk-bigrams":
        problems.append(
            f"the zh build's tokenizer is not CJK bigrams: {specs.get('zh')}"
        )
    if specs.get("en", {}).get("segment") is not None:
        problems.append("the forced-English build still segments CJK")
    median = {v: statistics.median(s) for v, s in seconds.items()}
    stage_median = {
        v: {
            s: round(statistics.median(run.get(s, 0.0) for run in stages[v]), 4)
            for s in sorted({k for run in stages[v] for k in run})
        }
        for v in variants
        if stages[v]
    }
    tokenizer_s = {
        v: round(sum(stage_median.get(v, {}).get(s, 0.0) for s in TOKENIZER_STAGES), 4)
        for v in variants
    }
    ratio = median["zh"] / median["en"] if median["en"] else None
    # the English build plus what the CJK tokenizer's own stages added: the
    # overhead as the stages see it, robust to a busy machine's noise
    attributed = (
        (median["en"] + tokenizer_s["zh"] - tokenizer_s["en"]) / median["en"]
        if median["en"]
        else None
    )
    return {
        "corpus": CORPUS,
        "options": options,
        "repeat": repeat,
        "seconds": {v: [round(s, 2) for s in runs] for v, runs in seconds.items()},
        "median_seconds": {v: round(s, 2) for v, s in median.items()},
        "ratio": None if ratio is None else round(ratio, 3),
        "stage_median_seconds": stage_median,
        "tokenizer_stage_seconds": tokenizer_s,
        "tokenizer_stage_ratio": (
            round(tokenizer_s["zh"] / tokenizer_s["en"], 2)
            if tokenizer_s["en"]
            else None
        ),
        "stage_attributed_ratio": None if attributed is None else round(attributed, 3),
        "tokenizer_specs": specs,
        "problems": problems,
        "met": None if ratio is None or problems else ratio <= OVERHEAD_GOAL,
    }


# --------------------------------------------------------------------------
# Python and JS tokenizers on the shared case file


def parity() -> dict[str, Any]:
    """Python vs ``js/tokenize.js`` on the case file, per language."""
    if shutil.which("node") is None:
        return {"skipped": "node is not on PATH"}
    # the parity tests' Node runner and texts
    from benchmarks import _parity as tsp
    from sphinx_ragcite.text import spec_for, tokenizer

    cases = json.loads(
        (REPO / "tests" / "golden" / "tokenizer_cases.json").read_text("utf-8")
    )
    wider = [*tsp.CJK_TEXTS, *tsp.TRICKY]
    languages: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="ragcite-parity-") as tmp:
        for language in sorted(
            {c["language"] for c in cases["cases"]} | set(cases["specs"])
        ):
            spec = spec_for(language)
            mine = [c for c in cases["cases"] if c["language"] == language]
            tok = tokenizer(spec)
            texts = [c["text"] for c in mine]
            js = tsp.node("tokenize", {"texts": texts + wider, "spec": spec}, Path(tmp))
            js_cases, js_wider = js[: len(texts)], js[len(texts) :]
            python = [tok.tokenize(t) for t in texts]
            mismatches = [
                {"text": t, "python": p, "js": j[1]}
                for t, p, j in zip(texts, python, js_cases, strict=True)
                if p != j[1]
            ]
            wider_words = sum(
                j[0] != tok.words(t) for t, j in zip(wider, js_wider, strict=True)
            )
            wider_tokens = sum(
                j[1] != tok.tokenize(t) for t, j in zip(wider, js_wider, strict=True)
            )
            languages[language] = {
                "cases": len(mine),
                "mismatches": len(mismatches),
                "examples": mismatches[:3],
                "python_differs_from_file": sum(
                    p != c["tokens"] for p, c in zip(python, mine, strict=True)
                ),
                "js_differs_from_file": sum(
                    j[1] != c["tokens"] for j, c in zip(js_cases, mine, strict=True)
                ),
                "file_spec_is_built_spec": cases["specs"].get(language) == spec,
                "wider_sample": {
                    "texts": len(wider),
                    "words_mismatches": wider_words,
                    "tokens_mismatches": wider_tokens,
                },
            }
    total = sum(v["mismatches"] for v in languages.values())
    return {
        "case_file": "tests/golden/tokenizer_cases.json",
        "cases": sum(v["cases"] for v in languages.values()),
        "mismatches": total,
        "languages": languages,
        "met": total == 0 and bool(languages),
    }


# --------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sets",
        nargs="+",
        choices=(CHINESE, *ENGLISH_SETS),
        default=[CHINESE, *ENGLISH_SETS],
    )
    parser.add_argument("--baseline", default=DEFAULT_BASELINE, help="git revision")
    parser.add_argument("--repeat", type=int, default=3, help="build rounds")
    parser.add_argument(
        "--tolerance",
        type=float,
        default=0.0,
        help="a figure this much worse still counts as not lower",
    )
    parser.add_argument(
        "--skip",
        nargs="+",
        default=[],
        choices=("answers", "baseline", "builds", "parity"),
    )
    parser.add_argument("--rebuild", action="store_true", help="ignore cached sites")
    parser.add_argument("--out", type=Path, default=OUT)
    return parser.parse_args(argv)


def answers(
    args: argparse.Namespace,
) -> tuple[dict[str, Any], dict[str, Any], dict[str, str], dict[str, Any]] | None:
    """Every set answered now and (in a child process) at the baseline: now,
    before, the sets not built and what the baseline was; None when the
    Chinese set cannot be built."""
    now: dict[str, Any] = {}
    before: dict[str, Any] = {}
    missing: dict[str, str] = {}
    baseline_info: dict[str, Any] = {"rev": args.baseline}
    if "answers" in args.skip:
        return now, before, missing, baseline_info
    devsets, missing = load_sets(args.sets, args.rebuild)
    if CHINESE in args.sets and CHINESE not in devsets:
        return None
    proc = None
    if "baseline" not in args.skip and devsets:
        worktree, full = baseline_worktree(args.baseline)
        baseline_info.update(commit=full, worktree=str(worktree))
        print(f"baseline {full[:7]}: answer_quality.py in {worktree} ...", flush=True)
        proc, bout, blog = start_baseline(worktree, list(devsets))
    t0 = time.perf_counter()
    now = answer_now(devsets)
    baseline_info["now_seconds"] = round(time.perf_counter() - t0, 1)
    if proc is not None:
        before, error = finish_baseline(proc, bout, blog)
        baseline_info["seconds"] = round(time.perf_counter() - t0, 1)
        if error:
            print(f"WARNING {error}", file=sys.stderr)
            baseline_info["error"] = error
    return now, before, missing, baseline_info


def chinese_rows(zh_now: Any, zh_before: Any) -> list[dict[str, Any]]:
    rows = []
    for key, label, op, goal in CHINESE_TARGETS:
        value = zh_now.get(key) if zh_now else None
        met = (
            None if value is None else (value >= goal if op == ">=" else value <= goal)
        )
        was = zh_before.get(key) if zh_before else None
        rows.append(
            {
                "measure": f"Chinese dev set: {label}",
                "target": f"{op} {goal:g}",
                "figure": fmt(value),
                "before": fmt(was),
                "met": met,
                "key": key,
            }
        )
    return rows


def english_rows(
    args: argparse.Namespace,
    now: dict[str, Any],
    before: dict[str, Any],
    missing: dict[str, str],
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One row per English set: no figure lower than at the baseline."""
    rows: list[dict[str, Any]] = []
    english: dict[str, Any] = {}
    target = "no figure lower than before"
    for name in (s for s in args.sets if s != CHINESE):
        if name not in now:
            figure = "not run: " + missing.get(name, "--skip answers")
            rows.append(_row(f"English dev set {name}", target, figure, None))
            continue
        english[name] = compare(now[name], before.get(name), args.tolerance)
        worse = english[name]["worse"]
        figures = english[name]["figures"]
        figure = (
            "no baseline"
            if english[name]["met"] is None
            else "none lower"
            if not worse
            else "lower: "
            + ", ".join(
                f"{SHORT[k]} {fmt(figures[k]['before'])}->{fmt(figures[k]['now'])}"
                for k in worse
            )
        )
        rows.append(
            _row(
                f"English dev set {name}",
                target,
                figure,
                english[name]["met"],
                f"{len(FIGURES)} figures compared",
            )
        )
    return rows, english


def _row(
    measure: str, target: str, figure: str, met: bool | None, before: str = "-"
) -> dict[str, Any]:
    return {
        "measure": measure,
        "target": target,
        "figure": figure,
        "before": before,
        "met": met,
    }


def other_rows(
    builds: dict[str, Any], parity_result: dict[str, Any]
) -> list[dict[str, Any]]:
    """The build overhead and the tokenizers' parity."""
    if "skipped" in builds:
        figure, met = builds["skipped"], None
    else:
        tok = builds["tokenizer_stage_seconds"]
        figure = (
            f"{builds['ratio']:.3f}x ({builds['median_seconds']['zh']:.1f} s / "
            f"{builds['median_seconds']['en']:.1f} s; tokenizer stages "
            f"{tok['zh'] - tok['en']:+.2f} s"
            f" = {builds['stage_attributed_ratio']:.3f}x)"
        )
        met = builds["met"]
    rows = [
        _row(
            "build overhead of the CJK tokenizer",
            f"<= {OVERHEAD_GOAL:g}x English tokenizer",
            figure,
            met,
        )
    ]
    if "skipped" in parity_result:
        figure, met = parity_result["skipped"], None
    else:
        figure = (
            f"{parity_result['mismatches']} mismatches in "
            f"{parity_result['cases']} cases, "
            f"{len(parity_result['languages'])} languages"
        )
        met = parity_result["met"]
    rows.append(
        _row(
            "static search: Python and JS tokenizers",
            "identical on the case file (every language)",
            figure,
            met,
        )
    )
    return rows


def sets_table(baseline: str, now: dict[str, Any], before: dict[str, Any]) -> str:
    body = []
    for name, result in now.items():
        was = before.get(name, {})
        body.append([name, "now", *(fmt(result.get(k)) for k in FIGURES)])
        body.append(["", "before", *(fmt(was.get(k)) for k in FIGURES)])
    return f"\nDev sets, extractive, now vs before ({baseline}):\n" + table(
        ["set", "", *(SHORT[k] for k in FIGURES)], body
    )


def builds_table(builds: dict[str, Any]) -> list[str]:
    text = [
        f"\nBuild of {CORPUS} (-D language=zh_CN), warm embedding cache, "
        f"median of {builds['repeat']}:"
    ]
    stage_names = sorted(
        {s for v in builds["stage_median_seconds"].values() for s in v}
    )
    body = [
        [
            v,
            f"{builds['median_seconds'][v]:.2f}",
            f"{builds['tokenizer_stage_seconds'][v]:.3f}",
            *(
                f"{builds['stage_median_seconds'].get(v, {}).get(s, 0.0):.2f}"
                for s in ("read", "write pages", *TOKENIZER_STAGES)
            ),
        ]
        for v in ("zh", "en")
    ]
    header = ["tokenizer", "build s", "bm25+static s", "read s", "write pages s"]
    text.append(table([*header, *(f"{s} s" for s in TOKENIZER_STAGES)], body))
    text.append(
        f"tokenizer stages zh/en: {builds['tokenizer_stage_ratio']}x; "
        f"stages measured: {', '.join(stage_names)}"
    )
    text += [f"PROBLEM: {problem}" for problem in builds["problems"]]
    return text


def parity_table(parity_result: dict[str, Any]) -> str:
    body = []
    for lang, v in parity_result["languages"].items():
        wider = v["wider_sample"]
        body.append(
            [
                lang,
                str(v["cases"]),
                str(v["mismatches"]),
                f"{v['python_differs_from_file']}/{v['js_differs_from_file']}",
                "yes" if v["file_spec_is_built_spec"] else "NO",
                f"{wider['words_mismatches']}/{wider['tokens_mismatches']}"
                f" of {wider['texts']}",
            ]
        )
    header = ["language", "cases", "py != js", "py/js != file", "file spec = built"]
    return (
        "\nPython vs JS tokenizer per language (case file; wider sample: "
        "the parity tests' tricky and CJK strings):\n"
        + table([*header, "wider: words/tokens differ"], body)
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    began = time.perf_counter()
    WORK.mkdir(parents=True, exist_ok=True)
    parity_result: dict[str, Any] = {"skipped": "--skip parity"}
    if "parity" not in args.skip:
        print("parity: the case file in Python and in Node ...", flush=True)
        parity_result = parity()
    answered = answers(args)
    if answered is None:
        print(f"{CHINESE} cannot be built", file=sys.stderr)
        return 2
    now, before, missing, baseline_info = answered
    builds: dict[str, Any] = {"skipped": "--skip builds"}
    if "builds" not in args.skip:
        builds = overhead(args.repeat)

    zh_now, zh_before = now.get(CHINESE), before.get(CHINESE)
    english_part, english = english_rows(args, now, before, missing)
    rows = [
        *chinese_rows(zh_now, zh_before),
        *english_part,
        *other_rows(builds, parity_result),
    ]
    cells = [
        [r["measure"], r["target"], r["figure"], r["before"], met_text(r["met"])]
        for r in rows
    ]
    text = ["Targets of issue 29:"]
    text.append(table(["measure", "target", "figure", "before", "met"], cells))
    if now:
        text.append(sets_table(args.baseline, now, before))
    if "skipped" not in builds:
        text += builds_table(builds)
    if "skipped" not in parity_result:
        text.append(parity_table(parity_result))
    total = time.perf_counter() - began
    report = "\n".join(text)
    print()
    print(report)
    print(f"\ntotal {total:.0f} s")
    payload = envelope(
        "languages",
        git_commit=git_commit(),
        uncommitted=git_dirty(),
        options={
            "sets": args.sets,
            "repeat": args.repeat,
            "tolerance": args.tolerance,
            "skip": args.skip,
            "generator": "extractive",
            "near_topic": False,
        },
        baseline=baseline_info,
        total_seconds=round(total, 1),
        targets=rows,
        chinese={"now": zh_now, "before": zh_before},
        english=english,
        not_built=missing,
        build_overhead=builds,
        parity=parity_result,
        table=report,
    )
    write_result(args.out, payload)
    return 0


if __name__ == "__main__":
    sys.exit(main())
