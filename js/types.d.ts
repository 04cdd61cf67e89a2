/**
 * The JSON contracts the widget reads (see docs: the answer response of
 * DESIGN.md, `sphinx_ragcite/schemas.py` and `server/schemas.py`), and the
 * widget's public API on `window.ragcite`.
 */

/** Bands of a calibrated probability: high >= 0.9, medium >= 0.7, else low. */
export type ConfidenceLevel = "high" | "medium" | "low";

/**
 * What an answer holds:
 * - "answer": a cited answer the engine is confident in (`grounded` true);
 * - "passages": no claim; `passages` lists up to three passages that most
 *   likely hold the answer, each with its best sentence;
 * - "not_found": the book does not seem to cover the question; the closest
 *   pages are in `metadata.see_also`.
 * Absent from older servers: read `grounded` false as "not_found".
 */
export type Outcome = "answer" | "passages" | "not_found";

/** One numbered source of an answer; `n` is its `[n]` marker. */
export interface Citation {
  n: number;
  /** `chC-secS-pP`, or "user-selection" for the reader's selected text. */
  passage_id: string;
  /** Relative to the site root, with the anchor ("dir/page.html#ch3-sec2-p4");
   * null for the selection. The only source of citation links. */
  url: string | null;
  chapter: string;
  section: string;
  heading_path: string[];
  page?: number | null;
  /** First 50-200 characters of the passage. */
  snippet: string;
  /** The sentence(s) of the passage that support the claim. */
  quote: string;
  /** [start, end) of each quoted sentence in the passage's text (0.2+). */
  quote_spans?: [number, number][];
  similarity_score: number;
  confidence_score: number;
  grounded: boolean;
  source_type: "book" | "selection";
  /** ISO time, e.g. "2026-11-21T10:30:45Z". */
  citation_date: string;
  /** Several sites served together: the site it comes from; `url` is then
   * relative to the server's root ("v2/page.html#ch1-sec0-p1"). */
  site?: string;
  /** Several sites served together: that site's conf.py `version`. */
  version?: string;
}

/** A passage the "passages" outcome points to, with its best sentence. */
export interface ShownPassage {
  passage_id: string;
  /** Relative to the site root, with the anchor, as a citation's `url`. */
  url: string | null;
  chapter: string;
  section: string;
  heading_path: string[];
  snippet: string;
  /** The passage's sentence most likely to answer, as in its text. */
  quote: string;
  /** [start, end) of that sentence in the passage's text. */
  quote_spans: [number, number][];
  /** Calibrated probability (0-1) that this passage answers the question. */
  confidence: number;
  /** As on a citation, when several sites are served together. */
  site?: string;
  version?: string;
}

/** A passage an abstaining answer suggests reading. */
export interface SeeAlso {
  passage_id: string;
  url: string;
  chapter: string;
  section: string;
  snippet: string;
  /** As on a citation, when several sites are served together. */
  site?: string;
  version?: string;
}

export interface AnswerMetadata {
  model?: string;
  generator?: string;
  retrieved?: string[];
  /** Several sites served together: the site of each `retrieved` ID, in step. */
  retrieved_sites?: string[];
  see_also?: SeeAlso[];
  retrieval_ms?: number;
  generation_ms?: number;
  index_version?: string;
  /** "browser": answered by the engine in the reader's browser (js/engine.js). */
  engine?: string;
  /** The browser engine only: passages it judged without sentence similarity
   * (the build split them into other sentences), each with why. */
  problems?: string[];
  [key: string]: unknown;
}

/** `POST /api/ask`, the `final` event of `/api/ask/stream`, `ragcite ask --format json`. */
export interface Answer {
  question: string;
  mode: "book" | "selection";
  /** Plain text with inline markers "[1]"; every marker has its citation. */
  answer: string;
  citations: Citation[];
  confidence: number;
  confidence_level: ConfidenceLevel;
  /** True only for the "answer" outcome. */
  grounded: boolean;
  metadata: AnswerMetadata;
  /** What the answer holds (absent from old servers: see `Outcome`). */
  outcome?: Outcome;
  /** The "passages" outcome: most likely first, at most three; else []. */
  passages?: ShownPassage[];
  /** Several sites served together: the one site asked (absent across sites). */
  site?: string;
  /** Several sites served together: the version asked about. */
  version?: string;
  /** A server keeping a question log (`--questions-log`): this answer's ID
   * there, 32 hex digits, for `POST /api/feedback`; absent otherwise. */
  answer_id?: string;
}

