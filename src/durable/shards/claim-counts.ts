/**
 * How many jobs a pull consumer's claim would take here now, claiming nothing: what a sharded lane's
 * held claim with `minJobs` sums across the shards (`claimable`), and what its watch of a shard waits
 * to see grow (`awaitWork` with a count, shards/watchers.ts).
 */
import * as S from "../../shared/schemas.js";
import { DEFAULT_LEASE_MS } from "../../shared/defaults.js";
import { ok, type Result } from "../../shared/errors.js";
import type { ClaimAsk, Claims, InProcess } from "../attempts/claim.js";
import { parse } from "../input.js";

/** The count of the claim `input`, up to its `minJobs` (else its `max`), as a reading to take now or at each flush. */
export function claimCounter(claims: Claims, inProcess: InProcess, input: unknown): Result<() => number> {
  const request = parse(S.ClaimRequest, input ?? {});
  if (!request.ok) return request;
  const ask: ClaimAsk = { kinds: request.value.kinds ?? null, max: request.value.max ?? 1, leaseMs: request.value.leaseMs ?? DEFAULT_LEASE_MS };
  const upTo = request.value.minJobs ?? ask.max;
  return ok(() => claims.claimableCount(ask, inProcess, upTo));
}
