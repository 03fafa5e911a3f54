/**
 * Waitpoints' callback URLs (docs/api.md "Waitpoints"): `POST /v1/callbacks/{lane}/waitpoints/{id}/{signature}`
 * completes that one waitpoint without a bearer token (a payment provider's webhook cannot send one),
 * the whole body its result, completed as `POST …/waitpoints/{id}/complete` completes it
 * (`completeWaitpointAnswer`). The signature is checked before the body is read: a URL that does not verify
 * is a 404 that says nothing about the waitpoint and changes nothing.
 */
import type { MiddlewareHandler } from "hono";
import { MAX_PAYLOAD_BYTES } from "../../shared/defaults.js";
import { QueueError } from "../../shared/errors.js";
import { accessConfig } from "../access.js";
import { isJsonContentType, parseJsonText, readAtMost } from "../body.js";
import { createRouter, type AppEnv } from "../openapi.js";
import { verifyCallback } from "../signing.js";
import { completeWaitpointAnswer } from "./waitpoints.js";

/** The callback routes, in Hono's path syntax under `/v1`, for the bearer middleware and the body check to skip. */
export const CALLBACKS_PATH = "/v1/callbacks/*";

/** One answer for every callback URL that does not verify, whatever it names. */
const notFound = () => new QueueError("not_found", "no such callback URL");

const tooLarge = () => new QueueError("payload_too_large", `a callback's body is at most ${MAX_PAYLOAD_BYTES} bytes`);

/** Like every `/v1` route, a callback answers nothing while the API has no token (fail closed). */
const callbackAccess: MiddlewareHandler<AppEnv> = async (c, next) => {
  const config = accessConfig(c.env);
  if (!config.ok) throw new QueueError("auth_not_configured", config.reason);
  await next();
};

/**
 * The body as the completion's request: `{"result": <the body>}`, or `{}` (result null) when there is
 * none. It is the result, so its limit is a result's (128 KiB), not a request's.
 */
async function completeRequest(raw: Request): Promise<{ result?: unknown }> {
  if (raw.body === null) return {};
  const declared = raw.headers.get("content-length");
  if (declared !== null && Number(declared) > MAX_PAYLOAD_BYTES) throw tooLarge();
  const bytes = await readAtMost(raw.body, MAX_PAYLOAD_BYTES);
  if (bytes === null) throw tooLarge();
  if (bytes.byteLength === 0) return {};
  const contentType = raw.headers.get("content-type") ?? undefined;
  if (!isJsonContentType(contentType)) throw new QueueError("unsupported_media_type", `the body must be application/json, not ${contentType ?? "untyped"}`);
  return { result: JSON.parse(parseJsonText(bytes)) };
}

export function callbackRoutes() {
  return createRouter()
    .use("/callbacks/*", callbackAccess)
    .post("/callbacks/:lane/waitpoints/:id/:signature", async (c) => {
      const { lane, id, signature } = c.req.param();
      if (!(await verifyCallback(c.env.SIGNING_SECRET, lane, id, signature))) throw notFound();
      const { waitpoint, created } = await completeWaitpointAnswer(c, lane, id, await completeRequest(c.req.raw));
      return created ? c.json({ waitpoint }, 201) : c.json({ waitpoint }, 200);
    })
    .all("/callbacks/*", () => {
      throw notFound();
    });
}