/** `POST /api/feedback` body: a reader's vote on an answer. */
export interface FeedbackRequest {
  answer_id: string;
  helpful: boolean;
  /** Why not helpful: at most 500 characters after trimming. */
  reason?: string | null;
}

/** `POST /api/ask` and `/api/ask/stream` body. */
export interface AskRequest {
  /** 1 to 2000 characters after trimming. */
  question: string;
  mode?: "book" | "selection";
  /** Up to 20000 characters; required in selection mode. */
  selection?: string | null;
  k?: number;
  filters?: { docnames?: string[]; chapters?: number[] } | null;
  style?: "plain" | "apa" | "ieee" | "acm" | "chicago" | null;
  generator?: "extractive" | "llm" | null;
  /** Several sites served together: one site's name, or "*" for all (the default). */
  site?: string | null;
  /** Only the sites whose conf.py `version` or `release` is this. */
  version?: string | null;
}

/** Every 4xx/5xx body of the API. */
export interface ErrorBody {
  error: { code: string; message: string; field: string | null };
}

/** `GET /api/health`. */
export interface Health {
  status: "ok";
  version: string;
  index_loaded: boolean;
  index_version: string;
  passages: number;
  model_loaded: boolean;
  model: string | null;
  generator: string;
  queue_depth: number;
  queue_size: number;
  /** Whether `POST /api/feedback` takes votes (absent from older servers). */
  feedback?: boolean;
  /** Several sites served together (`--site NAME=BUILD_DIR`): each of them;
   * null with one site. The widget's version picker offers those whose
   * `project` is the page's own site's. */
  sites?: SiteInfo[] | null;
}

/** One of several sites served together, in `/api/health`'s `sites`. */
export interface SiteInfo {
  name: string;
  /** Where its pages are, relative to the server's root: "NAME/". */
  url: string;
  /** Its conf.py `project`, `version` and `release`. */
  project: string;
  version: string;
  release: string;
  passages: number;
  index_version: string;
}

/** Events of `POST /api/ask/stream`, in order: retrieval, token*, final | error. */
export type StreamEvent =
  | { event: "retrieval"; data: { retrieved: string[] } }
  | { event: "token"; data: { text: string } }
  | { event: "final"; data: Answer }
  | { event: "error"; data: ErrorBody };

/** A passage found by the in-browser static search (no server). */
export interface StaticHit {
  passage_id: string;
  url: string;
  chapter: string;
  section: string;
  snippet: string;
  score: number;
}

/** What `ragcite.ask()` resolves with when no answer server is reachable. */
export interface StaticResult {
  mode: "static";
  question: string;
  hits: StaticHit[];
}

export interface AskOptions {
  /** Ask about this text (selection mode); at most 20000 characters are sent. */
  selection?: string;
  /** With several sites served together: ask this site ("*": all of them;
   * null: the server's default). Left out: the page's own site, unless the
   * page's scope is "all". */
  site?: string | null;
  /** Ask only the sites of this conf.py version or release. */
  version?: string;
}

/** `window.ragcite`. */
export interface RagciteApi {
  /** The sphinx-ragcite version that built the page (`data-ragcite-version`
   * on the widget's script tag), "unknown" when the tag has none. */
  version: string;
  /** Open the ask panel and focus the question box. */
  open(): void;
  /** Close the panel; focus returns where it was. */
  close(): void;
  /** Ask a question; resolves once the answer (or the static results) is on
   * screen, rejects with an Error whose message is shown in the panel. */
  ask(question: string, options?: AskOptions): Promise<Answer | StaticResult>;
  /** Highlight the passage with this id (`ch3-sec2-p4`) and scroll it into view. */
  highlight(passageId: string): boolean;
}

