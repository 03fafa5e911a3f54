/**
 * Dependency registrations among a sharded lane's shards (docs/concepts.md "Sharded lanes"): a
 * registration names a job of the lane by id, wherever it lives. The object asked first registers the
 * jobs it holds; another goes to its id's own shard (`hop` 1), which holds it or knows the shard it is
 * reserved for (`hop` 2, which only looks at itself). The receiving object's own shard count decides,
 * never a cached one: a dependent's lane reaches another lane through that lane's shard 0, and its own
 * lane's registrations start in its own object. A lane of one shard registers where it is asked.
 */
import { describeError } from "../shared/describe-error.js";
import { fail, ok, type Result } from "../shared/errors.js";
import { shardObjectName, shardOf } from "../shared/shards.js";

/** What a hop calls on another shard of the lane (the lane's `registerDependents` and `unregisterDependents`). */
export interface RegistrationPeer<A> {
  registerDependents(registrations: { id: string }[], hop: number, token?: string): Promise<Result<A[]>>;
  unregisterDependents(registrations: { id: string }[], hop: number, token?: string): Promise<Result<{ removed: number }>>;
}

/** The object a registration reaches, as it knows itself, and its own side of a registration (its rows). */
export interface RegisteringShard<R extends { id: string }, A> {
  /** The lane's name. */
  readonly lane: string;
  /** This object's shard of its lane, and its lane's count as this object holds it. */
  readonly index: number;
  count(): number;
  /** Whether a job of `id` is in this object. */
  holds(id: string): boolean;
  /** The shard an id of this object's own is reserved for (null: none). */
  reservedFor(id: string): number | null;
  /** Registers here: an answer per registration, in order. */
  register(registrations: readonly R[]): A[];
  /** Withdraws here: how many rows went. */
  unregister(registrations: readonly R[]): number;
  /** Another object of the lane, by its name. */
  peer(name: string): RegistrationPeer<A>;
}

/**
 * Registers with jobs of this lane wherever they live among its shards: answers in order. A refusal
 * withdraws what this call registered here. `token`: the registering enqueue's (forwarded as it came).
 */
export async function registerAmongShards<R extends { id: string }, A>(here: RegisteringShard<R, A>, registrations: readonly R[], hop: number, token: string | null): Promise<Result<A[]>> {
  if (here.count() === 1) return ok(here.register(registrations));
  const { mine, away } = split(here, registrations, hop);
  const answers: A[] = new Array(registrations.length);
  const local = mine.map((i) => registrations[i]!);
  if (local.length > 0) here.register(local).forEach((answer, k) => (answers[mine[k]!] = answer));
  const forwarded = await Promise.all([...away].map(async ([name, at]) => ({ at, answer: await here.peer(name).registerDependents(at.map((i) => registrations[i]!), hop + 1, token ?? undefined) })));
  for (const { at, answer } of forwarded) {
    if (!answer.ok) {
      here.unregister(local);
      return answer;
    }
    answer.value.forEach((a, k) => (answers[at[k]!] = a));
  }
  return ok(answers);
}

/**
 * Withdraws registrations with jobs of this lane, routed among its shards as `registerAmongShards`
 * routed them. A shard that refused or could not be reached makes the whole answer its failure (what
 * the others withdrew stays withdrawn): a caller that must see every registration gone (a durable
 * withdrawal) sends it all again, and a withdrawal applied twice changes nothing more.
 */
export async function unregisterAmongShards<R extends { id: string }, A>(here: RegisteringShard<R, A>, registrations: readonly R[], hop: number, token: string | null): Promise<Result<{ removed: number }>> {
  if (here.count() === 1) return ok({ removed: here.unregister(registrations) });
  const { mine, away } = split(here, registrations, hop);
  let removed = here.unregister(mine.map((i) => registrations[i]!));
  const forwarded = await Promise.all(
    [...away].map(([name, at]) =>
      here
        .peer(name)
        .unregisterDependents(at.map((i) => registrations[i]!), hop + 1, token ?? undefined)
        .catch((error: unknown) => fail("lane_unavailable", `shard ${name} could not be reached: ${describeError(error)}`)),
    ),
  );
  for (const answer of forwarded) {
    if (!answer.ok) return answer;
    removed += answer.value.removed;
  }
  return ok({ removed });
}

/** Which registrations (by index) this object takes, and which go to which other shard's object. */
function split<R extends { id: string }, A>(here: RegisteringShard<R, A>, registrations: readonly R[], hop: number): { mine: number[]; away: Map<string, number[]> } {
  const shards = here.count();
  const mine: number[] = [];
  const away = new Map<string, number[]>();
  registrations.forEach((r, i) => {
    const home = shardOf(r.id, shards);
    const target = hop >= 2 || here.holds(r.id) ? here.index : home !== here.index ? home : (here.reservedFor(r.id) ?? here.index);
    if (target === here.index) return mine.push(i);
    const name = shardObjectName(here.lane, target);
    const list = away.get(name);
    if (list) list.push(i);
    else away.set(name, [i]);
  });
  return { mine, away };
}
