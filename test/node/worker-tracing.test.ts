/**
 * createWorker's spans (docs/workers.md "Tracing"), from Node against the real runtime (`wrangler
 * dev`), with a real OpenTelemetry SDK: an in-memory exporter behind the SDK's tracer provider, and
 * a context manager on AsyncLocalStorage (as the Node SDK registers one). The handler of a job
 * enqueued with a `traceparent` runs in a CONSUMER span whose parent is that trace context; a job
 * without one runs in a span of a new trace. Without `@opentelemetry/api` at all (a process in which
 * it cannot be imported), handlers run as before.
 */
import { spawn } from "node:child_process";
import { AsyncLocalStorage } from "node:async_hooks";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { context, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type ContextManager } from "@opentelemetry/api";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { LocalRuntime } from "../../scripts/local-runtime.js";
import { createHttpClient } from "../../src/client/http.js";
import { createWorker, NonRetryableError, type PullWorker } from "../../src/client/worker.js";
import { until } from "./support.js";

const ROOT = resolve(import.meta.dirname, "../..");
const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_ID = "00f067aa0ba902b7";

/** The context manager of OpenTelemetry's Node SDK, in a few lines: the active context follows async calls. */
class AsyncLocalStorageContextManager implements ContextManager {
  private readonly storage = new AsyncLocalStorage<Context>();
  active(): Context {
    return this.storage.getStore() ?? ROOT_CONTEXT;
  }
  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(ctx: Context, fn: F, thisArg?: ThisParameterType<F>, ...args: A): ReturnType<F> {
    return this.storage.run(ctx, () => fn.apply(thisArg, args));
  }
  bind<T>(ctx: Context, target: T): T {
    if (typeof target !== "function") return target;
    const run = (...args: unknown[]) => this.with(ctx, () => (target as (...a: unknown[]) => unknown)(...args));
    return run as T;
  }
  enable(): this {
    return this;
  }
  disable(): this {
    this.storage.disable();
    return this;
  }
}

let stateDir: string;
let runtime: LocalRuntime;
const exporter = new InMemorySpanExporter();
const workers: PullWorker[] = [];

beforeAll(async () => {
  stateDir = mkdtempSync(join(tmpdir(), "switchyard-worker-tracing-"));
  runtime = await LocalRuntime.start({ persistDir: stateDir });
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
  context.setGlobalContextManager(new AsyncLocalStorageContextManager());
});

afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.stop({ graceMs: 0 })));
  exporter.reset();
});

afterAll(async () => {
  trace.disable();
  context.disable();
  await runtime?.stop();
  rmSync(stateDir, { recursive: true, force: true });
});

const lane = () => `tr-${crypto.randomUUID()}`;
const client = () => createHttpClient({ baseUrl: runtime.url.href, token: runtime.apiToken });

/** The span of job `id`'s handler, once exported. */
const spanOf = (id: string): ReadableSpan | undefined => exporter.getFinishedSpans().find((s) => s.attributes["switchyard.job.id"] === id);