// -- Browser engine ------------------------------------------------------------
// The answer engine a Web Worker runs when no server answers (issue 35). Its
// scripts load with importScripts() and register on `globalThis.ragcite_lib`.

/** What the model reads for one text: `[CLS] pieces [SEP]` (WordPiece) or
 * `<s> pieces </s>` (Unigram), all three the same length (at most `maxTokens`). */
export interface TokenEncoding {
  ids: number[];
  /** All 1: one text, no padding. */
  attentionMask: number[];
  /** All 0: one segment. */
  typeIds: number[];
}
export type WordPieceEncoding = TokenEncoding;

/** What the question encoder (js/encode.js) needs of a tokenizer: the ids
 * Python's `tokenizers` gives for the tokenizer.json the build embeds with,
 * truncated to `maxTokens`. `ragcite_lib.unigram.questionTokenizer(json)`
 * builds the one the file's `model.type` names. */
export interface QuestionTokenizer {
  encode(text: string, maxTokens: number): TokenEncoding;
}

/** `ragcite_lib.wordpiece.WordPiece` (js/wordpiece.js): BERT WordPiece, built
 * with `WordPiece.fromJSON(tokenizerJson)` from the tokenizer.json the build
 * embeds with; the same ids as Python's `tokenizers`. */
export interface WordPiece extends QuestionTokenizer {}

/** `ragcite_lib.unigram.Unigram` (js/unigram.js): SentencePiece Unigram
 * (multilingual-e5-small's XLM-R vocabulary), built with
 * `Unigram.fromJSON(tokenizerJson)`; the same ids as Python's `tokenizers`. */
export interface UnigramTokenizer extends QuestionTokenizer {
  /** The normalized text, then its Metaspace words, as `tokenizers` cuts them. */
  normalize(text: string): string;
  words(text: string): string[];
  /** The pieces' ids, without `<s>`/`</s>` or truncation. */
  pieceIds(text: string): number[];
}

/** `ragcite_lib.encode.createEncoder` (js/encode.js). */
export interface EncoderOptions {
  /** The onnxruntime-web module (`ort` of `ort.wasm.min.js`), its
   * `env.wasm.wasmPaths` or `wasmBinary` set. */
  ort: any;
  /** The bytes of the model.onnx the build embedded passages with. */
  model: ArrayBuffer | Uint8Array;
  tokenizer: QuestionTokenizer;
  /** The manifest's `embedding.max_tokens`. */
  maxTokens: number;
  /** The width of the index's vectors (the manifest's `embedding.dim`):
   * no probe run at start, and every vector is checked against it. */
  dim?: number;
  /** Put before a question / a passage (the manifest's `query_prefix`,
   * `passage_prefix`; e5's "query: " and "passage: "). */
  prefixes?: { query?: string; passage?: string };
}

/** The question's vector, as Python's encoder computes it (cosine >= 0.9999):
 * mean-pooled over the attention mask, length 1. Calls queue: one run at a time. */
export interface QuestionEncoder {
  embed(text: string, kind?: "query" | "passage"): Promise<Float32Array>;
  dim: number;
  /** Free the session's WASM memory. */
  release(): Promise<void>;
  /** ms to open the session, and to run the first (probe) encoding. */
  timings?: { session: number; probe: number };
}

// -- Browser engine: the extractive answer engine (js/engine.js) ------------
// The store hands the engine a built site's `_ragcite/` files; the engine
// answers as `POST /api/ask` does in book mode with the extractive generator.

// -- The site's files (js/files.js): what the build writes under `_ragcite/` --
// Read from the network as `unknown`; typed once a reader of `files.js` (or
// `search.js`, `ranker.js`) has checked it. A check covers the structure (the
// containers, the fields every reader relies on); the values inside are as
// the build wrote them.

/** The tokenizer spec the static index and the manifest carry (`text.spec_for`). */
export type TokenizerSpec = import("./tokenize.js").TokenizerSpec;

/** `contracts.EmbeddingInfo`: how the vectors were made (a question must be
 * embedded the same way). */
