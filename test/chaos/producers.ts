/**
 * Producers: each enqueues its share of the jobs across the lanes, in batches, one by one and in
 * bursts of single enqueues at once (which the front worker groups into one commit), resends
 * some ids as duplicates (the same spec: 200 duplicate) and some as conflicts (another payload: 409,
 * nothing changes). An enqueue cut off by a kill is resent unchanged until it is answered.
 */
import { keyOf, PULL_KIND, type Ledger, type Planned } from "./ledger.js";
import { sleep, type Prng } from "./prng.js";
import type { ChaosRuntime } from "./runtime.js";

export interface ProducerOptions {
  index: number;
  jobs: number;
  lanes: readonly string[];
  /** About how long to spread the jobs over. */
  spreadMs: number;
}

/** One job's enqueue request: a mix of in-process kinds (demo.*) and pull jobs (some with steps), some delayed or serial. */
function planJob(rng: Prng, lane: string, id: string): Planned {
  const roll = rng.next();
  const body: Planned["body"] = { id, kind: PULL_KIND, payload: null };
  if (roll < 0.1) {
    body.kind = "demo.steps";
    const steps = rng.int(1, 6);
    body.payload = { steps, stepMs: rng.int(0, 80), ...(rng.chance(0.3) ? { failAt: rng.int(1, steps) } : {}) };
    body.backoff = { baseMs: 20, maxMs: 200 };
  } else if (roll < 0.25) {
    body.kind = "demo.echo";
    body.payload = { id, text: rng.pick(["plain", "ünïcødé ✓", "'; DROP TABLE jobs; --", "🚂".repeat(3)]), n: rng.int(0, 1e6) };
  } else if (roll < 0.5) {
    body.kind = "demo.sleep";
    body.payload = { ms: rng.int(1, 60) };
  } else if (roll < 0.65) {
    body.kind = "demo.fail";
    body.payload = { failTimes: rng.int(0, 3) };
    body.maxAttempts = rng.int(1, 4);
    body.backoff = { baseMs: 20, maxMs: 200 };
  } else {
    // A third of them in steps (each a request more for a consumer: the drain must still end in time).
    body.payload = { id, n: rng.int(0, 1e6), steps: rng.chance(0.35) ? rng.int(1, 3) : 0 };
    body.maxAttempts = rng.int(2, 6);
    body.backoff = { baseMs: 20, maxMs: 300 };
  }
  if (rng.chance(0.15)) body.queue = `q${rng.int(0, 4)}`;
  if (rng.chance(0.2)) body.priority = rng.int(-5, 5);
  if (rng.chance(0.1)) body.delayMs = rng.int(100, 4000);
  return { lane, id, body };
}

export async function produce(runtime: ChaosRuntime, ledger: Ledger, rng: Prng, options: ProducerOptions): Promise<void> {
  const { index, lanes } = options;
  const sent: Planned[] = [];
  let made = 0;
  const rounds: number[] = [];
  while (made < options.jobs) {
    const size = rng.chance(0.5) ? 1 : Math.min(options.jobs - made, rng.int(2, 60));
    rounds.push(size);
    made += size;
  }
  const pause = options.spreadMs / rounds.length;
  let n = 0;
  for (const size of rounds) {
    const lane = rng.pick(lanes);
    const items: Planned[] = [];
    for (let i = 0; i < size; i++) {
      const job = planJob(rng, lane, `p${index}-${n++}`);
      ledger.plan(job);
      items.push(job);
    }
    // Duplicates: an id this producer already had acknowledged in this lane, sent again unchanged.
    const earlier = sent.filter((j) => j.lane === lane);
    if (earlier.length > 0 && rng.chance(0.3)) items.splice(rng.int(0, items.length), 0, rng.pick(earlier));
    if (size > 1 && rng.chance(0.1)) items.push(items[0]!);
    if (items.length === 1) await enqueueOne(runtime, ledger, items[0]!);
    else if (rng.chance(0.4)) {
      // A burst of single enqueues at once: the front worker groups them (group commit). One per id:
      // two at once of one id could be answered in either order.
      const unique = [...new Map(items.map((j) => [j.id, j])).values()];
      await Promise.all(unique.map((job) => enqueueOne(runtime, ledger, job)));
    } else await enqueueBatch(runtime, ledger, lane, items);
    sent.push(...items);
    if (earlier.length > 0 && rng.chance(0.05)) await conflict(runtime, ledger, rng.pick(earlier));
    await sleep(rng.int(0, Math.round(2 * pause)));
  }
}

