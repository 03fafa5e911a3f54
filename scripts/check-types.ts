/**
 * `npm run types:check`: fails when worker-configuration.d.ts is not what `npm run types` writes now.
 * `wrangler types --check` compares only the hash of the config, so it passes a hand-edited file, or
 * the 630 KB runtime file a bare `wrangler types` writes; this one regenerates beside it and compares.
 */
import { execFileSync } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import { resolve } from "node:path";

const ROOT = resolve(import.meta.dirname, "..");
const COMMITTED = "worker-configuration.d.ts";
// Beside the committed file, so the generated import paths are the same.
const FRESH = ".worker-configuration.fresh.d.ts";

const pkg = JSON.parse(readFileSync(resolve(ROOT, "package.json"), "utf8")) as { scripts: { types: string } };
const command = pkg.scripts.types.split(" ");

try {
  execFileSync("npx", [...command, FRESH], { cwd: ROOT, stdio: ["ignore", "ignore", "inherit"] });
  // The header names the command that wrote the file, its output path included.
  const fresh = readFileSync(resolve(ROOT, FRESH), "utf8").replace(` ${FRESH}\``, "`");
  if (fresh === readFileSync(resolve(ROOT, COMMITTED), "utf8")) {
    console.log(`${COMMITTED} is up to date.`);
  } else {
    console.error(`${COMMITTED} is stale: run \`npm run types\` and commit it.`);
    process.exitCode = 1;
  }
} finally {
  rmSync(resolve(ROOT, FRESH), { force: true });
}
