/**
 * Errors over HTTP: every refusal is a `QueueError` answered as `{ error: { code, message, details? } }`
 * at `ERROR_STATUS[code]`, by the one `onError` of the app. Anything else is a bug: 500 `internal`,
 * with the stack in the log and never in the body.
 */
import type { Hook } from "@hono/zod-openapi";
import type { ErrorHandler, NotFoundHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { QueueError, type ErrorCode } from "../shared/errors.js";
import { log } from "../shared/log.js";
import { describeError } from "../shared/describe-error.js";
import { toIssues } from "../shared/schemas.js";
import { isJsonContentType } from "./body.js";
import { ERROR_STATUS } from "./status.js";

/** Hono's own refusals (its validator, the media-type gate of zod-openapi) in the API's codes. */
const HTTP_EXCEPTION_CODES: Partial<Record<number, [ErrorCode, string]>> = {
  400: ["invalid_request", "the body is not well-formed JSON"],
  401: ["unauthorized", "missing or wrong bearer token"],
  404: ["not_found", "no such route"],
  413: ["payload_too_large", "the request body is too large"],
  415: ["unsupported_media_type", "the body must be application/json"],
};

export const onError: ErrorHandler = (error, c) => {
  const known = asQueueError(error);
  // An `internal` refusal (a lane's own bug report) is a bug like any other: logged, never detailed.
  if (known && known.code !== "internal") return c.json({ error: known.toBody() }, ERROR_STATUS[known.code] as ContentfulStatusCode);
  log({
    event: "http.internal_error",
    method: c.req.method,
    path: c.req.path,
    name: error instanceof Error ? error.name : typeof error,
    message: describeError(error),
    stack: error instanceof Error ? error.stack : undefined,
  });
  return c.json({ error: { code: "internal", message: "internal error" } }, 500);
};

export const onNotFound: NotFoundHandler = (c) =>
  c.json({ error: { code: "not_found", message: `no route ${c.req.method} ${c.req.path}` } }, 404);

/**
 * zod-openapi's hook after validating one part of a request: a failure becomes one `invalid_request`.
 * zod-openapi validates the body of a route that requires one even without a JSON content type (as
 * `{}`); that request carries no JSON body at all, which is a 415.
 */
export const validationHook: Hook<unknown, any, string, void> = (result, c) => {
  if (result.target === "json" && !isJsonContentType(c.req.header("content-type"))) {
    throw new QueueError("unsupported_media_type", "this route requires an application/json body");
  }
  if (result.success) return;
  const details = toIssues(result.error);
  const where = result.target === "json" ? "body" : result.target;
  const summary = details.map((d) => `${d.path.join(".") || "(" + where + ")"}: ${d.message}`).join("; ");
  throw new QueueError("invalid_request", `invalid ${where}: ${summary}`, details);
};

function asQueueError(error: unknown): QueueError | null {
  if (error instanceof QueueError) return error;
  if (error instanceof HTTPException) {
    const known = HTTP_EXCEPTION_CODES[error.status];
    return known ? new QueueError(...known) : null;
  }
  return null;
}
