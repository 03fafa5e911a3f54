/**
 * How many jobs a pull consumer's claim would take here now, claiming nothing: what a sharded lane's
 * held claim with `minJobs` sums across the shards (`claimable`), and what its watch of a shard waits
 * to see grow (`awaitWork` with a count, shards/watchers.ts); and the ask of a claim, which the claim
 * itself reads the same way (rpc/pull-consumers.ts).
 */
import * as S from "../../shared/schemas.js";
import { DEFAULT_LEASE_MS } from "../../shared/defaults.js";
import { ok, type Result } from "../../shared/errors.js";
import { countKey, type ClaimAsk, type Claims, type InProcess } from "../attempts/claim.js";
import { parse } from "../input.js";

/** What a pull consumer's claim `request` asks for, its defaults filled in, without its `minJobs` (a held claim's alone). */
export function askOf(request: S.ClaimRequest): ClaimAsk {
  return { kinds: request.kinds ?? null, max: request.max ?? 1, leaseMs: request.leaseMs ?? DEFAULT_LEASE_MS };
}

/**
 * A claim's count, to take now or at each flush: `key` names what it counts (its kinds and how far it
 * counts), the same for every claim whose count is the same, so that one flush counts once for them.
 */
export interface ClaimCount {
  readonly key: string;
  read(): number;
}

/** The count of the claim `input`, up to its `minJobs` (else its `max`). */
export function claimCounter(claims: Claims, inProcess: InProcess, input: unknown): Result<ClaimCount> {
  const request = parse(S.ClaimRequest, input ?? {});
  if (!request.ok) return request;
  const ask = askOf(request.value);
  const upTo = request.value.minJobs ?? ask.max;
  return ok({ key: countKey(ask, upTo), read: () => claims.claimableCount(ask, inProcess, upTo) });
}
