/**
 * What a lane answers about dependencies between lanes (deps/dependencies.ts, deps/notices.ts): the
 * bodies of lane.ts's methods.
 */
import { z } from "zod";
import { ok, type Result } from "../../shared/errors.js";
import type { Dependencies } from "../deps/dependencies.js";
import { type NoticeAnswer, type RegistrationAnswer, Notices, RegistrationToken, Registrations } from "../deps/notices.js";
import { parse, parseId } from "../input.js";

/** How many shards a registration went through already (deps/dependencies.ts `registerInLane`). */
export const Hop = z.number().int().min(0).max(2);

/** The parts dependencies' calls reach. */
export interface DependencyParts {
  readonly dependencies: Dependencies;
}

export class DependencyRpc {
  constructor(private readonly parts: DependencyParts) {}

  dependents(id: unknown): Result<{ dependents: { lane: string; id: string }[] }> {
    const name = parseId(id);
    if (!name.ok) return name;
    const listed = this.parts.dependencies.dependents(name.value);
    return listed.ok ? ok({ dependents: listed.value }) : listed;
  }

  /** On a sharded lane, a job may live on another shard: the registration goes there (deps/dependencies.ts `registerInLane`). */
  async registerDependents(input: unknown, hop: unknown = 0, token?: unknown): Promise<Result<RegistrationAnswer[]>> {
    const registrations = parse(Registrations, input);
    if (!registrations.ok) return registrations;
    const hops = parse(Hop, hop);
    if (!hops.ok) return hops;
    const owner = parse(RegistrationToken, token);
    return owner.ok ? this.parts.dependencies.registerInLane(registrations.value, hops.value, owner.value ?? null) : owner;
  }

  /** Withdraws what the enqueue of `token` registered (deps/dependencies.ts `unregister`). */
  async unregisterDependents(input: unknown, hop: unknown = 0, token?: unknown): Promise<Result<{ removed: number }>> {
    const registrations = parse(Registrations, input);
    if (!registrations.ok) return registrations;
    const hops = parse(Hop, hop);
    if (!hops.ok) return hops;
    const owner = parse(RegistrationToken, token);
    return owner.ok ? this.parts.dependencies.unregisterInLane(registrations.value, hops.value, owner.value ?? null) : owner;
  }

  notifyDependencies(input: unknown): Result<NoticeAnswer[]> {
    const notices = parse(Notices, input);
    if (!notices.ok) return notices;
    return ok(this.parts.dependencies.apply(notices.value));
  }
}
