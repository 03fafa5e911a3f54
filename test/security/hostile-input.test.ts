/**
 * Hostile input over every route of the OpenAPI document. Each generated request carries at
 * least one real defect — a bad or rotated-out token, a name that breaks the pattern or a path trick,
 * a method the path does not serve, a bad query value, a body that breaks the route's schema (read
 * from the document) or the transport rules (JSON, UTF-8, media type, depth, 128 KiB, 1 MiB), or a
 * lease token that is not the job's — and any amount of hostile noise that is valid on its own
 * (unicode, SQL-looking strings, huge numbers, deep JSON, bodies at each limit, odd headers).
 * Every answer is a 4xx in the API's error shape, never a 5xx; no lane changes; the server answers.
 *
 * malformed-requests.test.ts sends hand-written paths with bodies wrong for every route; this suite
 * derives its requests from the document, so a new route or field is fuzzed without editing it.
 * Replay a failure with the seed it prints (set SEED below; workerd tests see no environment).
 */
import { exports } from "cloudflare:workers";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DEFAULT_CONCURRENCY, MAX_BODY_BYTES, MAX_BODY_DEPTH, MAX_PAYLOAD_BYTES, NAME_PATTERN } from "../../src/shared/defaults.js";
import type { ErrorCode } from "../../src/shared/errors.js";
import { ERROR_STATUS } from "../../src/worker/status.js";
import { call, enqueue, get, post, PULL_KIND, ROTATED_TOKEN, setup, TOKEN, type LaneFixture } from "../helpers/http.js";
import { fill, hasInnerName, v1Routes, type JsonSchema, type Route } from "./routes.js";

const RUNS = 2500;
const SEED = Date.now() % 2 ** 31;

type Defect = "auth" | "name" | "method" | "query" | "body" | "lease";

interface Shot {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: Uint8Array | null;
  /** Stream the body (no Content-Length). */
  stream: boolean;
  defects: Defect[];
  /** Lane names (decoded, valid) the request addressed: each must still be untouched at the end. */
  lanes: string[];
}

// ---- names ----

const VALID_NOISE_NAMES = ["A".repeat(128), "0", "a.b:c-d_e", "SELECT", "DROP.TABLE.jobs", "x--", "1e308", "NaN", "null", "constructor", "toString", "%41%42"];
/** Segments that can never address a route's name: pattern breakers and path tricks, as sent (raw). */
const BAD_SEGMENTS = [
  "..", "%2e%2e", "%2E%2E", "../..", "..%2f..", "%2e%2e%2f%2e%2e", "x%2F..%2Fy", "..%5c..", "%00", "%ff", "%zz", "-x", ".x", "_x", ":x",
  "A".repeat(129), "a%20b", "%C3%A9", "%F0%9F%9A%82", "x'%20OR%20'1'%3D'1", "1%3BDROP%20TABLE%20jobs", "%27--", "%22", "%3Cscript%3E",
  "a%0Ab", "%E2%80%8B", "a%2Fb", "a%5Cb", "%25", "~x",
];

function decodeSegment(segment: string): string | null {
  try {
    return decodeURIComponent(segment);
  } catch {
    return null;
  }
}

const isValidName = (segment: string) => {
  const decoded = decodeSegment(segment);
  return decoded !== null && NAME_PATTERN.test(decoded) && !segment.includes("/");
};

const badSegment: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...BAD_SEGMENTS) },
  fc.string({ unit: "grapheme", minLength: 1, maxLength: 24 }).map(encodeURIComponent).filter((s) => !isValidName(s)),
);

// ---- hostile but valid values ----

const hostileString = fc.oneof(
  fc.constantFrom("", "'; DROP TABLE jobs; --", "\" OR 1=1 --", "ünïcødé ✓", "🚂🚃🚃", "\u0000\u0001", "\u202e\u200b", "%s%n", "${x}", "../../etc/passwd", "\\\\?\\C:"),
  fc.string({ unit: "grapheme", maxLength: 40 }),
);

const hugeNumber = fc.constantFrom(1e308, -1e308, Number.MAX_SAFE_INTEGER + 2, -0, 5e-324, 0.1 + 0.2);