export interface EmbeddingInfo {
  model: string;
  /** Numbers per vector. */
  dim: number;
  dtype: "int8";
  scale_dtype: "float32";
  max_tokens: number;
  /** Sentence vectors embedded at build time (0: none shipped). */
  sentences: number;
  /** false: BM25 alone ranks passages; the vectors only score sentences. */
  search: boolean;
  sentence_pooling: "separate" | "passage";
  /** Put before a question / a passage before it is embedded (e5's
   * "query: " and "passage: "; absent for MiniLM). */
  query_prefix?: string;
  passage_prefix?: string;
  /** The encoder's model and tokenizer ship in `_ragcite/` (the multilingual
   * one, cut to the book's vocabulary). */
  shipped?: boolean;
  [key: string]: unknown;
}

/** `_ragcite/manifest.json` (`contracts.Manifest`, written by
 * `extension/writer.py`): every other file by role, with its digest and size.
 * `files.checkManifest` checks the format and `files`. */
export interface Manifest {
  format_version: 1;
  generator?: string;
  project: string;
  author: string;
  copyright: string;
  version: string;
  release: string;
  html_baseurl: string;
  language: string | null;
  builder: string;
  root_url: string;
  built_at: string;
  counts: { passages: number; documents: number; moved: number };
  tokenizer: TokenizerSpec;
  /** `formats/bm25.PARAMS`. */
  bm25: { k1: number; b: number; method: string; [key: string]: unknown };
  /** null: built without embeddings. */
  embedding: EmbeddingInfo | null;
  citation: { style: string; show_page: boolean; link_to_source: boolean; max_quote_length: number };
  /** role ("model", "static", "shards", ...) -> file name relative to `_ragcite/`. */
  files: Record<string, string>;
  /** role -> hex SHA-256 of the file. */
  sha256: Record<string, string>;
  /** role -> the file's size. */
  bytes: Record<string, number>;
  [key: string]: unknown;
}

/** A passage of the static index: `[passage_id, page, chapter, section,
 * snippet]`; page indexes `pages`, chapter and section index `headings`. */
export type StaticPassage = [passage_id: string, page: number, chapter: number, section: number, snippet: string];

/** The static search index, `format_version` 2 (`formats/static.py`; the
 * JSON of `search.<h>.js`). `files.checkStaticIndex` checks it. */
export interface StaticIndex {
  format_version: number;
  tokenizer: TokenizerSpec;
  /** The BM25 parameters (method "lucene"). */
  bm25: { k1: number; b: number; method: string };
  /** Each passage's token count, as indexed. */
  lengths: number[];
  /** Sorted; terms[i] owns postings[i]. */
  terms: string[];
  /** [doc_delta, tf, doc_delta, tf, ...] per term. */
  postings: number[][];
  /** Page URLs, each once. */
  pages: string[];
  /** Chapter and section titles, each once. */
  headings: string[];
  /** The URL of a passage is `pages[page] + "#" + passage_id`. */
  passages: StaticPassage[];
}

/** The sharded static index's root (`formats/search_shards.py`). */
export interface SearchRoot {
  format_version: number;
  tokenizer: TokenizerSpec;
  bm25: { k1: number; b: number; method: string };
  rows: number;
  lengths: number[];
  /** `[first term, "search/<h>.json"]`, in term order. */
  terms: [first: string, name: string][];
  /** `[rows, "search/<h>.json"]`, consecutive from row 0. */
  passages: [rows: number, name: string][];
}

/** A term shard: `terms[i]` owns `postings[i]` (`[doc_delta, tf, ...]`). */
export interface TermShard {
  terms: string[];
  postings: number[][];
}

/** A passage shard: rows `[passage_id, page, chapter, section, snippet,
 * docname, [title, ...]]` indexing its own tables. */
export interface PassageShard {
  pages: string[];
  headings: string[];
  docnames: string[];
  titles: string[];
  rows: [string, number, number, number, string, number, number[]][];
  /** The answer shards of exactly these rows, when the engine ships. */
  shards?: [rows: number, name: string][];
}

/** A row's display fields, and the answer shard holding its text. */
export interface RowMeta {
  row: number;
  meta: PassageMeta;
  answer: { name: string; index: number } | null;
}

