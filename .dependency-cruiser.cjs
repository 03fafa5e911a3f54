// The one-way rule the folders of src/ keep (docs/architecture.md draws them); an arrow is "imports":
//
//   worker  →  durable  →  routing  →  shared
//   client  →  routing, shared        (as types only: the Lane class, the worker's app)
//   worker/dashboard/browser/  →  shared
//
// Each rule names what a folder must not import; test/node/layering.test.ts fails on any
// violation, and `npm run layering` prints them. Type-only imports erase at build time, so a
// few rules let them through: they carry no code across the line, only a type's shape.

/** Imports that vanish from the emitted JavaScript: `import type`, `export type`, `typeof import(…)`. */
const TYPE_ONLY = ["type-only", "type-import"];

const BROWSER = "^src/worker/dashboard/browser/";

/**
 * The rule of one folder: it imports only itself and the folders named in `below` (under src/).
 * `also` widens it: `from` narrows which files it covers, `allowed` names single files it may import
 * besides, `to` limits which imports it looks at (by their dependency types).
 */
function importsOnly(name, folder, below, comment, also = {}) {
  return {
    name,
    comment,
    severity: "error",
    from: { path: `^src/${folder}/`, ...also.from },
    to: { path: "^src/", pathNot: [`^src/(${[folder, ...below].join("|")})/`, ...(also.allowed ?? [])], ...also.to },
  };
}

/** @type {import("dependency-cruiser").IConfiguration} */
module.exports = {
  forbidden: [
    importsOnly("shared-imports-nothing-of-ours", "shared", [], "src/shared/ is plain TypeScript every other folder builds on: it imports only itself."),
    importsOnly("routing-imports-shared", "routing", ["shared"], "src/routing/ (shard routing) is typed against a narrow peer interface: it imports only shared/."),
    importsOnly(
      "durable-imports-shared-and-routing",
      "durable",
      ["shared", "routing"],
      "The lane runs inside its Durable Object: it imports shared/ and routing/, never the worker or the client above it.",
    ),
    importsOnly(
      "worker-imports-shared-routing-durable",
      "worker",
      ["shared", "routing", "durable"],
      "The front worker imports shared/, routing/ and durable/; of client/ only its group commit (the worker's own enqueues go through it).",
      { from: { pathNot: BROWSER }, allowed: ["^src/client/group-commit\\.ts$"] },
    ),
    {
      name: "worker-reaches-the-lane-through-its-objects",
      comment:
        "A route reaches a lane through its binding: of durable/ the worker runs only the objects' modules (the Lane class, the registry, their env) and the exposition's content type; the lane's internals it may name as types only.",
      severity: "error",
      from: { path: "^src/worker/", pathNot: BROWSER },
      to: {
        path: "^src/durable/",
        pathNot: ["^src/durable/(lane|registry|env)\\.ts$", "^src/durable/metrics/exposition\\.ts$"],
        dependencyTypesNot: TYPE_ONLY,
      },
    },
    importsOnly(
      "client-imports-shared-and-routing",
      "client",
      ["shared", "routing"],
      "client/ is what code outside a Worker needs: it runs only shared/ and routing/ code, so its bundle carries none of the lane or the worker.",
      { to: { dependencyTypesNot: TYPE_ONLY } },
    ),
    {
      name: "client-names-only-the-lane-and-the-app-as-types",
      comment:
        "The RPC client's types come from the Lane class (durable/lane.ts), the typed HTTP client's from the worker's app type (worker/app.ts); no other type crosses.",
      severity: "error",
      from: { path: "^src/client/" },
      to: {
        path: "^src/",
        pathNot: ["^src/(shared|routing|client)/", "^src/durable/lane\\.ts$", "^src/worker/app\\.ts$"],
        dependencyTypes: TYPE_ONLY,
      },
    },
    importsOnly(
      "browser-imports-shared",
      "worker/dashboard/browser",
      ["shared"],
      "The dashboard's browser code runs in a browser: it imports shared/ only, never the worker's or the lane's code, not even their types.",
    ),
    {
      name: "browser-code-is-bundled-not-imported",
      comment: "The worker serves the browser code as its built bundle (dashboard/browser-bundle.js), never by importing its source.",
      severity: "error",
      from: { path: "^src/", pathNot: BROWSER },
      to: { path: BROWSER },
    },
    {
      name: "no-circular",
      comment: "No import cycle inside src/, type-only imports included: a cycle is a thread nobody can follow from one end.",
      severity: "error",
      from: { path: "^src/" },
      to: { circular: true },
    },
    {
      name: "no-orphans",
      comment: "A module nothing imports and that imports nothing is dead code (the entry points import their trees).",
      severity: "error",
      from: { orphan: true, path: "^src/", pathNot: "\\.d\\.ts$" },
      to: {},
    },
  ],
  options: {
    // Type-only imports are recorded (and marked) rather than dropped, so the rules can tell them apart.
    tsPreCompilationDeps: true,
    includeOnly: "^src/",
    // The bundle is built from the browser code and is not in git: a fresh clone cruises the same tree without it.
    exclude: { path: "^src/worker/dashboard/browser-bundle\\." },
    enhancedResolveOptions: { extensions: [".ts", ".tsx", ".js"] },
  },
};