/** Deep but within the body's nesting limit. */
const deepValue = fc.integer({ min: 1, max: MAX_BODY_DEPTH - 8 }).map((depth) => JSON.parse(`${"[".repeat(depth)}${"]".repeat(depth)}`) as unknown);

/** A JSON string of exactly `bytes` bytes serialized (quotes included), of multi-byte characters where it can. */
function sizedString(bytes: number, unit: "x" | "é" | "🚂"): string {
  const width = new TextEncoder().encode(unit).byteLength;
  const inner = bytes - 2;
  return unit.repeat(Math.floor(inner / width)) + "x".repeat(inner % width);
}

const anyJson: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  hostileString,
  hugeNumber,
  deepValue,
  fc.constantFrom("x", "é", "🚂").map((unit) => sizedString(MAX_PAYLOAD_BYTES, unit as "x")), // exactly at the limit
);

// ---- schema-driven bodies ----

function resolve(schema: JsonSchema, schemas: Record<string, JsonSchema>): JsonSchema {
  return schema.$ref ? resolve(schemas[schema.$ref.split("/").at(-1)!]!, schemas) : schema;
}

const typesOf = (schema: JsonSchema) => (schema.type === undefined ? [] : Array.isArray(schema.type) ? schema.type : [schema.type]);

/** A value valid for `schema` (refinements aside), with hostile content where the schema allows it. */
function validValue(schema: JsonSchema, schemas: Record<string, JsonSchema>, g: fc.GeneratorValue, name: string): unknown {
  const s = resolve(schema, schemas);
  const types = typesOf(s);
  if (types.length === 0) return g(() => anyJson);
  const type = g(() => fc.constantFrom(...types));
  switch (type) {
    case "null":
      return null;
    case "boolean":
      return g(() => fc.boolean());
    case "integer": {
      const min = s.minimum ?? -1e6;
      const max = s.maximum ?? 1e6;
      return g(() => fc.oneof(fc.constantFrom(min, max), fc.integer({ min: Math.max(min, -1e6), max: Math.min(max, 1e6) })));
    }
    case "string":
      if (s.pattern) return name === "kind" ? g(() => fc.constantFrom(PULL_KIND, "demo.echo", ...VALID_NOISE_NAMES.slice(0, 11))) : g(() => fc.constantFrom(...VALID_NOISE_NAMES.slice(0, 11)));
      return g(() => hostileString.map((v) => v.slice(0, s.maxLength ?? 256)).filter((v) => v.length >= (name === "token" ? 1 : 0)));
    case "array": {
      const length = g(() => fc.integer({ min: Math.max(1, s.minItems ?? 0), max: Math.min(s.maxItems ?? 5, 5) }));
      return Array.from({ length }, () => validValue(s.items!, schemas, g, name));
    }
    case "object": {
      const out: Record<string, unknown> = {};
      for (const [key, property] of Object.entries(s.properties ?? {})) {
        if ((s.required ?? []).includes(key) || g(() => fc.boolean())) out[key] = validValue(property, schemas, g, key);
      }
      return out;
    }
    default:
      throw new Error(`schema type ${type} not handled: extend the fuzzer`);
  }
}

/** Every place in a value built from `schema` where one mutation breaks the schema, as [path, schema]. */
function mutable(schema: JsonSchema, schemas: Record<string, JsonSchema>, value: unknown, path: (string | number)[] = []): [(string | number)[], JsonSchema][] {
  const s = resolve(schema, schemas);
  const here: [(string | number)[], JsonSchema][] = typesOf(s).length > 0 ? [[path, s]] : [];
  if (Array.isArray(value) && s.items) return [...here, ...value.flatMap((v, i) => mutable(s.items!, schemas, v, [...path, i]))];
  if (value !== null && typeof value === "object" && s.properties) {
    return [...here, ...Object.entries(value).flatMap(([k, v]) => (s.properties![k] ? mutable(s.properties![k]!, schemas, v, [...path, k]) : []))];
  }
  return here;
}

