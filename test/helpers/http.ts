/**
 * HTTP fixtures for worker tests: requests through the worker's own default export (the real app, the
 * real lanes), a fresh lane per test with a manual clock, and assertions on the error shape.
 */
import { env, exports } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { expect } from "vitest";
import { ManualClock } from "../../src/shared/clock.js";
import type { ErrorCode } from "../../src/shared/errors.js";
import { inject, T0 } from "./lane.js";

export const TOKEN = "test-token";
export const ROTATED_TOKEN = "rotated-in-token";
/** Far in the future, so that an alarm set by a test never fires on its own. */
export { T0 };
/** A kind no in-process executor of the test lane runs: such jobs wait for pull consumers. */
export const PULL_KIND = "email.send";

export interface Answer {
  status: number;
  body: any;
  headers: Headers;
}

export interface CallOptions {
  /** Sent as JSON with `content-type: application/json` (left out of a GET or HEAD, which has no body). */
  json?: unknown;
  /** Sent as is (with `headers` saying what it is). */
  raw?: BodyInit;
  /** The bearer token; null sends no `Authorization` header. Default: the test token. */
  token?: string | null;
  headers?: Record<string, string>;
}

export function request(method: string, path: string, options: CallOptions = {}): Request {
  const headers = new Headers(options.headers);
  const token = options.token === undefined ? TOKEN : options.token;
  if (token !== null) headers.set("authorization", `Bearer ${token}`);
  let body: BodyInit | undefined = options.raw;
  if (options.json !== undefined && method !== "GET" && method !== "HEAD") {
    body = JSON.stringify(options.json);
    if (!headers.has("content-type")) headers.set("content-type", "application/json");
  }
  return new Request(`http://switchyard.test${path}`, { method, headers, body: body ?? null });
}

/** Sends a request through the worker's default export. */
export async function call(method: string, path: string, options: CallOptions = {}): Promise<Answer> {
  return read(await exports.default.fetch(request(method, path, options)));
}

export async function read(response: Response): Promise<Answer> {
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // Not JSON: the test sees the text.
  }
  return { status: response.status, body, headers: response.headers };
}

export const get = (path: string, options?: CallOptions) => call("GET", path, options);
export const post = (path: string, json?: unknown, options?: CallOptions) =>
  call("POST", path, json === undefined ? options : { ...options, json });

/** Asserts an error answer: status, code, and the error shape of docs/api.md. */
export function expectError(answer: Answer, status: number, code: ErrorCode): { code: string; message: string; details?: any } {
  expect({ status: answer.status, code: answer.body?.error?.code }).toEqual({ status, code });
  expect(typeof answer.body.error.message).toBe("string");
  expect(Object.keys(answer.body)).toEqual(["error"]);
  return answer.body.error;
}

export interface LaneFixture {
  lane: string;
  /** `/v1/lanes/<lane>` */
  base: string;
  clock: ManualClock;
  stub: ReturnType<typeof env.LANE.getByName>;
}

/** A fresh lane with a manual clock at `T0`. */
export async function setup(): Promise<LaneFixture> {
  const lane = crypto.randomUUID();
  const stub = env.LANE.getByName(lane);
  const clock = new ManualClock(T0);
  await inject(stub, clock);
  return { lane, base: `/v1/lanes/${lane}`, clock, stub };
}

/** Enqueues a pull-consumer job over HTTP and answers it. */
export async function enqueue(fixture: LaneFixture, spec: Record<string, unknown> = {}): Promise<any> {
  const answer = await post(`${fixture.base}/jobs`, { kind: PULL_KIND, payload: { n: 1 }, ...spec });
  expect(answer.status, JSON.stringify(answer.body)).toBe(201);
  return answer.body.job;
}

/** Claims one job over HTTP and answers it with its lease. */
export async function claimOne(fixture: LaneFixture, leaseMs = 30_000): Promise<any> {
  const answer = await post(`${fixture.base}/claims`, { kinds: [PULL_KIND], leaseMs });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  expect(answer.body.jobs).toHaveLength(1);
  return answer.body.jobs[0];
}

/** Enqueues one pull-consumer job and claims it: a running job and its lease. */
export async function enqueueAndClaim(fixture: LaneFixture, leaseMs = 30_000): Promise<any> {
  await enqueue(fixture);
  return claimOne(fixture, leaseMs);
}

/** A pull-consumer job claimed and completed: settled `completed`. */
export async function completedJob(fixture: LaneFixture): Promise<any> {
  const claimed = await enqueueAndClaim(fixture);
  const done = await post(`${fixture.base}/jobs/${claimed.id}/complete`, { token: claimed.lease.token });
  expect(done.status, JSON.stringify(done.body)).toBe(200);
  return done.body.job;
}
