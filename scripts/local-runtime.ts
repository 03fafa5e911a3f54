/**
 * The real runtime driven from Node: `wrangler dev` (workerd) over a persisted state directory, in a
 * process group of its own so it can be hard-killed (SIGKILL, no goodbye) and restarted over the same
 * state. Used by the crash tests, the chaos suite and the benchmark.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync } from "node:fs";
import { createServer } from "node:net";
import { resolve } from "node:path";

const ROOT = resolve(import.meta.dirname, "..");

export interface RuntimeOptions {
  /** Where the lanes' SQLite files live; reuse it to restart over the same state. */
  persistDir: string;
  apiToken?: string;
  /** Every line the runtime prints (its logs), e.g. to search them for secrets. */
  onLog?: (line: string) => void;
  /** Extra `--var NAME:VALUE` pairs. */
  vars?: Record<string, string>;
  /** A wrangler config other than `wrangler.toml` (e.g. `wrangler.bench.toml`), relative to the repo root. */
  config?: string;
}

export class LocalRuntime {
  // No parameter properties: Node runs this file by stripping types, which cannot rewrite them.
  private readonly child: ChildProcess;
  readonly url: URL;
  readonly apiToken: string;

  private constructor(child: ChildProcess, url: URL, apiToken: string) {
    this.child = child;
    this.url = url;
    this.apiToken = apiToken;
  }

  static async start(options: RuntimeOptions): Promise<LocalRuntime> {
    mkdirSync(options.persistDir, { recursive: true });
    const apiToken = options.apiToken ?? "local-token";
    const port = await freePort();
    const vars = Object.entries({ API_TOKEN: apiToken, ...options.vars }).flatMap(([k, v]) => ["--var", `${k}:${v}`]);
    const child = spawn(
      "npx",
      [
        "wrangler", "dev", "--ip", "127.0.0.1", "--port", String(port), "--persist-to", options.persistDir,
        "--show-interactive-dev-session=false", ...(options.config ? ["--config", options.config] : []), ...vars,
      ],
      {
        cwd: ROOT,
        detached: true, // a process group of its own: kill() takes workerd down with it
        stdio: ["ignore", "pipe", "pipe"],
        env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true", NO_COLOR: "1", FORCE_COLOR: "0" },
      },
    );
    const output: string[] = [];
    for (const stream of [child.stdout!, child.stderr!]) {
      let rest = "";
      stream.on("data", (chunk: Buffer) => {
        const lines = (rest + chunk.toString()).split("\n");
        rest = lines.pop() ?? "";
        for (const line of lines) {
          if (output.length < 200) output.push(line);
          options.onLog?.(line);
        }
      });
    }
    const url = new URL(`http://127.0.0.1:${port}`);
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`wrangler dev exited (${child.exitCode}):\n${output.join("\n")}`);
      try {
        const response = await fetch(new URL("/healthz", url));
        if (response.ok) break;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) {
        killGroup(child);
        throw new Error(`wrangler dev did not answer within 60 s:\n${output.join("\n")}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    return new LocalRuntime(child, url, apiToken);
  }

  /** The runtime's process group (wrangler and workerd), e.g. to find workerd and read its memory. */
  get processGroup(): number {
    return this.child.pid!;
  }

  /** A request to the API with the bearer token; the body parsed as JSON. */
  /** A body that is not JSON comes back as its text; `timeoutMs` bounds the whole request. */
  async api(method: string, path: string, body?: unknown, timeoutMs?: number): Promise<{ status: number; body: any }> {
    const response = await fetch(new URL(path, this.url), {
      method,
      headers: {
        authorization: `Bearer ${this.apiToken}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      ...(timeoutMs === undefined ? {} : { signal: AbortSignal.timeout(timeoutMs) }),
    });
    const text = await response.text();
    try {
      return { status: response.status, body: text ? JSON.parse(text) : null };
    } catch {
      return { status: response.status, body: text };
    }
  }

  /** SIGKILL to wrangler and workerd at once: no shutdown of any kind. */
  async kill(): Promise<void> {
    killGroup(this.child);
    await this.exited();
  }

  /** A polite stop (SIGTERM to the group). */
  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      try {
        process.kill(-this.child.pid!, "SIGTERM");
      } catch {
        // gone
      }
    }
    await Promise.race([this.exited(), new Promise((r) => setTimeout(r, 5_000))]);
    killGroup(this.child);
  }

  private exited(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return Promise.resolve();
    return new Promise((r) => this.child.once("exit", () => r()));
  }
}

function killGroup(child: ChildProcess): void {
  try {
    process.kill(-child.pid!, "SIGKILL");
  } catch {
    // already gone
  }
}

function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? resolvePort(address.port) : reject(new Error("no port"))));
    });
  });
}