/** A value that `schema` refuses. */
function breaking(s: JsonSchema, g: fc.GeneratorValue): unknown {
  const types = typesOf(s);
  const options: fc.Arbitrary<unknown>[] = [
    // another JSON type
    fc.constantFrom<unknown>("1", 1, 1.5, true, null, [], {}, [1], { a: 1 }).filter((v) => !types.includes(v === null ? "null" : Array.isArray(v) ? "array" : Number.isInteger(v) ? "integer" : typeof v) && !(types.includes("integer") && v === 1)),
  ];
  if (types.includes("integer")) {
    if (s.maximum !== undefined) options.push(fc.constantFrom(s.maximum + 1, 1e308, s.maximum + 0.5));
    if (s.minimum !== undefined) options.push(fc.constantFrom(s.minimum - 1, -1e308, s.minimum - 0.5));
    options.push(fc.constant(0.5));
  }
  if (types.includes("string")) {
    if (s.pattern) options.push(badSegment.map((seg) => decodeSegment(seg) ?? seg).filter((v) => !NAME_PATTERN.test(v)));
    if (s.maxLength !== undefined) options.push(fc.constant("y".repeat(s.maxLength + 1)));
    if (s.minLength) options.push(fc.constant(""));
    if (s.enum) options.push(fc.constant("nope"));
  }
  if (types.includes("array")) {
    if (s.minItems) options.push(fc.constant([]));
    if (s.maxItems !== undefined && s.maxItems <= 100) options.push(fc.constant(Array.from({ length: s.maxItems + 1 }, () => "a")));
  }
  return g(() => fc.oneof(...options));
}

function setAt(root: unknown, path: (string | number)[], value: unknown): unknown {
  if (path.length === 0) return value;
  const copy: any = Array.isArray(root) ? [...root] : { ...(root as object) };
  copy[path[0]!] = setAt(copy[path[0]!], path.slice(1), value);
  return copy;
}

const encoder = new TextEncoder();

