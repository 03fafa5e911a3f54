/**
 * The request body, before any route sees it: at most 1 MiB (17 MiB for a single enqueue or a
 * `complete` when the worker binds `PAYLOADS`; by `Content-Length` and by the bytes
 * actually read, since a stream may carry no length or lie), `application/json` (or `+json`) when
 * present, and well-formed JSON. A route then validates its shape with its schema. An empty body
 * counts as absent, so a route whose body is optional accepts `Content-Type: application/json` with
 * nothing after it.
 */
import type { MiddlewareHandler } from "hono";
import { MAX_BODY_BYTES, MAX_BODY_DEPTH } from "../shared/defaults.js";
import { QueueError } from "../shared/errors.js";
import { MAX_HELD_BODY_BYTES } from "../shared/payload-ref.js";

const JSON_MEDIA_TYPE = /^application\/([\w.-]+\+)?json$/i;

export function isJsonContentType(contentType: string | undefined): boolean {
  return JSON_MEDIA_TYPE.test((contentType ?? "").split(";")[0]!.trim());
}

const tooLarge = (limit: number) => new QueueError("payload_too_large", `the request body is larger than ${limit} bytes`);

/** A single enqueue and a `complete`: the bodies that may carry a payload or result of up to 16 MiB (docs/api.md "Conventions"). */
const HELD_BODY_PATH = /^\/v1\/lanes\/[^/]+\/jobs(\/[^/]+\/complete)?$/;

/** The most a request's body may hold: 17 MiB for those two when the worker binds `PAYLOADS`, else 1 MiB. */
function bodyLimit(method: string, path: string, payloads: boolean): number {
  return payloads && method === "POST" && HELD_BODY_PATH.test(path) ? MAX_HELD_BODY_BYTES : MAX_BODY_BYTES;
}

export const jsonBody: MiddlewareHandler = async (c, next) => {
  const raw = c.req.raw;
  if (raw.body === null) return next();
  const limit = bodyLimit(raw.method, c.req.path, (c.env as { PAYLOADS?: unknown } | undefined)?.PAYLOADS !== undefined);
  const declared = raw.headers.get("content-length");
  if (declared !== null && Number(declared) > limit) throw tooLarge(limit);
  const bytes = await readAtMost(raw.body, limit);
  if (bytes === null) throw tooLarge(limit);
  const contentType = raw.headers.get("content-type") ?? undefined;
  if (bytes.byteLength === 0) {
    // Keep the content type: the route's own media-type gate still refuses a non-JSON one.
    c.req.raw = new Request(raw, { body: isJsonContentType(contentType) ? "{}" : null });
    return next();
  }
  if (!isJsonContentType(contentType)) {
    throw new QueueError("unsupported_media_type", `the body must be application/json, not ${contentType ?? "untyped"}`);
  }
  const text = parseJsonText(bytes);
  c.req.raw = new Request(raw, { body: text });
  await next();
};

/** The bytes of a stream, or null as soon as they exceed `limit`. */
export async function readAtMost(stream: ReadableStream<Uint8Array>, limit: number): Promise<Uint8Array | null> {
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      return null;
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}

/** The deepest nesting of arrays and objects in JSON text (brackets inside strings do not count). */
export function nestingDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === 0x5c) i++; // backslash: skip the escaped character
      else if (ch === 0x22) inString = false;
    } else if (ch === 0x22) inString = true;
    else if (ch === 0x5b || ch === 0x7b) deepest = Math.max(deepest, ++depth);
    else if (ch === 0x5d || ch === 0x7d) depth--;
  }
  return deepest;
}

/** UTF-8 JSON text, checked to parse and to nest at most `MAX_BODY_DEPTH` deep; else `invalid_request`. */
export function parseJsonText(bytes: Uint8Array): string {
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    throw new QueueError("invalid_request", "the body is not UTF-8", [{ path: [], message: "not UTF-8" }]);
  }
  if (nestingDepth(text) > MAX_BODY_DEPTH) {
    throw new QueueError("invalid_request", `the body nests deeper than ${MAX_BODY_DEPTH} levels`, [
      { path: [], message: `nested deeper than ${MAX_BODY_DEPTH} levels` },
    ]);
  }
  try {
    JSON.parse(text);
  } catch {
    // Not the parser's message: it quotes the body, which may hold a lease token.
    throw new QueueError("invalid_request", "the body is not well-formed JSON", [{ path: [], message: "malformed JSON" }]);
  }
  return text;
}
