/**
 * createWorker's spans (docs/workers.md "Tracing"): when `@opentelemetry/api` can be imported (an
 * optional peer dependency: never required, never bundled), each handler runs inside a span of kind
 * CONSUMER named `switchyard <kind>`, whose parent is the trace context the job was enqueued with
 * (`job.traceparent`), so that the producer's trace goes on into the job. The parent is built from
 * the header's parts (`trace.setSpanContext`), not through a registered propagator, which the
 * application may not have. Without the package, or without a tracer provider registered (the
 * API's own no-op one), handlers run as they would anyway.
 */
import { describeError } from "../shared/describe-error.js";
import type { Job } from "../shared/job.js";
import { parseTraceparent } from "../shared/trace.js";

type OpenTelemetry = typeof import("@opentelemetry/api");

/** Runs a handler inside its job's span. */
export interface WorkerTracing {
  run<T>(job: Pick<Job, "id" | "kind" | "lane" | "attempts" | "traceparent">, handler: () => T): T;
}

let loading: Promise<OpenTelemetry | null> | undefined;

/**
 * `@opentelemetry/api`, once per process, or null when it cannot be imported. The import sits in a
 * try block: bundlers (esbuild, wrangler's) leave an import there that they cannot resolve to run
 * time rather than fail the build of an application that does not have it.
 */
export function loadOpenTelemetry(): Promise<OpenTelemetry | null> {
  return (loading ??= (async () => {
    try {
      return await import("@opentelemetry/api");
    } catch {
      return null;
    }
  })());
}

/** The tracing of a worker: spans through `api`, or none (null) without it. */
export function workerTracing(api: OpenTelemetry | null, isSnooze: (error: unknown) => boolean): WorkerTracing | null {
  if (!api) return null;
  const { trace, ROOT_CONTEXT, SpanKind, SpanStatusCode } = api;
  const tracer = trace.getTracer("switchyard");
  return {
    run<T>(job: Pick<Job, "id" | "kind" | "lane" | "attempts" | "traceparent">, handler: () => T): T {
      // A job is its own unit of work: its parent is the trace it was enqueued with, else none (a new
      // trace), never whatever context happened to be active where the worker was created.
      const parent = job.traceparent === null ? null : parseTraceparent(job.traceparent);
      const context = parent
        ? trace.setSpanContext(ROOT_CONTEXT, {
            traceId: parent.traceId,
            spanId: parent.parentId,
            // A version after 00 is read as far as 00 goes: only its sampled bit counts.
            traceFlags: Number.parseInt(parent.flags, 16) & (job.traceparent!.startsWith("00-") ? 0xff : 0x01),
            isRemote: true,
          })
        : ROOT_CONTEXT;
      const attributes = {
        "messaging.system": "switchyard",
        "messaging.operation.type": "process",
        "messaging.destination.name": job.lane,
        "messaging.message.id": job.id,
        "switchyard.lane": job.lane,
        "switchyard.job.id": job.id,
        "switchyard.job.kind": job.kind,
        "switchyard.job.attempt": job.attempts,
      };
      return tracer.startActiveSpan(`switchyard ${job.kind}`, { kind: SpanKind.CONSUMER, attributes }, context, (span) => {
        // What the handler threw may be anything (a proxy, an object without a prototype): the span
        // says what it can, and never changes what the attempt does with it.
        const failed = (error: unknown) => {
          try {
            if (isSnooze(error)) return void span.setAttribute("switchyard.job.snoozed", true);
            const message = describeError(error);
            span.recordException(error instanceof Error ? error : message);
            span.setStatus({ code: SpanStatusCode.ERROR, message });
          } catch {
            // the span goes without it
          }
        };
        let result: T;
        try {
          result = handler();
        } catch (error) {
          failed(error);
          span.end();
          throw error;
        }
        if (!isThenable(result)) {
          span.end();
          return result;
        }
        return Promise.resolve(result).then(
          (value) => {
            span.end();
            return value;
          },
          (error: unknown) => {
            failed(error);
            span.end();
            throw error;
          },
        ) as T;
      });
    },
  };
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return value !== null && (typeof value === "object" || typeof value === "function") && typeof (value as { then?: unknown }).then === "function";
}