/** A body defect: the schema broken in one place, or the transport rules broken. Answers bytes and headers. */
function defectiveBody(route: Route, schemas: Record<string, JsonSchema>, g: fc.GeneratorValue): { bytes: Uint8Array; contentType: string | null; stream: boolean } {
  const schema = route.body!.schema;
  const valid = validValue(schema, schemas, g, "");
  const json = (v: unknown) => ({ bytes: encoder.encode(JSON.stringify(v)), contentType: "application/json", stream: false });
  const kind = g(() => fc.constantFrom("field", "unknown", "missing", "too-large-value", "malformed", "not-object", "deep", "utf8", "media-type", "over-body", "at-body-limit"));
  switch (kind) {
    case "field": {
      const places = mutable(schema, schemas, valid).filter(([path]) => path.length > 0);
      if (places.length === 0) return json({ ...(valid as object), "x-unknown": 1 });
      const [path, s] = g(() => fc.constantFrom(...places));
      return json(setAt(valid, path, breaking(s, g)));
    }
    case "unknown": {
      // Objects only: a field that may be an object or null (a rate limit) is no place for a key when it is null.
      const at = (path: (string | number)[]) => path.reduce<any>((v, k) => v?.[k], valid);
      const places = mutable(schema, schemas, valid).filter(([path, s]) => typesOf(s).includes("object") && at(path) !== null && typeof at(path) === "object" && !Array.isArray(at(path)));
      const [path] = g(() => fc.constantFrom(...places));
      const key = g(() => fc.constantFrom("x", "__proto__", "constructor", "Token", "kind ", "ünknown"));
      const target = path.reduce<any>((v, k) => v[k], valid);
      return json(setAt(valid, path, JSON.parse(JSON.stringify(target).replace(/^\{/, `{${JSON.stringify(key)}:1${Object.keys(target).length ? "," : ""}`))));
    }
    case "missing": {
      const s = resolve(schema, schemas);
      if (!s.required?.length) return json([valid]);
      const { [g(() => fc.constantFrom(...s.required!))]: _gone, ...rest } = valid as Record<string, unknown>;
      return json(rest);
    }
    case "too-large-value": {
      // One byte over 128 KiB in a payload or result (413), or in a field whose length is bounded anyway (400).
      const over = sizedString(MAX_PAYLOAD_BYTES + 1, g(() => fc.constantFrom("x", "é", "🚂")) as "x");
      const field = route.template.endsWith("/complete") ? "result" : "payload";
      if (route.template.endsWith("/batch")) return json({ jobs: [{ kind: PULL_KIND }, { kind: PULL_KIND, [field]: over }] });
      return json({ ...(valid as object), [field]: over });
    }
    case "malformed": {
      const text = JSON.stringify(valid);
      const broken = g(() => fc.constantFrom(text.slice(0, -1), `${text},`, `${text}}`, text.replace(":", "="), `{${text}`, text.replaceAll('"', "'"), `${text}\u0000`));
      return { bytes: encoder.encode(broken === text ? `${text}{` : broken), contentType: "application/json", stream: false };
    }
    case "not-object":
      return json(g(() => fc.constantFrom<unknown>([valid], 1, "s", true, null, [])));
    case "deep": {
      // Where a route takes any JSON (a payload, a result), else as a field of its own.
      const depth = g(() => fc.integer({ min: MAX_BODY_DEPTH + 1, max: 4000 }));
      const deep = `${"[".repeat(depth)}${"]".repeat(depth)}`;
      const field = route.template.endsWith("/complete") ? "result" : route.template.endsWith("/jobs") ? "payload" : "deep";
      const { [field]: _replaced, ...rest } = valid as Record<string, unknown>;
      const text = route.template.endsWith("/batch")
        ? `{"jobs":[{"kind":"${PULL_KIND}","payload":${deep}}]}`
        : JSON.stringify(rest).replace(/\}$/, `${Object.keys(rest).length ? "," : ""}"${field}":${deep}}`);
      return { bytes: encoder.encode(text), contentType: "application/json", stream: false };
    }
    case "utf8": {
      const text = JSON.stringify(valid);
      const head = encoder.encode(`${text.slice(0, -1)}${text === "{}" ? "" : ","}"s":"`);
      const bad = g(() => fc.constantFrom([0xff], [0xc3, 0x28], [0xed, 0xa0, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80]));
      return { bytes: new Uint8Array([...head, ...bad, ...encoder.encode('"}')]), contentType: "application/json", stream: false };
    }
    case "media-type":
      return { ...json(valid), contentType: g(() => fc.constantFrom("text/plain", "application/x-www-form-urlencoded", "application/xml", "multipart/form-data; boundary=x", "json", "application/jsonx", null)) };
    case "over-body": {
      // Just over 1 MiB, by Content-Length or streamed without one.
      const pad = MAX_BODY_BYTES + 1 - JSON.stringify({ ...(valid as object), pad: "" }).length;
      return { ...json({ ...(valid as object), pad: "p".repeat(Math.max(pad, 1)) }), stream: g(() => fc.boolean()) };
    }
    case "at-body-limit": {
      // Exactly 1 MiB, read to the end: refused for its unknown field, not its size.
      const pad = MAX_BODY_BYTES - encoder.encode(JSON.stringify({ ...(valid as object), pad: "" })).byteLength;
      const bytes = encoder.encode(JSON.stringify({ ...(valid as object), pad: "p".repeat(Math.max(pad, 0)) }));
      if (pad >= 0) expect(bytes.byteLength).toBe(MAX_BODY_BYTES);
      return { bytes, contentType: "application/json", stream: g(() => fc.boolean()) };
    }
  }
  throw new Error(kind);
}

// ---- the request ----

