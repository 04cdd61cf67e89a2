// @ts-check
"use strict";
/**
 * How large each JS file and function is, read by the TypeScript compiler's
 * parser (so a brace in a string or a regex cannot fool it). The limits are
 * the ones `tests/test_sizes.py` keeps for Python: a factory that returns an
 * object of methods is a class in all but name.
 *
 * - No file over `FILE_LINES` (the Snowball port, `stemmer.js` and
 *   `snowball/`, is generated text and exempt).
 * - No function (or class) over `FUNCTION_LINES`.
 * - No function nested inside another over `NESTED_LINES`.
 *
 * A file's outermost `(function () { ... })();` is not counted as a
 * function: it is the module scope of a classic script (`lib.js`), the
 * place a module keeps its top level, and the functions directly in it are
 * top-level functions. Only that one wrapper, a lone call of a function
 * expression as a statement of the file itself, is exempt; every function
 * inside it counts.
 *
 * A function's lines run from its first token (after its doc comment) to
 * its closing brace, both included.
 *
 * Run as a script, it prints the largest files and functions of a folder:
 * `node js/test/sizes.js [folder] [--top N]` (default `js/`, 10).
 */

const fs = require("node:fs");
const path = require("node:path");
const ts = require("typescript");

const FILE_LINES = 700;
const FUNCTION_LINES = 300;
const NESTED_LINES = 150;
/** The Snowball port: generated from the Snowball sources, exempt. */
const EXEMPT = new Set(["stemmer.js"]);

/**
 * @typedef {object} Measured
 * @property {string} file
 * @property {number} line 1-based line of its first token
 * @property {string} name
 * @property {number} lines
 * @property {number} depth how many functions enclose it (the file's wrapper not counted)
 */

/** @param {string} text */
function lineCount(text) {
  if (!text) return 0;
  return text.split("\n").length - (text.endsWith("\n") ? 1 : 0);
}

/**
 * @param {ts.Node} node
 * @returns {node is ts.FunctionLikeDeclaration | ts.ClassLikeDeclaration}
 */
function isUnit(node) {
  return (
    ts.isFunctionDeclaration(node) ||
    ts.isFunctionExpression(node) ||
    ts.isArrowFunction(node) ||
    ts.isMethodDeclaration(node) ||
    ts.isConstructorDeclaration(node) ||
    ts.isGetAccessorDeclaration(node) ||
    ts.isSetAccessorDeclaration(node) ||
    ts.isClassDeclaration(node) ||
    ts.isClassExpression(node)
  );
}

/** @param {ts.Expression} node */
function unwrap(node) {
  while (ts.isParenthesizedExpression(node)) node = node.expression;
  return node;
}

/**
 * The file's module-scope wrapper: the function of a statement
 * `(function () { ... })();` (or `(() => { ... })()`) of the file itself.
 * @param {ts.SourceFile} sf
 * @returns {Set<ts.Node>}
 */
function wrappers(sf) {
  /** @type {Set<ts.Node>} */
  const found = new Set();
  for (const statement of sf.statements) {
    if (!ts.isExpressionStatement(statement)) continue;
    const call = unwrap(statement.expression);
    if (!ts.isCallExpression(call)) continue;
    const callee = unwrap(call.expression);
    if (ts.isFunctionExpression(callee) || ts.isArrowFunction(callee)) found.add(callee);
  }
  return found;
}

/**
 * A readable name: the declared one, else what it is assigned to, else
 * what it is passed to.
 * @param {ts.Node} node
 * @param {ts.SourceFile} sf
 */
function nameOf(node, sf) {
  const named = /** @type {{name?: ts.Node}} */ (node).name;
  if (named) return named.getText(sf);
  if (ts.isConstructorDeclaration(node)) return "constructor";
  let at = node;
  while (ts.isParenthesizedExpression(at.parent)) at = at.parent;
  const parent = at.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) {
    return parent.name.getText(sf);
  }
  if (ts.isBinaryExpression(parent) && parent.right === at) return parent.left.getText(sf);
  if (ts.isCallExpression(parent) && parent.expression === at) return "(called at once)";
  if (ts.isCallExpression(parent)) return `(passed to ${parent.expression.getText(sf).slice(0, 40)})`;
  return "(anonymous)";
}

/**
 * Every function and class of a source text, with its length and depth.
 * @param {string} text
 * @param {string} file shown in reports
 * @returns {Measured[]}
 */
