/**
 * The requests of the pull-worker runtime, over plain `fetch` (Node ≥ 20 and Workers alike): every one
 * cancellable and bounded in time, an API refusal thrown as a `QueueError` with its code, anything
 * else (network, a body that is not the API's) thrown as is, for the caller to retry.
 */
import type { AcksAnswer } from "../shared/answers.js";
import { QueueError, type ErrorBody } from "../shared/errors.js";
import type { Json, Lease, PulledJob } from "../shared/job.js";
import type { ClaimRequest } from "../shared/schemas.js";

export type { PulledJob };

export interface WorkerHttpOptions {
  /** Where the API is served, e.g. `https://queue.example.com` (no `/v1`). */
  url: string;
  token: string;
  lane: string;
  fetch?: typeof fetch;
}

export interface WorkerHttp {
  claim(request: ClaimRequest, signal: AbortSignal, timeoutMs: number): Promise<{ jobs: PulledJob[] }>;
  renew(id: string, body: { token: string; leaseMs: number }, timeoutMs: number): Promise<{ lease: Lease }>;
  /** `body` is the JSON text of `{"acks": […]}`, built by the caller from items serialized once. */
  acks(body: string, timeoutMs: number): Promise<AcksAnswer>;
  saveCheckpoint(id: string, name: string, body: { token: string; value: Json }, timeoutMs: number): Promise<unknown>;
  writeStream(id: string, body: { token: string; chunks: unknown[] }, timeoutMs: number): Promise<unknown>;
  /** A job's payload or result, whole (`GET …/jobs/{id}/payload` or `…/result`): what a claim of several leaves in R2. `lane`: the job's, this worker's by default. */
  value(which: "payload" | "result", id: string, lane: string | undefined, timeoutMs: number): Promise<Json>;
}

export function createWorkerHttp(options: WorkerHttpOptions): WorkerHttp {
  const doFetch = options.fetch ?? ((input, init) => fetch(input, init));
  const laneUrl = (lane: string) => `${options.url.replace(/\/+$/, "")}/v1/lanes/${encodeURIComponent(lane)}`;
  const base = laneUrl(options.lane);
  const headers = { authorization: `Bearer ${options.token}`, "content-type": "application/json" };
  const job = (id: string, lane = base) => `${lane}/jobs/${encodeURIComponent(id)}`;

  async function send<T>(method: string, url: string, body: string | null, timeoutMs: number, signal?: AbortSignal): Promise<T> {
    const timeout = AbortSignal.timeout(timeoutMs);
    const response = await doFetch(url, { method, headers, body, signal: signal ? AbortSignal.any([signal, timeout]) : timeout });
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new Error(`HTTP ${response.status} from ${method} ${url}: not JSON`);
    }
    if (response.ok) return parsed as T;
    const error = (parsed as { error?: ErrorBody }).error;
    if (error && typeof error.code === "string") throw QueueError.from(error);
    throw new Error(`HTTP ${response.status} from ${method} ${url} without an API error`);
  }

  return {
    claim: (request, signal, timeoutMs) => send("POST", `${base}/claims`, JSON.stringify(request), timeoutMs, signal),
    renew: (id, body, timeoutMs) => send("POST", `${job(id)}/renew`, JSON.stringify(body), timeoutMs),
    acks: (body, timeoutMs) => send("POST", `${base}/acks`, body, timeoutMs),
    saveCheckpoint: (id, name, body, timeoutMs) => send("PUT", `${job(id)}/checkpoints/${encodeURIComponent(name)}`, JSON.stringify(body), timeoutMs),
    writeStream: (id, body, timeoutMs) => send("POST", `${job(id)}/stream`, JSON.stringify(body), timeoutMs),
    value: (which, id, lane, timeoutMs) => send("GET", `${job(id, lane === undefined ? base : laneUrl(lane))}/${which}`, null, timeoutMs),
  };
}

/** Whether a failed request may succeed if sent again: not an API refusal (but `internal` or an unavailable lane). */
export function isTransient(error: unknown): boolean {
  return !(error instanceof QueueError) || error.code === "internal" || error.code === "lane_schema_too_new" || error.code === "lane_unavailable" || error.code === "auth_not_configured";
}