const METHODS = ["GET", "POST", "PATCH", "PUT", "DELETE", "OPTIONS"];
const BAD_AUTH = [null, "Bearer", "Bearer ", "Bearer wrong", "Bearer retired-token", `Basic ${TOKEN}`, TOKEN, `Bearer ${TOKEN},${ROTATED_TOKEN}`, `Bearer ${TOKEN}x`, `Token ${TOKEN}`];
const GOOD_AUTH = [`Bearer ${TOKEN}`, `Bearer ${ROTATED_TOKEN}`, `bearer ${TOKEN}`, `BEARER   ${ROTATED_TOKEN}  `];
const NOISE_HEADERS: Record<string, string>[] = [
  {},
  { "x-forwarded-for": "127.0.0.1, ::1" },
  { accept: "text/html", "accept-encoding": "gzip, br" },
  { cookie: `session=${"c".repeat(4096)}` },
  { "x-http-method-override": "DELETE", "x-original-url": "/v1/lanes" },
  { "user-agent": "' OR 1=1 --", origin: "https://evil.example" },
];
const BAD_QUERIES: Record<string, string[]> = {
  state: ["nope", "QUEUED", "", "settled%00"],
  outcome: ["done", "1"],
  kind: ["bad%20name", "-x", "A".repeat(129)],
  queue: ["%00", ".."],
  limit: ["0", "501", "abc", "1.5", "-1", "1e308", "100001"],
  // Bad for both lists: a job cursor is `c1.<seq>`, a lane cursor a name.
  cursor: ["-x", ".c1", "%00", "%F0%9F%9A%82", "x".repeat(200)],
};
const NOISE_QUERIES: Record<string, string[]> = { state: ["queued", "settled"], outcome: ["failed"], kind: [PULL_KIND], queue: ["q1"], limit: ["1", "500"] };

function shots(routes: Route[], schemas: Record<string, JsonSchema>, lane: LaneFixture, ids: string[], tokens: Map<string, string>): fc.Arbitrary<Shot> {
  const pathsServed = new Map<string, Set<string>>();
  for (const r of routes) pathsServed.set(r.template, new Set([...(pathsServed.get(r.template) ?? []), r.method]));
  return fc.gen().map((g) => {
    const route = g(() => fc.constantFrom(...routes));
    const applicable: Defect[] = ["auth", "name", "method"];
    if (route.query.length > 0) applicable.push("query");
    if (route.body) applicable.push("body");
    const fenced = /\/jobs\/\{id\}\/(renew|complete|fail|release|progress|checkpoints\/\{name\})$/.test(route.template);
    if (fenced) applicable.push("lease");
    if (!route.template.includes("{")) applicable.splice(applicable.indexOf("name"), 1);
    const defects = g(() => fc.subarray(applicable, { minLength: 1, maxLength: 2 }));
    const has = (d: Defect) => defects.includes(d);

    // Path: the populated lane and its jobs, a valid noise name, or (a defect) a bad segment.
    const laneSegment = g(() => fc.oneof({ weight: 4, arbitrary: fc.constant(lane.lane) }, fc.constantFrom(...VALID_NOISE_NAMES)));
    const idSegment = g(() => fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...ids) }, fc.constantFrom(...VALID_NOISE_NAMES)));
    const params = { lane: laneSegment, id: idSegment };
    if (has("name")) {
      const which = hasInnerName(route.template) ? g(() => fc.constantFrom("lane", "id", "both")) : "lane";
      if (which !== "id") params.lane = g(() => badSegment);
      if (which !== "lane") params.id = g(() => badSegment);
    }
    const lanes = [params.lane].filter(isValidName).map((s) => decodeSegment(s)!);

    let method = route.method;
    if (has("method")) method = g(() => fc.constantFrom(...METHODS.filter((m) => !pathsServed.get(route.template)!.has(m) && !(m === "HEAD"))));
    else if (route.method === "GET" && g(() => fc.boolean())) method = "HEAD";

    const query: string[] = [];
    for (const name of route.query) {
      if (NOISE_QUERIES[name] && g(() => fc.boolean())) query.push(`${name}=${g(() => fc.constantFrom(...NOISE_QUERIES[name]!))}`);
    }
    if (has("query")) {
      const name = g(() => fc.constantFrom(...route.query));
      query.push(`${name}=${g(() => fc.constantFrom(...(BAD_QUERIES[name] ?? ["%zz"])))}`);
    }

    const headers: Record<string, string> = { ...g(() => fc.constantFrom(...NOISE_HEADERS)) };
    const authorization = has("auth") ? g(() => fc.constantFrom(...BAD_AUTH)) : g(() => fc.constantFrom(...GOOD_AUTH));
    if (authorization !== null) headers.authorization = authorization;

    let body: Uint8Array | null = null;
    let stream = false;
    const sendsBody = method !== "GET" && method !== "HEAD" && (route.body !== undefined || has("method"));
    if (sendsBody && route.body && has("body")) {
      const defective = defectiveBody(route, schemas, g);
      body = defective.bytes;
      stream = defective.stream;
      if (defective.contentType !== null) headers["content-type"] = defective.contentType;
    } else if (sendsBody && route.body) {
      // A body valid for the route: the request's defect lies elsewhere. A fence route's token is never the job's.
      let valid = validValue(route.body.schema, schemas, g, "") as Record<string, unknown>;
      if (fenced && has("lease")) {
        // Another job's token (never the addressed job's own: repeating its write would be a legitimate 200).
        const others = [...tokens].filter(([id]) => id !== decodeSegment(params.id)).map(([, token]) => token);
        valid = { ...valid, token: g(() => fc.constantFrom(...others, "x", "A".repeat(256))) };
      }
      body = encoder.encode(JSON.stringify(valid));
      headers["content-type"] = g(() => fc.constantFrom("application/json", "application/json; charset=utf-8", "application/vnd.api+json"));
    } else if (sendsBody && g(() => fc.boolean())) {
      body = encoder.encode(JSON.stringify(g(() => anyJson)));
      headers["content-type"] = "application/json";
    }
    const path = fill(route.template, params) + (query.length ? `?${query.join("&")}` : "");
    // A client collapses dot segments before sending ("/v1/lanes/:x/jobs/../../requeue" is
    // "/v1/lanes/requeue"): where that makes a request for a route that exists, give it a bad token.
    // Whatever else it carries may be no defect there: a cursor wrong for `…/./schedules` is no
    // parameter of `GET /v1/lanes/schedules` at all (seed 868035389 found that one).
    if (!defects.includes("auth") && servedAfterNormalizing(routes, method, path)) {
      headers.authorization = "Bearer wrong";
      defects.push("auth");
    }
    return { method, path, headers, body, stream, defects, lanes };
  });
}

