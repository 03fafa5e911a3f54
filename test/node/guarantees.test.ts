/**
 * docs/guarantees.md promises only what a test proves: every row of its guarantee tables cites at
 * least one test as `test/<file>.test.ts` › "<test name>" (optionally preceded by the names of the
 * enclosing `describe` blocks, each as › "<name>"), and every such citation must name a file that
 * exists and a call `describe(…)`, `it(…)`, `test(…)` (or their `.each`, `.skip`, … forms) in it
 * whose name is exactly that. The test files are parsed with the TypeScript compiler, so both quote
 * styles and template literals are read as the source wrote them; a `${…}` of a template literal,
 * and a `%s` or `$name` of an `.each` name, stands for any text.
 */
import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");
const DOC = "docs/guarantees.md";

/** `test/…/x.test.ts` › "name" (› "name")…: a file and the names of a chain of nested calls, outermost first. */
const CITATION = /`(test\/[^`\s]+\.test\.ts)`((?:\s*›\s*"[^"\n]+")+)/g;
const SEGMENT = /"([^"\n]+)"/g;
/** Any mention of a test file, cited properly or not. */
const TEST_FILE = /`test\/[^`\s]+\.test\.ts`/g;

interface Citation {
  file: string;
  names: string[];
  line: number;
}

interface Row {
  text: string;
  line: number;
}

/** The rows of the tables whose header starts with "Guarantee": one guarantee each. */
function guaranteeRows(markdown: string): Row[] {
  const rows: Row[] = [];
  let inTable = false;
  markdown.split("\n").forEach((text, index) => {
    const cells = text.trim().startsWith("|");
    if (!cells) {
      inTable = false;
      return;
    }
    if (/^\|\s*Guarantee\s*\|/i.test(text.trim())) {
      inTable = true;
      return;
    }
    if (!inTable || /^\|[\s|:-]+\|$/.test(text.trim())) return;
    rows.push({ text, line: index + 1 });
  });
  return rows;
}

function citations(markdown: string): Citation[] {
  const found: Citation[] = [];
  markdown.split("\n").forEach((text, index) => {
    for (const [, file, chain] of text.matchAll(CITATION)) {
      found.push({ file: file!, names: [...chain!.matchAll(SEGMENT)].map(([, name]) => name!), line: index + 1 });
    }
  });
  return found;
}

/** A test or describe call of a file: how its name reads, and the describe it sits in. */
interface TestCall {
  name: RegExp;
  source: string;
  parent: TestCall | null;
}

const TEST_FUNCTIONS = new Set(["describe", "it", "test"]);
const MODIFIERS = new Set(["skip", "only", "concurrent", "sequential", "todo", "fails", "skipIf", "runIf"]);

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** Whether `expression` is `it`, `describe.skip`, `test.concurrent.only`…; and whether it ends in `.each`. */
function testFunction(expression: ts.Expression): { each: boolean } | null {
  if (ts.isIdentifier(expression)) return TEST_FUNCTIONS.has(expression.text) ? { each: false } : null;
  if (ts.isPropertyAccessExpression(expression)) {
    const member = expression.name.text;
    if (member !== "each" && !MODIFIERS.has(member)) return null;
    const base = testFunction(expression.expression);
    return base && { each: member === "each" || base.each };
  }
  // `it.skipIf(cond)(name, fn)`
  if (ts.isCallExpression(expression) && ts.isPropertyAccessExpression(expression.expression) && MODIFIERS.has(expression.expression.name.text)) {
    return testFunction(expression.expression);
  }
  return null;
}

/** The name of a call as a pattern: literal text, with `${…}` (and `.each`'s `%s`, `$name`) matching any text. */
function namePattern(argument: ts.Expression | undefined, each: boolean): { name: RegExp; source: string } | null {
  if (!argument) return null;
  const literal = (text: string) => {
    const escaped = escape(text);
    return each ? escaped.replace(/%[sdifjoOpc#]/g, ".+").replace(/\\\$[A-Za-z_][\w.]*/g, ".+") : escaped;
  };
  if (ts.isStringLiteral(argument) || ts.isNoSubstitutionTemplateLiteral(argument)) {
    return { name: new RegExp(`^${literal(argument.text)}$`, "s"), source: argument.text };
  }
  if (ts.isTemplateExpression(argument)) {
    const parts = [literal(argument.head.text), ...argument.templateSpans.map((span) => `.+${literal(span.literal.text)}`)];
    return { name: new RegExp(`^${parts.join("")}$`, "s"), source: argument.getText().slice(1, -1) };
  }
  return null;
}

/** Every describe/it/test call of a test file with a name the source spells out. */
function testCalls(path: string): TestCall[] {
  const source = ts.createSourceFile(path, readFileSync(path, "utf8"), ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const calls: TestCall[] = [];
  const visit = (node: ts.Node, parent: TestCall | null): void => {
    if (ts.isCallExpression(node)) {
      // `it.each(table)(name, fn)`: the outer call is the test; the inner one only holds the table.
      const callee = ts.isCallExpression(node.expression) && ts.isPropertyAccessExpression(node.expression.expression) && node.expression.expression.name.text === "each"
        ? testFunction(node.expression.expression)
        : testFunction(node.expression);
      const isTable = ts.isPropertyAccessExpression(node.expression) && node.expression.name.text === "each";
      const named = callee && !isTable ? namePattern(node.arguments[0], callee.each) : null;
      if (named) {
        const call: TestCall = { ...named, parent };
        calls.push(call);
        node.arguments.forEach((argument) => visit(argument, call));
        visit(node.expression, parent);
        return;
      }
    }
    ts.forEachChild(node, (child) => visit(child, parent));
  };
  visit(source, null);
  return calls;
}

/** Whether a call is named by the last name of the chain, and its enclosing describes by the others, innermost first. */
function matches(call: TestCall, names: string[]): boolean {
  let current: TestCall | null = call;
  for (let i = names.length - 1; i >= 0; i--) {
    if (!current || !current.name.test(names[i]!)) return false;
    current = current.parent;
  }
  return true;
}

const markdown = readFileSync(resolve(ROOT, DOC), "utf8");
const rows = guaranteeRows(markdown);
const cited = citations(markdown);
const callsByFile = new Map<string, TestCall[]>();
const callsOf = (file: string) => {
  let calls = callsByFile.get(file);
  if (!calls) callsByFile.set(file, (calls = testCalls(resolve(ROOT, file))));
  return calls;
};

describe("docs/guarantees.md", () => {
  it("has guarantee tables, and cites tests in them", () => {
    expect(rows.length).toBeGreaterThan(20);
    expect(cited.length).toBeGreaterThanOrEqual(rows.length);
  });

  it("cites at least one test in every guarantee row, and every test file it names there in full", () => {
    const uncited = rows.filter((row) => [...row.text.matchAll(CITATION)].length === 0).map((row) => `line ${row.line}: ${row.text.slice(0, 120)}`);
    expect(uncited, "guarantee rows without a cited test").toEqual([]);
    const loose = rows
      .filter((row) => [...row.text.matchAll(TEST_FILE)].length !== [...row.text.matchAll(CITATION)].length)
      .map((row) => `line ${row.line}: a test file named without › "test name"`);
    expect(loose).toEqual([]);
  });

  it("names only test files that exist, and tests that exist in them by their exact names", () => {
    const wrong = cited.flatMap(({ file, names, line }) => {
      const where = `line ${line}: ${file} › ${names.map((name) => JSON.stringify(name)).join(" › ")}`;
      if (!existsSync(resolve(ROOT, file))) return [`${where}: no such file`];
      return callsOf(file).some((call) => matches(call, names)) ? [] : [`${where}: no describe/it/test of that name`];
    });
    expect(wrong).toEqual([]);
  });

  it("reads test names as the source spells them (a control for the check above)", () => {
    const calls = callsOf("test/durable/history/history.test.ts");
    expect(calls.some((call) => matches(call, ["errors", "keeps only the last 20"]))).toBe(true); // a template literal
    expect(calls.some((call) => matches(call, ["errors", "keeps only the first 20"]))).toBe(false);
    expect(calls.some((call) => matches(call, ["progress", "keeps only the last 20"]))).toBe(false); // wrong describe
    expect(callsOf("test/worker/openapi.test.ts").some((call) => matches(call, ["GET /healthz", 'answers {"ok":true} without auth']))).toBe(true); // single quotes
    expect(callsOf("test/durable/attempts/cancel.test.ts").some((call) => matches(call, ["settles a cancel-requested job cancelled when its holder calls fail"]))).toBe(true); // it.each
  });
});