/** A logistic model over standardised inputs, as `ranker.json` holds it. */
export interface LogisticJson {
  weights: number[];
  bias: number;
  mean: number[];
  scale: number[];
}

/** `ranker.json` (`answer/ranker.py`, written by `tools/train_answer_ranker.py`):
 * the unit model at the top level, the gate's two models, the thresholds.
 * `ranker.parseRanker` checks it into a `Ranker`. */
export interface RankerJson extends LogisticJson {
  /** The signals the unit model was trained on (`units.FEATURES`). */
  features: string[];
  gate_units: LogisticJson;
  gate: LogisticJson;
  threshold: number;
  second: number;
  calibration?: { x: number[]; y: number[] } | null;
  outcomes?: { answer?: number; passages?: number } | null;
  [key: string]: unknown;
}

/** A logistic model, checked (`ranker.Logistic`). */
export type Logistic = LogisticJson;

/** The parsed ranker (`ranker.Ranker`). */
export interface Ranker {
  /** Which unit answers (every signal). */
  units: Logistic;
  /** The gate's unit model (a unit's own signals). */
  gateUnits: Logistic;
  /** Whether the best unit's passage answers. */
  gate: Logistic;
  /** A second unit is cited only when this close. */
  second: number;
  /** Gate output -> probability. */
  calibration: { x: number[]; y: number[] };
  /** Calibrated confidence from which it answers. */
  answerAt: number;
  /** ... from which it shows passages. */
  passagesAt: number;
}

/** `shards.<h>.json` (`formats/shards.py`): what the engine loads once to
 * find a passage's shard. `files.checkListing` checks it. */
export interface ShardListing {
  format_version: 1;
  /** Passages, as passages.jsonl. */
  rows: number;
  /** Sentence vector width (0: none shipped). */
  dim: number;
  /** Each row's document, interned. */
  docnames: string[];
  /** Heading titles, interned. */
  titles: string[];
  /** Heading paths as indices of `titles`. */
  paths: number[][];
  /** Per row: its `docnames` index, its `paths` index. */
  passages: number[];
  /** `[rows, "shards/<hash>.bin"]`, consecutive from row 0. */
  shards: [rows: number, name: string][];
}

/** A row of a shard's JSON head: `sentences` is its count of sentence
 * vectors, -1 when none were shipped. */
export type ShardRow = [
  passage_id: string,
  text: string,
  char_start: number,
  char_end: number,
  content_hash: string,
  sentences: number,
];

/** Sentence vectors: row i is `codes[i * dim : (i + 1) * dim] * scales[i]`. */
export interface SentenceVectors {
  codes: Int8Array;
  scales: Float32Array;
}

/** What a shard holds of one passage. */
export interface ShardPassage {
  passage_id: string;
  text: string;
  char_start: number;
  char_end: number;
  content_hash: string;
  sentences: SentenceVectors | null;
}

/** One parsed shard (`files.parseShard`). */
export interface Shard {
  dim: number;
  rows: ShardPassage[];
}

/** What the engine keeps of each passage without its text (row order). */
export interface PassageMeta {
  passage_id: string;
  docname: string;
  url: string;
  chapter: string;
  section: string;
  heading_path: string[];
  snippet: string;
}

/** One line of `passages.jsonl` (`contracts.PassageRecord`); the browser
 * puts it together from the static index, the listing and a shard. */
export interface PassageRecord extends PassageMeta {
  text: string;
  char_start: number;
  char_end: number;
  content_hash: string;
  /** Several sites served together (`contracts.ServedRecord`). */
  site?: string;
  version?: string;
}

/** Approximate dense search over a big book's passage codes (`dense_index.js`). */
export interface ApproxDense {
  /** The `k` best rows for `q`, and the score of those and of every row in `extra`. */
  search(q: Float32Array, k: number, extra: number[]): Promise<{ rows: number[]; scores: Map<number, number> }>;
  /** A row's exact passage vector (float32). */
  vector(row: number): Promise<Float32Array>;
}