/** Whether `path`, once its dot segments are collapsed, names a route served for `method` with valid names. */
function servedAfterNormalizing(routes: Route[], method: string, path: string): boolean {
  const raw = path.split("?")[0]!;
  const normalized = new URL(`http://switchyard.test${raw}`).pathname;
  if (normalized === raw) return false;
  return routes.some((route) => {
    if (route.method !== method && !(method === "HEAD" && route.method === "GET")) return false;
    const match = new RegExp(`^${route.template.replace(/\{\w+\}/g, "([^/]+)")}$`).exec(normalized);
    return match !== null && match.slice(1).every(isValidName);
  });
}

function toRequest(shot: Shot): Request {
  let body: BodyInit | null = shot.body;
  if (shot.body && shot.stream) {
    const bytes = shot.body;
    body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < bytes.byteLength; i += 64 * 1024) controller.enqueue(bytes.slice(i, i + 64 * 1024));
        controller.close();
      },
    });
  }
  return new Request(`http://switchyard.test${shot.path}`, { method: shot.method, headers: shot.headers, body });
}

/** A lane with jobs in every state (the fuzzer's main target), and the lease tokens that hold them. */
async function populatedLane(): Promise<{ lane: LaneFixture; ids: string[]; tokens: Map<string, string> }> {
  const lane = await setup();
  for (const id of ["q1", "r1", "c1", "x1", "f1", "k1"]) await enqueue(lane, { id, maxAttempts: 2 });
  const claimed = await post(`${lane.base}/claims`, { max: 4, leaseMs: 3_600_000 });
  const held = new Map<string, string>((claimed.body.jobs as { id: string; lease: { token: string } }[]).map((j) => [j.id, j.lease.token]));
  expect([...held.keys()]).toEqual(["q1", "r1", "c1", "x1"]);
  expect((await call("PUT", `${lane.base}/jobs/q1/checkpoints/s1`, { json: { token: held.get("q1"), value: { kept: true } } })).status).toBe(200);
  expect((await post(`${lane.base}/jobs/r1/complete`, { token: held.get("r1") })).status).toBe(200);
  expect((await post(`${lane.base}/jobs/c1/fail`, { token: held.get("c1"), error: "no", retry: false })).status).toBe(200);
  expect((await post(`${lane.base}/jobs/x1/cancel`)).status).toBe(202);
  expect((await post(`${lane.base}/jobs/k1/cancel`)).status).toBe(200);
  // q1 runs, x1 runs with a cancel pending, f1 is queued; the tokens the fuzzer may send are stale or another job's.
  return { lane, ids: ["q1", "r1", "c1", "x1", "f1", "k1"], tokens: held };
}

