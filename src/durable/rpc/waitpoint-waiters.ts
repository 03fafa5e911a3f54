/**
 * What a lane answers about jobs of other objects waiting on its waitpoints, and what it is told of
 * waitpoints of other objects its jobs wait on (waits/remote-waits.ts, waits/waitpoint-notices.ts):
 * the bodies of lane.ts's methods.
 */
import { ok, type Result } from "../../shared/errors.js";
import { RegistrationToken } from "../deps/notices.js";
import { parse } from "../input.js";
import { Hop } from "./dependencies.js";
import type { RemoteWaits } from "../waits/remote-waits.js";
import { WaitpointNotices, WaitpointRegistrations, type WaitpointNoticeAnswer, type WaitpointRegistration, type WaitpointRegistrationAnswer } from "../waits/waitpoint-notices.js";

export interface WaitpointWaiterParts {
  readonly remoteWaits: RemoteWaits;
}

export class WaitpointWaiterRpc {
  constructor(private readonly parts: WaitpointWaiterParts) {}

  /** On a sharded lane, a waitpoint may live on another shard: the registration goes there. */
  async registerWaitpointWaiters(input: unknown, hop: unknown = 0, token?: unknown): Promise<Result<WaitpointRegistrationAnswer[]>> {
    const call = parseCall(input, hop, token);
    return call.ok ? this.parts.remoteWaits.registerInLane(call.value.registrations, call.value.hop, call.value.token) : call;
  }

  async unregisterWaitpointWaiters(input: unknown, hop: unknown = 0, token?: unknown): Promise<Result<{ removed: number }>> {
    const call = parseCall(input, hop, token);
    return call.ok ? this.parts.remoteWaits.unregisterInLane(call.value.registrations, call.value.hop, call.value.token) : call;
  }

  notifyWaitpointWaiters(input: unknown): Result<WaitpointNoticeAnswer[]> {
    const notices = parse(WaitpointNotices, input);
    return notices.ok ? ok(this.parts.remoteWaits.apply(notices.value)) : notices;
  }
}

/** A registration call's arguments: the registrations, how many shards they went through, the registering call's token (null: held for good). */
function parseCall(input: unknown, hop: unknown, token: unknown): Result<{ registrations: WaitpointRegistration[]; hop: number; token: string | null }> {
  const registrations = parse(WaitpointRegistrations, input);
  if (!registrations.ok) return registrations;
  const hops = parse(Hop, hop);
  if (!hops.ok) return hops;
  const owner = parse(RegistrationToken, token);
  return owner.ok ? ok({ registrations: registrations.value, hop: hops.value, token: owner.value ?? null }) : owner;
}