/** Everything retrieval needs, loaded once. */
export interface EngineCore {
  /** `_ragcite/manifest.json`. */
  manifest: Manifest;
  /** ranker.json (the file the Python engine reads) as read: `unknown`
   * until `ranker.parseRanker` checks it. */
  ranker: unknown;
  /** The book's passages. */
  rows: number;
  /** The sharded static index's searcher (BM25, display fields). */
  lexical: import("./search.js").ShardedSearch;
  /** Every passage vector, for a book searched exactly: row r is
   * `codes[r * dim : (r + 1) * dim] * scales[r]` (null otherwise). */
  passageVectors: { codes: Int8Array; scales: Float32Array; dim: number; rows: number } | null;
  /** A big book's approximate dense search (null otherwise). */
  dense: ApproxDense | null;
}

/** One retrieved passage in full. */
export interface PassageFull {
  row: number;
  /** The full passages.jsonl record, with `text`. */
  record: PassageRecord;
  /** Its sentences' vectors (rows `offsets[row]:offsets[row + 1]` of
   * sentence_embeddings / sentence_scales), null without them. */
  sentences: SentenceVectors | null;
}

/** Where the engine's files come from (Node: `js/test/file_store.js`;
 * the browser: shard files). */
export interface EngineStore {
  core(): Promise<EngineCore>;
  /** Per question: only the rows it needs, in the order asked. */
  passages(rows: number[]): Promise<PassageFull[]>;
}

export interface BrowserEngine {
  /** The answer JSON of `POST /api/ask` (`metadata.engine` is "browser").
   * `qvec`: the question's vector from the encoder, or null (BM25 alone).
   * Throws a RangeError for a question that is empty or over 2000 characters.
   * `opts.selection`: the reader's selected text, asked about (selection
   * mode), which needs `opts.embed`, the encoder over several texts. */
  answer(
    question: string,
    qvec: Float32Array | null,
    opts?: { k?: number; selection?: string; embed?: (texts: string[], kind?: "query" | "passage") => Promise<Float32Array[]> },
  ): Promise<Answer>;
}

/** A sentence and its [start, end) in its text (UTF-16 offsets). */
export interface EngineSentence {
  text: string;
  start: number;
  end: number;
}

/** One source an answer may cite (`answer/evidence.py`'s Evidence). */
export interface EngineEvidence {
  key: string;
  /** The passage's record; null for the reader's selection. */
  record: PassageRecord | null;
  text: string;
  sentences: EngineSentence[];
  /** float32 sentence vectors, `dim` numbers each; null when unknown. */
  vectors: Float32Array | null;
  dim: number;
  words: Set<string>;
  numbers: Set<string>;
  /** Cosine of the question and the whole passage. */
  relevance: number;
  /** 1-based retrieval rank (0: the reader's selection, whose record is null). */
  rank: number;
  /** Why the passage is judged without sentence similarity, if it is. */
  problem: string | null;
}

/** Consecutive sentences `first..last` of evidence item `evidence`. */
export interface EngineUnit {
  evidence: number;
  first: number;
  last: number;
  text: string;
  start: number;
  end: number;
  extended: boolean;
}

/** A unit with its signals (`units.FEATURES`) and the ranker's probability. */
export interface EngineCandidate {
  unit: EngineUnit;
  probability: number;
  row: number[];
}

export interface EngineSupport {
  score: number;
  similarity: number;
  overlap: number;
  numbersOk: boolean;
  sentence: number;
}

export interface EngineClaim {
  text: string;
  sources: number[];
  supports: EngineSupport[];
  vector: Float32Array | null;
  /** What to quote from the first source, when not its best sentence. */
  quote: EngineSentence | null;
}

// -- The engine's worker and the page (js/worker.js, js/browser.js) ----------

/** Messages from the page to the worker (`browser.js` sends them; the
 * worker reads whatever arrives into one of these, or ignores it). */
export type WorkerRequest =
  /** Check that WebAssembly may run, load the engine, then say `ready`. */
  | { type: "load"; manifest: string }
  /** Answer (about the reader's `selection` when given: selection mode). */
  | { type: "ask"; id: number; question: string; k?: number; selection?: string | null }
  /** The static search's best passages, as soon as the static index is in. */
  | { type: "search"; id: number; question: string; k: number }
  /** Stop loading. */
  | { type: "cancel" };