/** Whether an enqueue answered `duplicate` may be: a resend, a repeat within the request, or a retry. */
function expectDuplicate(ledger: Ledger, key: string, repeatedInRequest: boolean): boolean {
  return ledger.acked.has(key) || ledger.unanswered.has(key) || repeatedInRequest;
}

async function enqueueOne(runtime: ChaosRuntime, ledger: Ledger, job: Planned): Promise<void> {
  const key = keyOf(job.lane, job.id);
  for (;;) {
    const answer = await runtime.request("POST", `/v1/lanes/${job.lane}/jobs`, job.body);
    if (answer.status === 0) {
      ledger.unanswered.add(key);
      continue;
    }
    if (answer.status === 201 || answer.status === 200) {
      const status = answer.body?.status;
      if (status === "duplicate") ledger.tally.duplicates++;
      if ((answer.status === 201) !== (status === "queued")) ledger.violation(`${key}: enqueue answered ${answer.status} ${status}`);
      if (status === "duplicate" && !expectDuplicate(ledger, key, false)) ledger.violation(`${key}: a first enqueue answered duplicate`);
      if (status === "queued" && ledger.acked.has(key)) ledger.violation(`${key}: enqueued twice`);
      ledger.acked.add(key);
      return;
    }
    ledger.violation(`${key}: enqueue answered ${answer.status} ${JSON.stringify(answer.body).slice(0, 200)}`);
    return;
  }
}

async function enqueueBatch(runtime: ChaosRuntime, ledger: Ledger, lane: string, items: Planned[]): Promise<void> {
  for (;;) {
    const answer = await runtime.request("POST", `/v1/lanes/${lane}/jobs/batch`, { jobs: items.map((j) => j.body) });
    if (answer.status === 0) {
      for (const job of items) ledger.unanswered.add(keyOf(lane, job.id));
      continue;
    }
    if (answer.status !== 200) {
      ledger.violation(`batch in ${lane}: answered ${answer.status} ${JSON.stringify(answer.body).slice(0, 200)}`);
      return;
    }
    const results = answer.body.results as { id: string; status: string }[];
    if (results.length !== items.length) ledger.violation(`batch in ${lane}: ${results.length} results for ${items.length} jobs`);
    const seen = new Set<string>();
    for (const [i, result] of results.entries()) {
      const key = keyOf(lane, result.id);
      if (result.id !== items[i]?.id) ledger.violation(`batch in ${lane}: result ${i} is ${result.id}, not ${items[i]?.id}`);
      if (result.status === "duplicate") {
        ledger.tally.duplicates++;
        if (!expectDuplicate(ledger, key, seen.has(result.id))) ledger.violation(`${key}: a first enqueue answered duplicate`);
      } else if (ledger.acked.has(key) || seen.has(result.id)) ledger.violation(`${key}: enqueued twice`);
      seen.add(result.id);
    }
    for (const job of items) ledger.acked.add(keyOf(lane, job.id));
    return;
  }
}

/** The same id with another payload: 409 job_conflict, and the job keeps its first spec. */
async function conflict(runtime: ChaosRuntime, ledger: Ledger, job: Planned): Promise<void> {
  // Another payload its kind's schema still takes: the dev worker declares the demo kinds, and a payload
  // its schema refuses is a 400 invalid_payload before any id is compared (docs/api.md, Typed kinds).
  const changed = { ...job.body, payload: { ...job.body.payload, conflicting: true } };
  for (;;) {
    const answer = await runtime.request("POST", `/v1/lanes/${job.lane}/jobs`, changed);
    if (answer.status === 0) continue;
    ledger.tally.conflicts++;
    if (answer.status !== 409 || answer.body?.error?.code !== "job_conflict") {
      ledger.violation(`${keyOf(job.lane, job.id)}: a conflicting enqueue answered ${answer.status} ${JSON.stringify(answer.body).slice(0, 200)}`);
    }
    return;
  }
}