describe("hostile input over every route of the OpenAPI document", () => {
  it(`answers ${RUNS} defective requests with 4xx, never 5xx, changing no lane (fast-check seed ${SEED})`, { timeout: 180_000 }, async () => {
    console.log(`hostile-input: fast-check seed ${SEED}, ${RUNS} runs`);
    const { routes, schemas } = await v1Routes();
    const { lane, ids, tokens } = await populatedLane();
    const infoBefore = await lane.stub.info();
    const jobsBefore = await lane.stub.listJobs({ limit: 500 });
    const checkpointsBefore = await Promise.all(ids.map((id) => lane.stub.listCheckpoints(id)));
    const lanesBefore = (await get("/v1/lanes?limit=500")).body;
    const addressed = new Set<string>();
    const codes = new Set(Object.keys(ERROR_STATUS));
    const seen = { statuses: new Map<number, number>(), defects: new Map<Defect, number>(), routes: new Set<string>() };
    let sent = 0;

    await fc.assert(
      fc.asyncProperty(shots(routes, schemas, lane, ids, tokens), async (shot) => {
        const response = await exports.default.fetch(toRequest(shot));
        const text = await response.text();
        const what = `${shot.method} ${shot.path.slice(0, 200)} [${shot.defects.join(",")}] → ${response.status} ${text.slice(0, 300)}`;
        expect(response.status, what).toBeGreaterThanOrEqual(400);
        expect(response.status, what).toBeLessThan(500);
        if (shot.method !== "HEAD") {
          const error = (JSON.parse(text) as { error: { code: ErrorCode; message: string } }).error;
          expect(codes.has(error.code), what).toBe(true);
          expect(ERROR_STATUS[error.code], what).toBe(response.status);
          expect(typeof error.message, what).toBe("string");
        }
        expect(await lane.stub.info(), what).toEqual(infoBefore);
        for (const name of shot.lanes) addressed.add(name);
        seen.statuses.set(response.status, (seen.statuses.get(response.status) ?? 0) + 1);
        for (const d of shot.defects) seen.defects.set(d, (seen.defects.get(d) ?? 0) + 1);
        seen.routes.add(`${shot.method} ${shot.path.split("?")[0]!.replace(lane.lane, "{lane}")}`);
        if (++sent % 250 === 0) expect((await get("/healthz", { token: null })).status).toBe(200);
      }),
      { numRuns: RUNS, seed: SEED, endOnFailure: true },
    );
    console.log(`hostile-input: statuses ${JSON.stringify([...seen.statuses].sort())}, defects ${JSON.stringify([...seen.defects])}`);

    // No lane changed: the populated one row for row, no new lane registered, every other lane addressed still empty.
    expect(await lane.stub.listJobs({ limit: 500 })).toEqual(jobsBefore);
    expect(await Promise.all(ids.map((id) => lane.stub.listCheckpoints(id)))).toEqual(checkpointsBefore);
    expect((await get("/v1/lanes?limit=500")).body).toEqual(lanesBefore);
    for (const name of addressed) {
      if (name === lane.lane) continue;
      const info = (await get(`/v1/lanes/${encodeURIComponent(name)}`)).body;
      expect(info, name).toMatchObject({ counts: { queued: 0, running: 0, completed: 0, failed: 0, cancelled: 0 }, paused: false, concurrency: DEFAULT_CONCURRENCY, nextWakeAt: null });
    }
    // The server still answers, and still works.
    expect((await get("/healthz", { token: null })).body).toEqual({ ok: true });
    expect((await post(`${lane.base}/jobs`, { kind: PULL_KIND })).status).toBe(201);
    // Every defect and every refusal status was reached.
    expect([...seen.defects.keys()].sort()).toEqual(["auth", "body", "lease", "method", "name", "query"]);
    expect([...seen.statuses.keys()].sort()).toEqual(expect.arrayContaining([400, 401, 404, 409, 413, 415]));
  });
});