it("runs a handler inside a CONSUMER span whose parent is the job's traceparent; a job without one in a span of a new trace", async () => {
  const name = lane();
  const queue = client().lane(name);
  await queue.enqueue({ id: "traced", kind: "ext.traced" }, { traceparent: `00-${TRACE_ID}-${PARENT_ID}-01` });
  await queue.enqueue({ id: "untraced", kind: "ext.traced" });
  const seen = new Map<string, { active: string | undefined; traceparent: string | null; inner: string }>();
  const tracer = trace.getTracer("test");
  workers.push(
    createWorker({
      url: runtime.url.href,
      token: runtime.apiToken,
      lane: name,
      handlers: {
        "ext.traced": async (_payload, ctx) => {
          await new Promise((r) => setTimeout(r, 5)); // the span stays active across awaits
          // A span the handler starts is a child of the handler's span.
          const inner = tracer.startActiveSpan("inner work", (span) => (span.end(), span.spanContext().spanId));
          seen.set(ctx.job.id, { active: trace.getActiveSpan()?.spanContext().spanId, traceparent: ctx.traceparent, inner });
          return "done";
        },
      },
    }),
  );
  // A span ends when its handler returns, before the outcome is acknowledged.
  await until("both completed", async () => (await queue.info()).counts.completed === 2, 30_000, 20);

  const traced = spanOf("traced")!;
  expect(traced.name).toBe("switchyard ext.traced");
  expect(traced.kind).toBe(SpanKind.CONSUMER);
  expect(traced.spanContext().traceId).toBe(TRACE_ID);
  expect(traced.parentSpanContext).toMatchObject({ traceId: TRACE_ID, spanId: PARENT_ID, isRemote: true });
  expect(traced.attributes).toMatchObject({ "switchyard.lane": name, "switchyard.job.id": "traced", "switchyard.job.kind": "ext.traced", "switchyard.job.attempt": 1, "messaging.system": "switchyard" });
  expect(traced.status.code).toBe(SpanStatusCode.UNSET);
  expect(seen.get("traced")).toEqual({ active: traced.spanContext().spanId, traceparent: `00-${TRACE_ID}-${PARENT_ID}-01`, inner: expect.any(String) });
  const inner = exporter.getFinishedSpans().find((s) => s.spanContext().spanId === seen.get("traced")!.inner)!;
  expect(inner.parentSpanContext?.spanId).toBe(traced.spanContext().spanId);
  expect(inner.spanContext().traceId).toBe(TRACE_ID);

  const untraced = spanOf("untraced")!;
  expect(untraced.parentSpanContext).toBeUndefined();
  expect(untraced.spanContext().traceId).not.toBe(TRACE_ID);
  expect(seen.get("untraced")).toMatchObject({ active: untraced.spanContext().spanId, traceparent: null });
});

it("marks the span of a failed attempt as an error; honours the parent's sampled flag (an unsampled parent: no span, the handler runs)", async () => {
  const name = lane();
  const queue = client().lane(name);
  await queue.enqueue({ id: "fails", kind: "ext.fails", maxAttempts: 1 }, { traceparent: `00-${TRACE_ID}-${PARENT_ID}-01` });
  await queue.enqueue({ id: "unsampled", kind: "ext.ok" }, { traceparent: `00-${TRACE_ID}-${PARENT_ID}-00` });
  let ran = false;
  workers.push(
    createWorker({
      url: runtime.url.href,
      token: runtime.apiToken,
      lane: name,
      handlers: {
        "ext.fails": () => {
          throw new NonRetryableError("no such invoice");
        },
        "ext.ok": () => ((ran = true), "ok"),
      },
    }),
  );
  await until("both settled", async () => (await queue.info()).counts.failed === 1 && (await queue.info()).counts.completed === 1, 30_000, 20);
  const failed = spanOf("fails")!;
  expect(failed.status).toEqual({ code: SpanStatusCode.ERROR, message: "no such invoice" });
  expect(failed.events.map((e) => e.name)).toContain("exception");
  expect(failed.parentSpanContext?.spanId).toBe(PARENT_ID);
  expect(ran).toBe(true);
  expect(spanOf("unsampled")).toBeUndefined();
});

it("without @opentelemetry/api (it cannot be imported), the handler of a traced job runs and completes", async () => {
  const name = lane();
  await client().lane(name).enqueue({ id: "t", kind: "ext.slow" }, { traceparent: `00-${TRACE_ID}-${PARENT_ID}-01` });
  const child = spawn(process.execPath, ["--import", "./scripts/ts-imports.ts", "test/node/fixtures/worker-without-otel.ts", runtime.url.href, runtime.apiToken, name], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "inherit"],
  });
  const lines: string[] = [];
  child.stdout!.on("data", (chunk: Buffer) => lines.push(...chunk.toString().split("\n").filter(Boolean)));
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  try {
    await until("the job to complete", async () => (await client().lane(name).get("t")).outcome === "completed", 30_000, 20);
  } finally {
    child.kill("SIGTERM");
  }
  expect(await exited).toBe(0);
  const events = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  expect(events[0]).toEqual({ type: "otel", importable: false });
  expect(events).toContainEqual({ type: "handled", traceparent: `00-${TRACE_ID}-${PARENT_ID}-01` });
  expect((await client().lane(name).get("t")).result).toEqual({ traced: false });
});
