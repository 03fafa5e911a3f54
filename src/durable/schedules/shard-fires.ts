/**
 * A sharded lane's schedule fires (docs/concepts.md "Sharded lanes", docs/api.md "Schedules"). The
 * schedules live on shard 0; a fire whose job belongs on another shard (by its routing key), or whose
 * id must be reserved on another shard first, goes through the routing of one enqueue
 * (routing/enqueue-routing.ts), which reaches shard 0 as the peer the lane hands it for itself
 * (rpc/self-shard.ts: answered in place, not by a call to itself) and the other shards by their stubs.
 *
 * Exactly once: the job is enqueued first (idempotent by its id `<name>@<T>`) and the schedule
 * advances only once the job's shard answered; a crash in between fires the same instant again, a
 * duplicate. A fire in flight is held (never sent twice at once); one whose shard could not take it
 * (unreachable, or refusing every call) is sent again after a backoff. Both are terms of the lane's
 * one wake. They are kept in memory only: after a restart the row, still due, fires again.
 */
import type { EnqueueAnswer } from "../../shared/answers.js";
import type { Clock } from "../../shared/clock.js";
import { describeError } from "../../shared/describe-error.js";
import type { Result } from "../../shared/errors.js";
import { log } from "../../shared/log.js";
import type { EnqueueRequest } from "../../shared/schemas.js";
import { routingKey, shardOf } from "../../shared/shards.js";
import { EnqueueRouting } from "../../routing/enqueue-routing.js";
import type { Answer, EnqueuePeer, PeerDirectory } from "../../routing/peer.js";
import type { ShardState } from "../shards/shard-state.js";

/** One fire: its schedule, the instant its row waited for (`due`), the instant fired (`at`), the next one, and its job. */
export type Fire = { name: string; due: number; at: number; next: number | null; request: EnqueueRequest };

/** How many fires one alarm sends to other shards at most (the rest stay due: the alarm comes back at once). */
export const ROUTED_FIRE_BATCH = 64;
/** How long a fire in flight holds off its schedule's wake term (it is re-checked then, never sent twice at once). */
export const FIRE_IN_FLIGHT_MS = 30_000;
/** A fire its shard could not take is sent again after this, doubling per try up to `FIRE_RETRY_MAX_MS`. */
export const FIRE_RETRY_BASE_MS = 1_000;
export const FIRE_RETRY_MAX_MS = 60_000;

/** Refusals that say the shard cannot take any job now (not this job's own fault): the fire is sent again later. */
const NOT_NOW = new Set(["wrong_shard", "lane_schema_too_new"]);

/** What a fire's routing calls on a shard of its lane: one enqueue's routing, and the fire's own write. */
export interface FirePeer extends EnqueuePeer {
  enqueueFire(request: object): Answer<EnqueueAnswer>;
}

/** Shard 0 itself, as its lane hands it to its fires' routing (rpc/self-shard.ts). */
export type SelfShard = FirePeer;

/** How a lane's schedules reach its other shards (lane-parts.ts). */
export interface FireRouting {
  readonly shard: ShardState;
  /** The lanes' namespace: a shard by its object name. */
  lanes(): PeerDirectory<FirePeer>;
  /** Shard 0 itself (`selfShard`). */
  self(): SelfShard;
  /** Rows or held fires changed: flush. */
  changed(): void;
}

export interface ShardFiresHost extends FireRouting {
  readonly lane: string;
  /** Records answered fires: their schedules advance (schedules.ts), `jobIds` naming the job that holds each (default: its own id). */
  advance(fires: readonly Fire[], jobIds?: readonly string[]): void;
}

export class ShardFires {
  /** Schedules whose fire is in flight, since when. */
  private readonly inFlight = new Map<string, number>();
  /** Schedules whose fire is put off: until when, after how many tries. */
  private readonly retries = new Map<string, { until: number; tries: number }>();
  private readonly sending = new Set<Promise<void>>();
  private routes: EnqueueRouting<FirePeer> | undefined;
  private ownShard: FirePeer | undefined;

  constructor(
    private readonly clock: Clock,
    private readonly host: ShardFiresHost,
  ) {}

  /** The shard count fires are routed by (shard 0 of a sharded lane), or null: every fire is written in place. */
  routedBy(): number | null {
    const { shard } = this.host;
    return shard.index === 0 && shard.count() > 1 ? shard.count() : null;
  }

