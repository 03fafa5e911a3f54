/**
 * The layering of src/: each folder imports only the folders below it (docs/architecture.md draws
 * them; .dependency-cruiser.cjs states the rules). dependency-cruiser reads every import of src/,
 * type-only ones marked as such, and this fails naming each import that breaks a rule and each
 * ring of files that import each other.
 *
 * A rule whose path is mistyped matches nothing and passes forever, so the same rules first run over
 * a small tree made to break each of them once (fixtures/layering/src/) and must find exactly that.
 */
import { join } from "node:path";
import { cruise, type ICruiseResult, type IViolation } from "dependency-cruiser";
import extractDepcruiseOptions from "dependency-cruiser/config-utl/extract-depcruise-options";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "..", "..");
const FIXTURE = join(import.meta.dirname, "fixtures", "layering");

/** The violations of the project's rules in `<baseDir>/src`. */
async function violations(baseDir: string): Promise<IViolation[]> {
  const options = await extractDepcruiseOptions(join(ROOT, ".dependency-cruiser.cjs"));
  const { output } = await cruise(["src"], { ...options, baseDir });
  return (output as ICruiseResult).summary.violations;
}

/**
 * One line per violation: `rule: from → to` (an orphan's: `rule: file`). dependency-cruiser reports
 * a cycle once per edge on it, so the cycles are gathered into the rings they form (files joined by
 * some cycle), one line per ring: its files, and its shortest cycle to start reading from.
 */
function lines(found: readonly IViolation[]): string[] {
  const out = found.filter((v) => !v.cycle).map((v) => `${v.rule.name}: ${v.from === v.to ? v.from : `${v.from} → ${v.to}`}`);
  const cycles = found.filter((v) => v.cycle).map((v) => [v.from, ...v.cycle!.map((step) => step.name)]);
  const ring = new Map<string, string>();
  const root = (file: string): string => {
    const parent = ring.get(file) ?? file;
    return parent === file ? file : root(parent);
  };
  for (const cycle of cycles) for (const file of cycle) ring.set(root(file), root(cycle[0]!));
  const rings = new Map<string, string[][]>();
  for (const cycle of cycles) rings.set(root(cycle[0]!), [...(rings.get(root(cycle[0]!)) ?? []), cycle]);
  for (const members of rings.values()) {
    const files = [...new Set(members.flat())].sort();
    const shortest = members.reduce((a, b) => (b.length < a.length ? b : a));
    out.push(`no-circular: ${files.length} files in a ring (${files.join(", ")}); e.g. ${shortest.join(" → ")}`);
  }
  return out.sort();
}

describe("layering", () => {
  it("the rules catch each kind of break, and let type-only imports through where they say", async () => {
    expect(lines(await violations(FIXTURE))).toEqual([
      "browser-code-is-bundled-not-imported: src/worker/dashboard/routes.ts → src/worker/dashboard/browser/view.ts",
      "browser-imports-shared: src/worker/dashboard/browser/view.ts → src/worker/app.ts",
      "client-imports-shared-and-routing: src/client/rpc.ts → src/durable/inner.ts",
      "client-names-only-the-lane-and-the-app-as-types: src/client/rpc.ts → src/durable/inner.ts",
      "durable-imports-shared-and-routing: src/durable/inner.ts → src/client/plain.ts",
      "no-circular: 2 files in a ring (src/shared/cycle-a.ts, src/shared/cycle-b.ts); e.g. src/shared/cycle-a.ts → src/shared/cycle-b.ts → src/shared/cycle-a.ts",
      "no-orphans: src/shared/alone.ts",
      "routing-imports-shared: src/routing/route.ts → src/durable/inner.ts",
      "shared-imports-nothing-of-ours: src/shared/upward.ts → src/durable/lane.ts",
      "worker-imports-shared-routing-durable: src/worker/app.ts → src/client/plain.ts",
      "worker-reaches-the-lane-through-its-objects: src/worker/app.ts → src/durable/inner.ts",
    ]);
  });

  it("src/ keeps the one-way rule and has no import cycle", async () => {
    expect(lines(await violations(ROOT))).toEqual([]);
  });
});
