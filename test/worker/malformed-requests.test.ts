/**
 * A property test: random, malformed and oversized requests — any method, tricky paths, any
 * authorization, defective bodies of every kind — never answer 5xx, always answer the API's error
 * shape, and never change a lane. Every POST, PATCH or PUT carries a body that is wrong for every
 * route (each route's body schema is strict), so no generated request is legitimately a write.
 */
import { exports } from "cloudflare:workers";
import fc from "fast-check";
import { expect, it } from "vitest";
import { MAX_BODY_BYTES, MAX_PAYLOAD_BYTES } from "../../src/shared/defaults.js";
import type { ErrorCode } from "../../src/shared/errors.js";
import { ERROR_STATUS } from "../../src/worker/status.js";
import { MAX_BODY_DEPTH } from "../../src/shared/defaults.js";
import { enqueue, post, PULL_KIND, setup, TOKEN, ROTATED_TOKEN, type LaneFixture } from "../helpers/http.js";

const RUNS = 200;
const SEED = Date.now() % 2 ** 31;

interface Shot {
  method: string;
  path: string;
  authorization: string | null;
  body: Body | null;
}

interface Body {
  contentType: string | null;
  text: string | null;
  /** Invalid UTF-8 instead of `text`. */
  bytes?: number[];
  /** Sent as a stream with no Content-Length. */
  stream?: boolean;
}

const JSON_TYPES = ["application/json", "application/json; charset=utf-8", "application/problem+json"];
const json = (text: string): Body => ({ contentType: "application/json", text });

/** Bodies that are wrong for every route: each is refused with 4xx wherever it is sent. */
const defectiveBody: fc.Arbitrary<Body> = fc.oneof(
  // Not JSON by its content type (or none).
  fc.record({
    contentType: fc.constantFrom("text/plain", "application/x-www-form-urlencoded", "application/xml", "multipart/form-data; boundary=x", "json", null),
    text: fc.string({ minLength: 1, maxLength: 64 }),
  }),
  // Malformed JSON: no JSON text ends with "{".
  fc.tuple(fc.constantFrom(...JSON_TYPES), fc.string({ maxLength: 64 })).map(([contentType, s]) => ({ contentType, text: `${s}{` })),
  // An object with a field no schema has.
  fc
    .tuple(fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 4 }), fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }))
    .map(([object, key, value]) => json(JSON.stringify({ ...object, [`x-${key}`]: value }))),
  // JSON that is not an object.
  fc.oneof(fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 4 }), fc.integer(), fc.string(), fc.boolean(), fc.constant(null)).map((v) => json(JSON.stringify(v))),
  // An enqueue request with an invalid field (and unknown fields for any other route).
  fc
    .record({
      kind: fc.constantFrom(PULL_KIND, "bad kind", "", "-x"),
      maxAttempts: fc.constantFrom(0, 101, 1.5, "3", null),
      payload: fc.jsonValue({ maxDepth: 2 }),
    })
    .map((r) => json(JSON.stringify(r))),
  // Payloads and results over 128 KiB.
  fc.constantFrom("payload", "result").map((field) => json(JSON.stringify({ kind: PULL_KIND, token: "t", [field]: "x".repeat(MAX_PAYLOAD_BYTES) }))),
  // Too deep for RPC.
  fc.integer({ min: MAX_BODY_DEPTH + 1, max: 5000 }).map((depth) => json(`{"kind":"${PULL_KIND}","payload":${"[".repeat(depth)}${"]".repeat(depth)}}`)),
  // Not UTF-8.
  fc.constantFrom([0xff], [0x7b, 0xc3, 0x28, 0x7d], [0xed, 0xa0, 0x80]).map((bytes) => ({ contentType: "application/json", text: null, bytes: [...bytes] })),
  // Over 1 MiB, with a Content-Length or streamed without one.
  fc.boolean().map((stream) => ({ contentType: "application/json", text: JSON.stringify("x".repeat(MAX_BODY_BYTES)), stream })),
);