describe("bodies at and just over each limit", () => {
  it.each(["x", "é", "🚂"] as const)("a payload of exactly 128 KiB of %s is accepted; one byte more is payload_too_large", async (unit) => {
    const lane = await setup();
    const at = sizedString(MAX_PAYLOAD_BYTES, unit);
    expect(encoder.encode(JSON.stringify(at)).byteLength).toBe(MAX_PAYLOAD_BYTES);
    expect((await post(`${lane.base}/jobs`, { kind: PULL_KIND, payload: at })).status).toBe(201);
    const over = await post(`${lane.base}/jobs`, { kind: PULL_KIND, payload: sizedString(MAX_PAYLOAD_BYTES + 1, unit) });
    expect({ status: over.status, code: over.body.error?.code }).toEqual({ status: 413, code: "payload_too_large" });
    expect((await get(lane.base)).body.counts.queued).toBe(1);
  });

  it("a result of exactly 128 KiB completes; one byte more is payload_too_large and the lease still holds", async () => {
    const lane = await setup();
    await enqueue(lane, { id: "a" });
    await enqueue(lane, { id: "b" });
    const claimed = (await post(`${lane.base}/claims`, { max: 2 })).body.jobs as { id: string; lease: { token: string } }[];
    const over = await post(`${lane.base}/jobs/a/complete`, { token: claimed[0]!.lease.token, result: sizedString(MAX_PAYLOAD_BYTES + 1, "é") });
    expect(over.status).toBe(413);
    expect((await post(`${lane.base}/jobs/a/complete`, { token: claimed[0]!.lease.token, result: sizedString(MAX_PAYLOAD_BYTES, "é") })).status).toBe(200);
    expect((await get(`${lane.base}/jobs/a`)).body.result).toBe(sizedString(MAX_PAYLOAD_BYTES, "é"));
  });

  it.each([false, true])("a batch body of exactly 1 MiB is read and enqueued (streamed: %s); one byte more is refused whole", async (streamed) => {
    const lane = await setup();
    const body = (bytes: number) => {
      const jobs = Array.from({ length: 9 }, (_, i) => ({ id: `b${i}`, kind: PULL_KIND, payload: "" }));
      const base = JSON.stringify({ jobs }).length;
      const room = bytes - base;
      for (const job of jobs) job.payload = "p".repeat(Math.floor(room / 9));
      jobs[0]!.payload += "p".repeat(room % 9);
      const text = JSON.stringify({ jobs });
      expect(text.length).toBe(bytes);
      return text;
    };
    const send = (text: string) => {
      const bytes = encoder.encode(text);
      const payload = streamed
        ? new ReadableStream<Uint8Array>({
            start(c) {
              c.enqueue(bytes);
              c.close();
            },
          })
        : bytes;
      return exports.default.fetch(
        new Request(`http://switchyard.test${lane.base}/jobs/batch`, { method: "POST", headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" }, body: payload }),
      );
    };
    const over = await send(body(MAX_BODY_BYTES + 1));
    expect(over.status).toBe(413);
    expect((await over.json<{ error: { code: string } }>()).error.code).toBe("payload_too_large");
    expect((await get(lane.base)).body.counts.queued).toBe(0);
    const at = await send(body(MAX_BODY_BYTES));
    expect(at.status).toBe(200);
    expect((await get(lane.base)).body.counts.queued).toBe(9);
  });
});

// The fuzzer builds bodies from the document's schemas: a type it does not know fails here, not silently.
it("the fuzzer knows every type of every request body schema", async () => {
  const { routes, schemas } = await v1Routes();
  const types = new Set<string>();
  const walk = (schema: JsonSchema) => {
    const s = resolve(schema, schemas);
    for (const t of typesOf(s)) types.add(t);
    for (const p of Object.values(s.properties ?? {})) walk(p);
    if (s.items) walk(s.items);
  };
  for (const route of routes) if (route.body) walk(route.body.schema);
  expect([...types].sort()).toEqual(["array", "boolean", "integer", "null", "object", "string"]);
});
