/**
 * What the chaos run's clients saw: every acknowledged enqueue, every lease token they were handed
 * (with its generation, expiry and when a renewal superseded it), every write they sent, and every
 * violation noticed on the spot. The final verification reads the lanes against it.
 */
export const PULL_KIND = "chaos.pull";

export type Key = string;
export const keyOf = (lane: string, id: string): Key => `${lane}/${id}`;

/** The enqueue request of one planned job, exactly as sent (a duplicate resends it unchanged). */
export interface Planned {
  lane: string;
  id: string;
  body: { id: string; kind: string; payload: any; [field: string]: unknown };
}

export interface TokenInfo {
  key: Key;
  generation: number;
  /** Server time the lease ran out, as the claim or renew answer said. */
  expiresAt: number;
  /** Server time of the renewal that replaced this token (null: never replaced). */
  supersededAt: number | null;
}

/** The result a pull consumer records: which attempt wrote it. */
export interface PullResult {
  consumer: string;
  generation: number;
  fingerprint: string;
}

/** A prefix of the token, enough to tell attempts apart without writing tokens into results. */
export const fingerprint = (token: string) => token.slice(0, 12);

export class Ledger {
  readonly planned = new Map<Key, Planned>();
  readonly acked = new Set<Key>();
  /** Jobs whose enqueue went out at least once without an answer (a later answer may say duplicate). */
  readonly unanswered = new Set<Key>();
  readonly tokens = new Map<string, TokenInfo>();
  readonly byFingerprint = new Map<string, string>();
  /** Generations each job was claimed at, as consumers saw them. */
  readonly claimGenerations = new Map<Key, Set<number>>();
  readonly failSent = new Set<Key>();
  readonly cancelSent = new Set<Key>();
  /** First sight of each settled job: it must never change (no requeue in this run). */
  readonly firstSettled = new Map<Key, string>();
  /** Checkpoints known to have landed, per job and step: when (client time), by which generation, with what value. */
  readonly landed = new Map<Key, Map<string, { at: number; generation: number; value: unknown }>>();
  readonly violations: string[] = [];
  readonly tally = {
    claims: 0, renews: 0, completes: 0, fails: 0, releases: 0, stalls: 0, cancels: 0, duplicates: 0, conflicts: 0,
    stepsRun: 0, stepsSkipped: 0, stepsSeen: 0,
  };

  /** How the writes of lapsed or replaced tokens were refused, by code (a success is a violation, noted elsewhere). */
  readonly staleAnswers: Record<string, number> = {};

  refused(answer: { status: number; body: any }): void {
    const code = answer.status === 0 ? "no answer" : (answer.body?.error?.code ?? String(answer.status));
    this.staleAnswers[code] = (this.staleAnswers[code] ?? 0) + 1;
  }

  violation(message: string): void {
    if (this.violations.length < 200) this.violations.push(message);
  }

  plan(job: Planned): void {
    this.planned.set(keyOf(job.lane, job.id), job);
  }

  /** A claim answer: a generation of a job must be handed out once, and only ever grow. */
  claimed(lane: string, job: { id: string; lease: { token: string; generation: number; expiresAt: number } }): void {
    const key = keyOf(lane, job.id);
    const seen = this.claimGenerations.get(key) ?? new Set<number>();
    const highest = Math.max(0, ...seen);
    if (job.lease.generation <= highest) {
      this.violation(`${key}: claimed at generation ${job.lease.generation} after generation ${highest} was handed out`);
    }
    seen.add(job.lease.generation);
    this.claimGenerations.set(key, seen);
    this.remember(key, job.lease);
    this.tally.claims++;
  }

  renewed(key: Key, old: string, lease: { token: string; generation: number; expiresAt: number }, leaseMs: number): void {
    const info = this.tokens.get(old);
    if (info) info.supersededAt = lease.expiresAt - leaseMs;
    if (info && info.generation !== lease.generation) this.violation(`${key}: renew changed the generation`);
    this.remember(key, lease);
    this.tally.renews++;
  }

  private remember(key: Key, lease: { token: string; generation: number; expiresAt: number }): void {
    this.tokens.set(lease.token, { key, generation: lease.generation, expiresAt: lease.expiresAt, supersededAt: null });
    this.byFingerprint.set(fingerprint(lease.token), lease.token);
  }

  /**
   * Whether a job write by `token` at server time `at` was made while the token held the lease:
   * before its expiry and no later than the renewal that replaced it.
   */
  heldAt(token: string, at: number): boolean {
    const info = this.tokens.get(token);
    if (!info) return false;
    return at < info.expiresAt && (info.supersededAt === null || at <= info.supersededAt);
  }
}
