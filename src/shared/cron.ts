/**
 * Cron expressions, parsed and stepped by croner (README: why croner): 5 fields, or 6 with a leading
 * seconds field, in an IANA time zone, daylight saving as Vixie cron has it. Never a timer: a `Cron`
 * built without a callback only computes instants.
 */
import { describeError } from "./describe-error.js";
import { Cron } from "croner";
import type { Issue } from "./errors.js";

const MODE = { mode: "5-or-6-parts" } as const;

/** Parsed expressions by zone and pattern: the alarm steps the same few again and again. */
const parsed = new Map<string, Cron>();
const MAX_PARSED = 1_000;

function cron(expression: string, timezone: string): Cron {
  const key = `${timezone} ${expression}`;
  let found = parsed.get(key);
  if (!found) {
    if (parsed.size >= MAX_PARSED) parsed.clear();
    found = new Cron(expression, { ...MODE, timezone });
    parsed.set(key, found);
  }
  return found;
}

/**
 * Why an expression cannot be a schedule, as request issues (empty: it can). croner accepts more than
 * cron (nicknames, ISO dates): only 5 or 6 fields are a cron expression here. A bad zone throws only
 * when an instant is computed, and an impossible date (`0 0 31 2 *`) has no next instant at all.
 */
export function cronIssues(expression: string, timezone: string): Issue[] {
  const fields = expression.trim().split(/\s+/).length;
  if (fields !== 5 && fields !== 6) {
    return [{ path: ["cron"], message: "must be 5 fields (minute hour day-of-month month day-of-week), optionally after a seconds field" }];
  }
  try {
    new Cron(expression, MODE);
  } catch (error) {
    return [{ path: ["cron"], message: `not a cron expression: ${message(error)}` }];
  }
  let next: Date | null;
  try {
    next = new Cron(expression, { ...MODE, timezone }).nextRun();
  } catch (error) {
    return [{ path: ["timezone"], message: `not an IANA time zone: ${message(error)}` }];
  }
  return next === null ? [{ path: ["cron"], message: "matches no instant (an impossible date?)" }] : [];
}

/** The first instant of the expression strictly after `afterMs` (null: none). */
export function nextCronFire(expression: string, timezone: string, afterMs: number): number | null {
  return cron(expression, timezone).nextRun(new Date(afterMs))?.getTime() ?? null;
}

/** The last instant of the expression at or before `atMs` (null: none). */
export function latestCronFire(expression: string, timezone: string, atMs: number): number | null {
  // previousRuns answers instants strictly before its reference; a fire lands on a whole second.
  return cron(expression, timezone).previousRuns(1, new Date(atMs + 1))[0]?.getTime() ?? null;
}

const message = (error: unknown) => describeError(error);
