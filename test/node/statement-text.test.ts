/**
 * Two ways of writing a parameter that make SQLite (3.53, as workerd bundles it) compile a statement
 * again at every run, found by counting `sqlite3Reprepare` in a lane under load: the
 * planner marks the parameter as one whose value may change the plan, and any new binding of it
 * then expires the prepared statement, so workerd's statement cache saves nothing. The claim's
 * candidates paid ~200 µs a run for it. Written `+?N`, the parameter is an expression the planner
 * does not look into, and the statement is compiled once.
 *
 * - `LIMIT ?N` (the planner reads a bound LIMIT);
 * - `column = ?N` in a statement with `ORDER BY` (the planner asks whether the ordering column is
 *   pinned by an equality with a value it may read).
 *
 * This reads every SQL text in `src/` and fails on either.
 */
import { readFileSync, readdirSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "..", "..");

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

/** The template literals of a file that hold SQL (their `${…}` parts left as they are). */
function sqlTexts(text: string): string[] {
  return text.split("`").filter((part, i) => i % 2 === 1 && /\b(SELECT|UPDATE|INSERT|DELETE)\b/.test(part));
}

const texts = sources(join(ROOT, "src")).flatMap((path) => sqlTexts(readFileSync(path, "utf8")).map((sql) => ({ file: relative(ROOT, path), sql })));

describe("SQL texts: no parameter that makes SQLite compile the statement again at every run", () => {
  it("finds the SQL of the lane's statements (the check reads something)", () => {
    expect(texts.length).toBeGreaterThan(50);
    expect(texts.some(({ sql }) => sql.includes("LIMIT +?"))).toBe(true);
    expect(texts.some(({ sql }) => /ORDER BY/.test(sql) && /= \+\?\d/.test(sql))).toBe(true);
  });

  it("never binds a LIMIT bare: LIMIT +?N", () => {
    const bare = texts.filter(({ sql }) => /\bLIMIT\s+\?/.test(sql));
    expect(bare.map(({ file, sql }) => `${file}: ${sql.trim().slice(0, 120)}`)).toEqual([]);
  });

  it("never compares a column with a bare parameter in a statement that orders: = +?N", () => {
    const bare = texts.filter(({ sql }) => /\bORDER BY\b/.test(sql) && /(^|[^!<>])=\s*\?/.test(sql));
    expect(bare.map(({ file, sql }) => `${file}: ${sql.trim().slice(0, 120)}`)).toEqual([]);
  });
});
