/**
 * The RPC methods' bodies of dependencies between lanes (dependencies.ts, notices.ts): lane.ts delegates here.
 */
import { fail, ok, type Result } from "../../shared/errors.js";
import { type NoticeAnswer, type RegistrationAnswer, Notices, Registrations } from "./notices.js";
import { parse, parseId } from "../input.js";
import type { LaneWiring } from "../wiring.js";

export class DependencyCalls {
  constructor(private readonly rooms: LaneWiring) {}

  dependents(id: unknown): Result<{ dependents: { lane: string; id: string }[] }> {
    const name = parseId(id);
    if (!name.ok) return name;
    const listed = this.rooms.dependencies.dependents(name.value);
    return listed.ok ? ok({ dependents: listed.value }) : listed;
  }

  registerDependents(input: unknown): Result<RegistrationAnswer[]> {
    const registrations = parse(Registrations, input);
    if (!registrations.ok) return registrations;
    // A job of a sharded lane may live on another shard than this one: not carried yet, so refused
    // rather than answered missing (docs/concepts.md "Sharded lanes").
    if (this.rooms.shard.count() > 1 || this.rooms.shard.index > 0) return fail("invalid_request", `dependencies on jobs of a sharded lane (${this.rooms.store.lane}) are not supported yet`, [{ path: ["dependsOn"], message: "a sharded lane" }]);
    return ok(this.rooms.dependencies.register(registrations.value));
  }

  unregisterDependents(input: unknown): Result<{ removed: number }> {
    const registrations = parse(Registrations, input);
    return registrations.ok ? ok({ removed: this.rooms.dependencies.unregister(registrations.value) }) : registrations;
  }

  notifyDependencies(input: unknown): Result<NoticeAnswer[]> {
    const notices = parse(Notices, input);
    if (!notices.ok) return notices;
    const answers = this.rooms.dependencies.apply(notices.value);
    this.rooms.wake.afterChange();
    return ok(answers);
  }
}
