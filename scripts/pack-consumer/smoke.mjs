// Plain Node (no bundler, no workerd, no TypeScript), in a project that installed the packed
// tarball: `switchyard/client` must load and work here, and `switchyard` must not (it needs workerd).
// Plain JavaScript on purpose: it runs on Node 20 too, which cannot strip types.
import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer } from "node:http";
import { createHttpClient, createWorker, QueueError } from "switchyard/client";

const job = { id: "invoice-42", lane: "tenant-7", kind: "email.send", state: "queued" };
const TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
// One job for a pull worker's first claim (traced: the project has no @opentelemetry/api), and the acks it sends.
let pulled = [{ ...job, id: "pulled", kind: "pull.k", payload: null, attempts: 1, traceparent: TRACEPARENT, lease: { token: "t", generation: 1, expiresAt: Date.now() + 60_000 }, checkpoints: {}, dependencies: [] }];
const acked = [];

// A stand-in for the API: just enough of shared/API.md for one success and one error.
const server = createServer(async (request, response) => {
  let body = "";
  for await (const chunk of request) body += chunk;
  const answer = (status, value) => response.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(value));
  if (request.headers.authorization !== "Bearer smoke-token") return answer(401, { error: { code: "unauthorized", message: "no" } });
  if (request.method === "POST" && request.url === "/v1/lanes/tenant-7/jobs") {
    assert.deepEqual(JSON.parse(body), { id: "invoice-42", kind: "email.send", payload: { to: "a@b.c" } });
    return answer(201, { status: "queued", job });
  }
  if (request.method === "POST" && request.url === "/v1/lanes/tenant-7/claims") {
    const jobs = pulled;
    pulled = [];
    return answer(200, { jobs });
  }
  if (request.method === "POST" && request.url === "/v1/lanes/tenant-7/acks") {
    const { acks } = JSON.parse(body);
    acked.push(...acks);
    return answer(200, { results: acks.map((a) => ({ id: a.id, ok: true })) });
  }
  answer(404, { error: { code: "job_not_found", message: "no such job" } });
});
server.listen(0, "127.0.0.1");
await once(server, "listening");

const results = [];
async function check(name, body) {
  try {
    await body();
    results.push(true);
  } catch (error) {
    results.push(false);
    console.error(`FAIL ${name}:`, error);
  }
}

try {
  const lane = createHttpClient({ baseUrl: `http://127.0.0.1:${server.address().port}`, token: "smoke-token" }).lane("tenant-7");

  await check("enqueue answers the API's body", async () => {
    assert.deepEqual(await lane.enqueue({ id: "invoice-42", kind: "email.send", payload: { to: "a@b.c" } }), { status: "queued", job });
  });

  await check("an API error is a QueueError with its code", async () => {
    await assert.rejects(lane.get("missing"), (error) => error instanceof QueueError && error.code === "job_not_found");
  });

  await check("createWorker runs a traced job's handler without @opentelemetry/api (an optional peer dependency)", async () => {
    await assert.rejects(import("@opentelemetry/api"), (error) => error.code === "ERR_MODULE_NOT_FOUND");
    let seen;
    const worker = createWorker({
      url: `http://127.0.0.1:${server.address().port}`,
      token: "smoke-token",
      lane: "tenant-7",
      waitMs: 0,
      handlers: { "pull.k": (_payload, ctx) => ((seen = ctx.traceparent), "done") },
    });
    for (let i = 0; i < 200 && acked.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    await worker.stop({ graceMs: 1_000 });
    assert.equal(seen, TRACEPARENT);
    assert.deepEqual(acked, [{ op: "complete", id: "pulled", token: "t", result: "done" }]);
  });

  // The other side of the coin: were the client entry to pull in the library, it would fail just so.
  await check("the library entry needs workerd", async () => {
    await assert.rejects(import("switchyard"), (error) => error.code === "ERR_UNSUPPORTED_ESM_URL_SCHEME" && /cloudflare:/.test(error.message));
  });
} finally {
  server.close();
}

const failed = results.filter((ok) => !ok).length;
console.log(`switchyard/client on Node ${process.version}: ${results.length - failed} passed, ${failed} failed`);
process.exitCode = failed === 0 ? 0 : 1;
