/**
 * `npm run check:pack [-- --node /path/to/another/node …]`: what a user would install, checked.
 *
 * 1. `npm run build`, `npm pack`, then the tarball's file list: only what a user needs
 *    (dist, package.json, README, LICENSE, CHANGELOG), every target of the `exports` map, and no
 *    built entry the map leaves out; no sources, tests, test helpers, benchmarks, scripts or examples.
 * 2. The tarball is copied to examples/switchyard.tgz, the fixed name the examples depend on
 *    (`file:../switchyard.tgz`). Their lockfiles must not record its integrity: `npm ci` would then
 *    install the tarball it cached under that integrity, silently, instead of the new one (seen
 *    with npm 11), so an integrity that `npm install` wrote back is dropped here, and said so.
 *    Nor may they record other dependencies of it than package.json's: `npm ci` installs what the
 *    lockfile says without a word, and a dependency added since would be missing (or found by
 *    chance in this repo's own node_modules above the example).
 * 3. It installs into an empty project (peer dependencies as npm resolves them); there
 *    scripts/pack-consumer/usage.ts type-checks against the packed declarations with skipLibCheck
 *    off, and smoke.mjs imports `switchyard/client` from plain Node: with this Node and with each
 *    `--node` given (CI passes the machine's own Node 20).
 *
 * Exits 1 at the first broken check. Node runs this file by type stripping.
 */
import { execFileSync } from "node:child_process";
import { copyFileSync, cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dirname, "..");
const EXAMPLES = join(ROOT, "examples");
const EXAMPLES_TARBALL = join(EXAMPLES, "switchyard.tgz");

/** Whatever a user needs and nothing else. */
const ALLOWED = [/^package\.json$/, /^README\.md$/, /^LICENSE$/, /^CHANGELOG\.md$/, /^dist\/[\w.-]+\.(js|d\.ts)$/];
/** What must never travel, named so that a failure says what leaked. */
const FORBIDDEN: [RegExp, string][] = [
  [/(^|\/)test\/|\.test\.[cm]?[jt]s$/, "a test or test helper"],
  [/^bench\//, "the benchmark"],
  [/^examples\//, "an example"],
  [/^scripts\//, "a repo script"],
  [/^src\//, "a source file (the package ships dist/)"],
  [/\.map$/, "a source map (it would point into src/)"],
];

/** Runs a command; its output goes to ours unless `capture` asks for its stdout. */
function run(command: string, args: string[], cwd: string, capture = false): string {
  return execFileSync(command, args, { cwd, encoding: "utf8", stdio: ["ignore", capture ? "pipe" : "inherit", "inherit"] }) ?? "";
}

function fail(message: string): never {
  throw new Error(message);
}

/** Every file path the `exports` map points at (conditions nested at any depth). */
function exportTargets(exports: unknown): string[] {
  if (typeof exports === "string") return [exports.replace(/^\.\//, "")];
  if (exports && typeof exports === "object") return Object.values(exports).flatMap(exportTargets);
  return [];
}

/** Drops the tarball's integrity from every example's lockfile, and checks its dependencies there (see 2. above). */
function unpinTarball(dependencies: Record<string, string>): void {
  for (const example of readdirSync(EXAMPLES, { withFileTypes: true })) {
    const lockPath = join(EXAMPLES, example.name, "package-lock.json");
    if (!example.isDirectory() || !existsSync(lockPath)) continue;
    const lock = JSON.parse(readFileSync(lockPath, "utf8")) as {
      packages: Record<string, { resolved?: string; integrity?: string; dependencies?: Record<string, string> }>;
    };
    const entry = lock.packages["node_modules/switchyard"];
    if (entry?.resolved !== "file:../switchyard.tgz") fail(`${lockPath} must resolve switchyard to file:../switchyard.tgz`);
    const sorted = (deps: Record<string, string> = {}) => JSON.stringify(Object.entries(deps).sort());
    if (sorted(entry.dependencies) !== sorted(dependencies)) {
      fail(`examples/${example.name}/package-lock.json records other dependencies of switchyard than package.json: run \`npm install ../switchyard.tgz\` there (a plain \`npm install\` keeps the lockfile), then this again`);
    }
    if (entry.integrity === undefined) continue;
    delete entry.integrity;
    writeFileSync(lockPath, `${JSON.stringify(lock, null, 2)}\n`);
    console.log(`check:pack: dropped the integrity of switchyard.tgz from examples/${example.name}/package-lock.json (commit that)`);
  }
}

function otherNodes(argv: string[]): string[] {
  const nodes: string[] = [];
  for (let i = 0; i < argv.length; i++) if (argv[i] === "--node" && argv[i + 1]) nodes.push(argv[++i]!);
  return nodes;
}

const work = mkdtempSync(join(tmpdir(), "switchyard-pack-"));
try {
  // 1. Pack and list.
  // Built here rather than by prepack, whose output would land in the JSON answer of `npm pack`.
  run("npm", ["run", "build"], ROOT);
  const [packed] = JSON.parse(run("npm", ["pack", "--json", "--ignore-scripts", "--pack-destination", work], ROOT, true)) as { filename: string; files: { path: string }[] }[];
  if (!packed) fail("npm pack answered nothing");
  const files = packed.files.map((file) => file.path).sort();
  for (const path of files) {
    const forbidden = FORBIDDEN.find(([pattern]) => pattern.test(path));
    if (forbidden) fail(`the tarball holds ${forbidden[1]}: ${path}`);
    if (!ALLOWED.some((pattern) => pattern.test(path))) fail(`the tarball holds a file no user needs: ${path}`);
  }
  const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { exports: unknown; dependencies: Record<string, string> };
  const targets = exportTargets(pkg.exports);
  for (const required of [...targets, "README.md", "LICENSE", "CHANGELOG.md"]) {
    if (!files.includes(required)) fail(`the tarball lacks ${required}`);
  }
  // An entry of tsdown.config.ts that the exports map forgot (shared chunks carry a hash suffix).
  const unexported = files.filter((path) => path.startsWith("dist/") && !/-[\w-]{8}\.(js|d\.ts)$/.test(path) && !targets.includes(path));
  if (unexported.length > 0) fail(`built entries missing from the exports map of package.json: ${unexported.join(", ")}`);
  console.log(`check:pack: ${packed.filename} holds ${files.length} files, all expected:\n  ${files.join("\n  ")}`);

  // 2. The fixed name the examples' lockfiles point at.
  const tarball = join(work, packed.filename);
  copyFileSync(tarball, EXAMPLES_TARBALL);
  unpinTarball(pkg.dependencies);

  // 3. Install it as a user would, then use the client entry from plain Node.
  const consumer = join(work, "consumer");
  cpSync(join(ROOT, "scripts", "pack-consumer"), consumer, { recursive: true });
  writeFileSync(join(consumer, "package.json"), JSON.stringify({ name: "pack-consumer", private: true, type: "module" }));
  run("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", tarball], consumer);
  run(process.execPath, [join(ROOT, "node_modules", "typescript", "bin", "tsc"), "-p", consumer], consumer);
  console.log("check:pack: usage.ts compiles against the packed declarations (skipLibCheck off, no Workers or Node types)");
  for (const node of [process.execPath, ...otherNodes(process.argv.slice(2))]) {
    run(node, ["smoke.mjs"], consumer);
  }
} catch (error) {
  console.error(`check:pack: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
} finally {
  rmSync(work, { recursive: true, force: true });
}