/** Why the worker could not load or answer; `WHY` of `browser.js` has the
 * reader's sentence for each (see `worker.js`). */
export type WorkerErrorKind =
  | "off"
  | "wasm"
  | "csp"
  | "memory"
  | "integrity"
  | "missing"
  | "network"
  | "format"
  | "engine"
  | "start"
  | "invalid"
  | "aborted";

/** Bytes loaded of each file, by the manifest's role. */
export type FileBytes = Record<string, { loaded: number; total: number }>;

/** Where the worker's start went (ms), for `benchmarks/engine_start.py`. */
export interface StartTimings {
  files: number;
  checksums: number;
  session: number;
  probe: number;
  engine: number;
  total: number;
}

/** Messages from the worker to the page. An `error` with an `id` answers
 * that request; without, the load failed. */
export type WorkerReply =
  | { type: "progress"; loaded: number; total: number; files: FileBytes }
  /** Every file is in; the runtime compiles and the model's session starts. */
  | { type: "phase"; phase: "starting" }
  | { type: "ready"; seconds: number; bytes: number; timings: StartTimings }
  | { type: "answer"; id: number; answer: Answer }
  | { type: "hits"; id: number; hits: StaticHit[] }
  | { type: "error"; id?: number; kind: string; message: string };

/** What the worker sets on onnxruntime-web's module before the encoder
 * starts (`encode.js` takes the whole module). */
export interface OrtRuntime {
  env: {
    wasm: {
      numThreads?: number;
      proxy?: boolean;
      wasmBinary?: Uint8Array | ArrayBuffer;
      wasmPaths?: string | { mjs?: string; wasm?: string };
    };
  };
}

/**
 * What each script provides, by file name: `lib.need("sentences")` is
 * `typeof import("./sentences.js")` (see `lib.js`).
 */
export interface RagciteModules {
  answer: typeof import("./answer.js");
  browser: typeof import("./browser.js");
  citations: typeof import("./citations.js");
  client: typeof import("./client.js");
  deeplinks: typeof import("./deeplinks.js");
  dense_index: typeof import("./dense_index.js");
  dom: typeof import("./dom.js");
  encode: typeof import("./encode.js");
  engine: typeof import("./engine.js");
  evidence: typeof import("./evidence.js");
  feedback: typeof import("./feedback.js");
  files: typeof import("./files.js");
  fusion: typeof import("./fusion.js");
  panel: typeof import("./panel.js");
  previews: typeof import("./previews.js");
  quotes: typeof import("./quotes.js");
  ranker: typeof import("./ranker.js");
  render: typeof import("./render.js");
  retrieve: typeof import("./retrieve.js");
  search: typeof import("./search.js");
  selection: typeof import("./selection.js");
  selection_answer: typeof import("./selection_answer.js");
  sentences: typeof import("./sentences.js");
  settings: typeof import("./settings.js");
  sse: typeof import("./sse.js");
  spec: typeof import("./spec.js");
  static: typeof import("./static.js");
  stemmer: typeof import("./stemmer.js");
  store: typeof import("./store.js");
  tokenize: typeof import("./tokenize.js");
  unigram: typeof import("./unigram.js");
  units: typeof import("./units.js");
  verify: typeof import("./verify.js");
  wordpiece: typeof import("./wordpiece.js");
  worker: typeof import("./worker.js");
  [snowball: `snowball/${string}`]: { stem: (word: string) => string };
}

/** The one registry every script finds its neighbours through (`lib.js`). */
export interface RagciteLib {
  need<K extends keyof RagciteModules>(name: K): RagciteModules[K];
  has(name: string): boolean;
  provide<K extends keyof RagciteModules>(name: K, api: RagciteModules[K]): void;
}

declare global {
  interface Window {
    ragcite: RagciteApi;
  }
  /** `lib.js`'s registry, in the page and in the worker. */
  var ragcite_lib: RagciteLib;
  /** The static index, once its file ran as a script (a page from file://). */
  var ragcite_static_index: unknown;
}