function shots(lane: LaneFixture, ids: string[]): fc.Arbitrary<Shot> {
  const segment = fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...ids) },
    fc.constantFrom("..", ".", "%2e%2e", "%2F", "a%2Fb", "%00", "%zz", "-x", "x".repeat(129), "é", "%C3%A9", "", " ", "Q1", "q1%20", "batch"),
    fc.string({ unit: "grapheme", maxLength: 12 }).map(encodeURIComponent),
    fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,20}$/),
  );
  const laneName = fc.oneof({ weight: 4, arbitrary: fc.constant(lane.lane) }, segment);
  const action = fc.constantFrom("cancel", "requeue", "renew", "complete", "fail", "release", "", "nope");
  const routePath = fc.oneof(
    fc.tuple(laneName, segment, action).map(([l, id, a]) => `/v1/lanes/${l}/jobs/${id}${a ? `/${a}` : ""}`),
    fc.tuple(laneName, fc.constantFrom("", "/jobs", "/jobs/batch", "/claims", "/sweep", "/jobs/", "/claims/x")).map(([l, rest]) => `/v1/lanes/${l}${rest}`),
    fc.constantFrom(
      "/v1/lanes",
      "/v1",
      "/v1/",
      `//v1/lanes/${lane.lane}/jobs`,
      `/v1//lanes/${lane.lane}/claims`,
      `/v1/lanes/${lane.lane}/../${lane.lane}/claims`,
      `/V1/lanes/${lane.lane}/jobs`,
      `/v1/lanes/${lane.lane}/jobs/q1;cancel`,
      `/v1/lanes/${lane.lane}%2Fjobs`,
      "/openapi.json",
      "/healthz",
    ),
    fc.webPath().map((p) => (p.startsWith("/") ? p : `/${p}`)),
  );
  const query = fc.oneof(
    { weight: 3, arbitrary: fc.constant("") },
    fc.constantFrom("?state=queued", "?state=nope", "?limit=0", "?limit=abc", "?limit=501", "?state=a&state=b", "?cursor=zz", "?x=1", "?limit=1e2"),
    fc.string({ maxLength: 20 }).map((s) => `?${s}`),
  );
  const authorization = fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(`Bearer ${TOKEN}`, `Bearer ${ROTATED_TOKEN}`) },
    fc.constantFrom(null, "Bearer", "Bearer wrong", `Basic ${TOKEN}`, TOKEN, `Bearer ${TOKEN},${ROTATED_TOKEN}`),
    fc.stringMatching(/^[\x21-\x7e]{0,40}$/),
  );
  const bodyless = fc.record({
    method: fc.constantFrom("GET", "HEAD", "OPTIONS", "DELETE"),
    path: fc.tuple(routePath, query).map(([p, q]) => p + q),
    authorization,
    body: fc.constant(null),
  });
  const withBody = fc.record({
    method: fc.constantFrom("POST", "PATCH", "PUT", "DELETE", "PURGE"),
    path: fc.tuple(routePath, query).map(([p, q]) => p + q),
    authorization,
    body: defectiveBody,
  });
  return fc.oneof(bodyless, { weight: 3, arbitrary: withBody });
}

function toRequest(shot: Shot): Request {
  const headers = new Headers();
  if (shot.authorization !== null) headers.set("authorization", shot.authorization);
  let body: BodyInit | null = null;
  if (shot.body) {
    if (shot.body.contentType !== null) headers.set("content-type", shot.body.contentType);
    const bytes = shot.body.bytes ? new Uint8Array(shot.body.bytes) : new TextEncoder().encode(shot.body.text ?? "");
    body = shot.body.stream
      ? new ReadableStream<Uint8Array>({
          start(controller) {
            controller.enqueue(bytes);
            controller.close();
          },
        })
      : bytes;
  }
  return new Request(`http://switchyard.test${shot.path}`, { method: shot.method, headers, body });
}

/** A lane with a job in every state a request could disturb. */
async function populatedLane(): Promise<{ lane: LaneFixture; ids: string[] }> {
  const lane = await setup();
  for (const id of ["q1", "r1", "c1", "x1", "f1"]) await enqueue(lane, { id });
  const claimed = await post(`${lane.base}/claims`, { max: 3, leaseMs: 3_600_000 });
  const [r1, c1, x1] = claimed.body.jobs as { id: string; lease: { token: string } }[];
  expect([r1?.id, c1?.id, x1?.id]).toEqual(["q1", "r1", "c1"]);
  await post(`${lane.base}/jobs/r1/complete`, { token: c1!.lease.token });
  await post(`${lane.base}/jobs/c1/fail`, { token: x1!.lease.token, error: "no", retry: false });
  await post(`${lane.base}/jobs/x1/cancel`);
  return { lane, ids: ["q1", "r1", "c1", "x1", "f1", lane.lane] };
}

it(`random, malformed and oversized requests never answer 5xx nor change the lane (${RUNS} runs)`, async () => {
  console.log(`malformed-requests: fast-check seed ${SEED}`);
  const { lane, ids } = await populatedLane();
  const before = await lane.stub.info();
  const jobsBefore = await lane.stub.listJobs({});
  const codes = new Set(Object.keys(ERROR_STATUS));
  const statuses = new Set<number>();

  await fc.assert(
    fc.asyncProperty(shots(lane, ids), async (shot) => {
      const response = await exports.default.fetch(toRequest(shot));
      const text = await response.text();
      statuses.add(response.status);
      expect(response.status, `${shot.method} ${shot.path}`).toBeLessThan(500);
      if (shot.method !== "HEAD" && response.status >= 400) {
        const body = JSON.parse(text) as { error: { code: ErrorCode; message: string } };
        expect(codes.has(body.error.code), text).toBe(true);
        expect(ERROR_STATUS[body.error.code]).toBe(response.status);
        expect(typeof body.error.message).toBe("string");
      }
      expect(await lane.stub.info()).toEqual(before);
    }),
    { numRuns: RUNS, seed: SEED },
  );
  expect(await lane.stub.listJobs({})).toEqual(jobsBefore);
  // The generator reaches every kind of refusal, not only the first gate.
  expect([...statuses].sort()).toEqual(expect.arrayContaining([400, 401, 404, 413, 415]));
});
