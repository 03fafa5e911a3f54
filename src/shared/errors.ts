/**
 * The closed set of error codes of the HTTP contract (docs/api.md), plus `internal` for bugs. Their
 * HTTP statuses are the front worker's business (src/worker/status.ts).
 */
import type { Waitpoint } from "./waitpoint.js";
import type { Bulk } from "./bulk.js";

export type ErrorCode =
  | "invalid_request"
  | "invalid_payload"
  | "unauthorized"
  | "forbidden"
  | "job_not_found"
  | "not_found"
  | "job_conflict"
  | "job_settled"
  | "job_cancelled"
  | "lease_superseded"
  | "lease_expired"
  | "job_not_requeueable"
  | "job_running"
  | "dependency_not_found"
  | "schedule_not_found"
  | "waitpoint_not_found"
  | "waitpoint_settled"
  | "checkpoint_limit"
  | "stream_limit"
  | "payload_too_large"
  | "unsupported_media_type"
  | "upgrade_required"
  | "auth_not_configured"
  | "signing_not_configured"
  | "lane_schema_too_new"
  | "payload_store_unavailable"
  | "lane_unavailable"
  | "lane_not_empty"
  | "wrong_shard"
  | "bulk_not_found"
  | "bulk_running"
  | "internal";

/** One problem of an invalid request: where (a path into the input) and what. */
export interface Issue {
  path: (string | number)[];
  message: string;
}

/** The plain, structured-clone-safe shape of an error; what lane RPC methods return. */
export interface ErrorBody {
  code: ErrorCode;
  message: string;
  details?: ErrorDetails;
}

/** `details` of an error: the problems of an invalid request, or what a refusal concerns. */
export type ErrorDetails = Issue[] | { ids: string[] } | { index: number } | { dependencies: ({ lane: string; id: string } | { lane: string; waitpoint: string })[] }
  /** `wrong_shard`: the shard count the shard holds, and the shard an id is reserved for, if that is why (a debounce key's, `key`: the shard it is reserved for, if that is why). */
  | { shards: number; reservedFor?: number; key?: true; keyReservedFor?: number }
  /** `waitpoint_settled`: the waitpoint as it is. */
  | { waitpoint: Waitpoint }
  /** `bulk_running`: the bulk action that runs. */
  | { bulk: Bulk };

/** The one error class of the project. Thrown in the worker; rebuilt there from a lane's `ErrorBody`. */
export class QueueError extends Error {
  override readonly name = "QueueError";
  readonly code: ErrorCode;
  readonly details?: ErrorDetails;

  // No parameter properties: the pull-worker runtime runs in Node straight from TypeScript by type stripping.
  constructor(code: ErrorCode, message: string, details?: ErrorDetails) {
    super(message);
    this.code = code;
    this.details = details;
  }

  toBody(): ErrorBody {
    return this.details === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, details: this.details };
  }

  static from(body: ErrorBody): QueueError {
    return new QueueError(body.code, body.message, body.details);
  }
}

/**
 * What a lane method answers. Durable Object RPC keeps only an error's name and message, so expected
 * refusals travel as data and the worker turns them back into a `QueueError`.
 */
export type Result<T> = { ok: true; value: T } | { ok: false; error: ErrorBody };

export const ok = <T>(value: T): Result<T> => ({ ok: true, value });

export const fail = (code: ErrorCode, message: string, details?: ErrorDetails): { ok: false; error: ErrorBody } => ({
  ok: false,
  error: details === undefined ? { code, message } : { code, message, details },
});

/** Unwraps a lane answer: the value, or the refusal thrown as a `QueueError`. */
export function unwrap<T>(result: Result<T>): T {
  if (result.ok) return result.value;
  throw QueueError.from(result.error);
}