function measureSource(text, file) {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.JS);
  const skip = wrappers(sf);
  /** @type {Measured[]} */
  const found = [];
  /**
   * @param {ts.Node} node
   * @param {number} depth
   */
  function visit(node, depth) {
    let inner = depth;
    if (isUnit(node) && !skip.has(node)) {
      const first = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
      const last = sf.getLineAndCharacterOfPosition(node.getEnd()).line;
      found.push({ file, line: first + 1, name: nameOf(node, sf), lines: last - first + 1, depth });
      inner = depth + 1;
    }
    ts.forEachChild(node, (child) => visit(child, inner));
  }
  visit(sf, 0);
  return found;
}

/**
 * `file:line name (n lines, limit m)` for each function over its limit, and
 * `file (n lines, limit m)` for the file itself.
 * @param {string} text
 * @param {string} file
 * @returns {string[]}
 */
function offenders(text, file) {
  const out = [];
  const lines = lineCount(text);
  if (lines > FILE_LINES) out.push(`${file} (${lines} lines, limit ${FILE_LINES})`);
  for (const m of measureSource(text, file)) {
    const limit = m.depth === 0 ? FUNCTION_LINES : NESTED_LINES;
    if (m.lines > limit) {
      out.push(`${m.file}:${m.line} ${m.name} (${m.lines} lines, limit ${limit}${m.depth ? ", nested" : ""})`);
    }
  }
  return out;
}

/**
 * The checked files of a folder: its own `*.js`, not `test/`, not
 * `snowball/`, not the Snowball port.
 * @param {string} folder
 */
function checkedFiles(folder) {
  return fs
    .readdirSync(folder)
    .filter((name) => name.endsWith(".js") && !EXEMPT.has(name))
    .sort()
    .map((name) => path.join(folder, name));
}

/**
 * The `top` largest files and functions of a folder, as two Markdown tables.
 * @param {string} folder
 * @param {number} top
 */
function report(folder, top) {
  const files = checkedFiles(folder).concat(
    fs.existsSync(path.join(folder, "stemmer.js")) ? [path.join(folder, "stemmer.js")] : [],
  );
  const sized = files.map((file) => ({ file: path.basename(file), text: fs.readFileSync(file, "utf8") }));
  const byFile = sized
    .map(({ file, text }) => ({ file, lines: lineCount(text) }))
    .sort((a, b) => b.lines - a.lines)
    .slice(0, top);
  const byFunction = sized
    .flatMap(({ file, text }) => measureSource(text, file))
    .sort((a, b) => b.lines - a.lines)
    .slice(0, top);
  const rows = [
    "| file | lines |",
    "| --- | ---: |",
    ...byFile.map((f) => `| ${f.file}${EXEMPT.has(f.file) ? " (exempt)" : ""} | ${f.lines} |`),
    "",
    "| function | where | lines | nested |",
    "| --- | --- | ---: | --- |",
    ...byFunction.map(
      (m) => `| ${m.name}${EXEMPT.has(m.file) ? " (exempt)" : ""} | ${m.file}:${m.line} | ${m.lines} | ${m.depth ? "yes" : ""} |`,
    ),
  ];
  return rows.join("\n");
}

module.exports = { FILE_LINES, FUNCTION_LINES, NESTED_LINES, checkedFiles, lineCount, measureSource, offenders, report };

/**
 * Every file and function of a folder (`benchmarks/code_sizes.py`).
 * @param {string} folder
 */
function sizes(folder) {
  const files = checkedFiles(folder).concat(
    fs.existsSync(path.join(folder, "stemmer.js")) ? [path.join(folder, "stemmer.js")] : [],
  );
  const sized = files.map((file) => ({ file: path.basename(file), text: fs.readFileSync(file, "utf8") }));
  return {
    files: sized.map(({ file, text }) => ({ name: file, lines: lineCount(text) })),
    functions: sized.flatMap(({ file, text }) =>
      measureSource(text, file).map((m) => ({ name: `${m.file}:${m.line} ${m.name}`, lines: m.lines, nested: m.depth > 0 })),
    ),
  };
}

module.exports.sizes = sizes;

if (require.main === module) {
  const args = process.argv.slice(2);
  const json = args.indexOf("--json");
  if (json >= 0) args.splice(json, 1);
  const at = args.indexOf("--top");
  const top = at >= 0 ? Number(args.splice(at, 2)[1]) : 10;
  const folder = args[0] || path.join(__dirname, "..");
  process.stdout.write(json >= 0 ? `${JSON.stringify(sizes(folder))}\n` : `${report(folder, top)}\n`);
}
