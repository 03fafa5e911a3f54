/**
 * The RPC methods' bodies of dependencies between lanes (dependencies.ts, notices.ts): lane.ts delegates here.
 */
import { z } from "zod";
import { ok, type Result } from "../../shared/errors.js";
import { type NoticeAnswer, type RegistrationAnswer, Notices, RegistrationToken, Registrations } from "./notices.js";
import { parse, parseId } from "../input.js";
import type { LaneWiring } from "../wiring.js";

/** How many shards a registration went through already (dependencies.ts `registerInLane`). */
const Hop = z.number().int().min(0).max(2);

export class DependencyCalls {
  constructor(private readonly rooms: LaneWiring) {}

  dependents(id: unknown): Result<{ dependents: { lane: string; id: string }[] }> {
    const name = parseId(id);
    if (!name.ok) return name;
    const listed = this.rooms.dependencies.dependents(name.value);
    return listed.ok ? ok({ dependents: listed.value }) : listed;
  }

  /** On a sharded lane, a job may live on another shard: the registration goes there (dependencies.ts `registerInLane`). */
  async registerDependents(input: unknown, hop: unknown = 0, token?: unknown): Promise<Result<RegistrationAnswer[]>> {
    const registrations = parse(Registrations, input);
    if (!registrations.ok) return registrations;
    const hops = parse(Hop, hop);
    if (!hops.ok) return hops;
    const owner = parse(RegistrationToken, token);
    return owner.ok ? this.rooms.dependencies.registerInLane(registrations.value, hops.value, owner.value ?? null) : owner;
  }

  /** Withdraws what the enqueue of `token` registered (dependencies.ts `unregister`). */
  async unregisterDependents(input: unknown, hop: unknown = 0, token?: unknown): Promise<Result<{ removed: number }>> {
    const registrations = parse(Registrations, input);
    if (!registrations.ok) return registrations;
    const hops = parse(Hop, hop);
    if (!hops.ok) return hops;
    const owner = parse(RegistrationToken, token);
    return owner.ok ? this.rooms.dependencies.unregisterInLane(registrations.value, hops.value, owner.value ?? null) : owner;
  }

  notifyDependencies(input: unknown): Result<NoticeAnswer[]> {
    const notices = parse(Notices, input);
    if (!notices.ok) return notices;
    const answers = this.rooms.dependencies.apply(notices.value);
    this.rooms.wake.afterChange();
    return ok(answers);
  }
}
