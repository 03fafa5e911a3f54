/**
 * The lane's side of the cron's check of lost alarms (docs/api.md "Schedules", docs/concepts.md "The
 * wake terms"). Alarms can be lost on deploys; the front worker's cron asks the registry which lanes
 * to check, and each checks its own wake (`Lane.checkWake`, worker/alarm-check.ts). The registry
 * learns which lanes need it without asking every lane: eager up, lazy down. A lane whose computed
 * wake is set (pending work or a schedule) while the registry does not watch it tells the registry
 * once, and remembers that in its own row; only the check, finding the lane idle, clears it. So a lane
 * calls the registry at most once per check (a minute), however busy it is, and never on an enqueue
 * that finds it watched.
 */
import { describeError } from "../../shared/describe-error.js";
import { log } from "../../shared/log.js";
import type { RegistryPeer } from "../env.js";
import { SET_WATCHED_SQL, WATCHED_SQL } from "./wake-statements.js";

/** What `checkWake` answers the cron's check. */
export interface WakeCheck {
  /** The computed wake (null: the lane has nothing the alarm must do). */
  wakeAt: number | null;
  /** The alarm as the platform had it before the check (null: none). */
  alarmWas: number | null;
  /** The alarm was missing or later than the wake, and was set again. */
  rearmed: boolean;
  /** Whether the registry should go on watching the lane (false: idle, it may stop). */
  watch: boolean;
}

export interface AlarmWatchHost {
  lane: string;
  /** The registry, when the Worker binds one. */
  registry(): RegistryPeer | undefined;
  waitUntil(promise: Promise<unknown>): void;
}

/** Whether the registry watches this lane for the cron's check, told once when work comes. */
export class AlarmWatch {
  private readonly sql: SqlStorage;
  /** Whether the registry watches this lane, as the lane's row says (undefined: read it). */
  private watched: boolean | undefined = undefined;
  /** The registry call under way, if any: at most one at a time. */
  private telling: Promise<void> | null = null;

  constructor(
    storage: DurableObjectStorage,
    private readonly host: AlarmWatchHost,
  ) {
    this.sql = storage.sql;
  }

  /** After every computation of the wake: a lane with work that the registry does not watch tells it. */
  noteWake(wake: number | null): void {
    if (wake === null || this.telling || this.isWatched()) return;
    const registry = this.host.registry();
    if (!registry) return;
    const told = registry
      .watch(this.host.lane)
      .then(() => this.write(true))
      .catch((error: unknown) => log({ event: "lane.watch_failed", lane: this.host.lane, message: describeError(error) }))
      .finally(() => (this.telling = null));
    this.telling = told;
    this.host.waitUntil(told);
  }

  /** Resolves once no registry call is under way (for tests, and a lane that wants to know). */
  async settled(): Promise<void> {
    await this.telling;
  }

  /** The check found the lane idle: the registry stops watching it, and the next work tells the registry again. */
  idle(): void {
    if (this.isWatched()) this.write(false);
  }

  private isWatched(): boolean {
    this.watched ??= this.sql.exec<{ watched: number }>(WATCHED_SQL).one().watched === 1;
    return this.watched;
  }

  private write(watched: boolean): void {
    this.sql.exec(SET_WATCHED_SQL, watched ? 1 : 0);
    this.watched = watched;
  }
}
