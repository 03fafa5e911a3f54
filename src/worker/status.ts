/** The HTTP status of every error code (docs/api.md, "Errors"). */
import type { ErrorCode } from "../shared/errors.js";

/** `satisfies` makes an unmapped code a compile error. */
export const ERROR_STATUS = {
  invalid_request: 400,
  invalid_payload: 400,
  unauthorized: 401,
  forbidden: 403,
  job_not_found: 404,
  not_found: 404,
  schedule_not_found: 404,
  waitpoint_not_found: 404,
  waitpoint_settled: 409,
  bulk_not_found: 404,
  bulk_running: 409,
  job_conflict: 409,
  job_settled: 409,
  job_cancelled: 409,
  lease_superseded: 409,
  lease_expired: 409,
  job_not_requeueable: 409,
  job_running: 409,
  dependency_not_found: 409,
  checkpoint_limit: 409,
  stream_limit: 409,
  lane_not_empty: 409,
  // A shard's refusal of a job it does not own: the front worker re-reads the shard count and goes on;
  // it reaches a client only if the lane is resharded over and over under it.
  wrong_shard: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  upgrade_required: 426,
  auth_not_configured: 503,
  signing_not_configured: 503,
  lane_schema_too_new: 503,
  payload_store_unavailable: 503,
  // Another lane or shard a request needed could not be reached: nothing changed, and it may be sent again.
  lane_unavailable: 503,
  internal: 500,
} as const satisfies Record<ErrorCode, number>;