  /** Whether a fire's job is shard 0's and its id needs no reservation elsewhere: then it is written in place, with its advance. */
  static inPlace(request: EnqueueRequest, shards: number): boolean {
    // A debounced fire goes through its key's reservation (the router's), wherever its key's job is.
    return request.debounce === undefined && shardOf(routingKey(request)!, shards) === 0 && shardOf(request.id!, shards) === 0;
  }

  /** The schedules whose fire is in hand at `now`: in flight, or put off until later. */
  held(now: number): string[] {
    if (this.inFlight.size === 0 && this.retries.size === 0) return [];
    const names = [...this.inFlight.keys()];
    for (const [name, retry] of this.retries) if (retry.until > now && !this.inFlight.has(name)) names.push(name);
    return names;
  }

  /** The earliest instant a held fire asks the wake for (null: none): a retry's, or a fire in flight's re-check. */
  nextAt(now: number): number | null {
    let at: number | null = null;
    const term = (t: number) => (at = at === null ? t : Math.min(at, t));
    for (const since of this.inFlight.values()) term(since + FIRE_IN_FLIGHT_MS > now ? since + FIRE_IN_FLIGHT_MS : now + FIRE_IN_FLIGHT_MS);
    for (const [name, retry] of this.retries) if (retry.until > now && !this.inFlight.has(name)) term(retry.until);
    return at;
  }

  /** Sends fires to their shards (at most `ROUTED_FIRE_BATCH`; the rest stay due); answers how many went. */
  send(fires: readonly Fire[], shards: number): number {
    const routes = this.router(shards);
    const now = this.clock.now();
    const taken = fires.slice(0, ROUTED_FIRE_BATCH);
    for (const fire of taken) {
      this.inFlight.set(fire.name, now);
      const sent: Promise<void> = this.sendOne(routes, fire).finally(() => {
        this.inFlight.delete(fire.name);
        this.sending.delete(sent);
        this.host.changed();
      });
      this.sending.add(sent);
    }
    return taken.length;
  }

  /** Resolves once no fire is in flight (the alarm waits for its fires' answers). */
  async settled(): Promise<void> {
    while (this.sending.size > 0) await Promise.allSettled([...this.sending]);
  }

  /** A schedule replaced or deleted: its put-off fire is forgotten (its next fire is its row's). */
  forget(name: string): void {
    this.retries.delete(name);
  }

  private async sendOne(routes: EnqueueRouting<FirePeer>, fire: Fire): Promise<void> {
    let answer: Result<EnqueueAnswer>;
    try {
      answer = await routes.enqueue(this.host.lane, fire.request, async (shard, _objectName, routed) => shard.enqueueFire(routed));
    } catch (error) {
      return this.putOff(fire, describeError(error));
    }
    // A refusal once the lane is resharded to one shard under the fire is no verdict on the job: it is
    // fired again, in place then.
    if (!answer.ok && (NOT_NOW.has(answer.error.code) || this.routedBy() === null)) return this.putOff(fire, `${answer.error.code}: ${answer.error.message}`);
    // Refused for the job's own sake (its id taken by a job of another spec): logged, and the schedule goes on.
    if (!answer.ok) log({ event: "schedule.fire_failed", lane: this.host.lane, schedule: fire.name, jobId: fire.request.id!, code: answer.error.code, message: answer.error.message });
    this.retries.delete(fire.name);
    // A debounced fire is held by the queued job of its key it replaced.
    this.host.advance([fire], [answer.ok ? answer.value.job.id : fire.request.id!]);
  }

  private putOff(fire: Fire, message: string): void {
    const tries = (this.retries.get(fire.name)?.tries ?? 0) + 1;
    const delayMs = Math.min(FIRE_RETRY_MAX_MS, FIRE_RETRY_BASE_MS * 2 ** Math.min(tries - 1, 20));
    this.retries.set(fire.name, { until: this.clock.now() + delayMs, tries });
    log({ event: "schedule.fire_deferred", lane: this.host.lane, schedule: fire.name, jobId: fire.request.id!, tries, retryInMs: delayMs, message });
  }

  /** The router, shard 0 answered in place, told the count this object holds (no call to read it). */
  private router(shards: number): EnqueueRouting<FirePeer> {
    this.routes ??= new EnqueueRouting<FirePeer>({
      getByName: (name) => (name === this.host.lane ? (this.ownShard ??= this.host.self()) : this.host.lanes().getByName(name)),
    });
    this.routes.remember(this.host.lane, shards);
    return this.routes;
  }
}
