/** The demo executors of docs/api.md, registered by the repo's own worker (`npm run dev`). */
import type { ExecutorContext, ExecutorRegistry } from "../durable/attempts/executors.js";
import type { Json } from "../shared/job.js";
import { batchExecutor } from "../durable/lane.js";

const count = (value: unknown) => (typeof value === "number" && Number.isInteger(value) && value >= 0 ? value : 0);

/** Waits `ms`, or rejects with the signal's reason once it fires. */
function wait(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const aborted = () => reject(signal.reason instanceof Error ? signal.reason : new Error(String(signal.reason)));
    if (signal.aborted) return aborted();
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      aborted();
    }, { once: true });
  });
}

/** Waits `ms`, honouring the signal; every `progressEveryMs` (when > 0) reports `{sleptMs}` as the job's progress. */
async function sleep(payload: { ms?: unknown; progressEveryMs?: unknown } | null, { signal, progress }: ExecutorContext) {
  const ms = typeof payload?.ms === "number" && payload.ms >= 0 ? payload.ms : 0;
  const every = typeof payload?.progressEveryMs === "number" && payload.progressEveryMs > 0 ? payload.progressEveryMs : 0;
  let ticks = 0;
  // A refused report aborts the attempt: the signal then ends the wait.
  const ticker = every > 0 ? setInterval(() => void progress({ sleptMs: Math.min(++ticks * every, ms) }).catch(() => undefined), every) : undefined;
  try {
    await wait(ms, signal);
  } finally {
    clearInterval(ticker);
  }
  return { slept: ms };
}

/**
 * Runs steps `s1`…`sn` through `ctx.step`, each recording the attempt that ran it (and taking
 * `stepMs`, when given, honouring the signal). The job's first attempt (generation 1) throws right
 * after step `failAt`, when given: the next attempt resumes after it.
 */
async function steps(payload: { steps?: unknown; failAt?: unknown; stepMs?: unknown } | null, { step, attempt, job, signal }: ExecutorContext) {
  const n = count(payload?.steps);
  const failAt = payload?.failAt === undefined ? null : count(payload.failAt);
  const stepMs = count(payload?.stepMs);
  const ran: string[] = [];
  const values: Record<string, Json> = {};
  for (let i = 1; i <= n; i++) {
    const name = `s${i}`;
    values[name] = await step(name, async () => {
      ran.push(name);
      if (stepMs > 0) await wait(stepMs, signal);
      return { attempt };
    });
    if (i === failAt && job.generation === 1) throw new Error(`demo.steps: failing right after step ${name}`);
  }
  return { ran, values };
}

/** Writes the chunks `{"i": 1}` … `{"i": n}` to the job's stream (n at most 1,000), `everyMs` apart, honouring the signal. */
async function stream(payload: { chunks?: unknown; everyMs?: unknown } | null, { stream, signal }: ExecutorContext) {
  const n = Math.min(count(payload?.chunks), 1000);
  const everyMs = count(payload?.everyMs);
  for (let i = 1; i <= n; i++) {
    if (i > 1 && everyMs > 0) await wait(everyMs, signal);
    await stream.write({ i });
  }
  return { chunks: n };
}

/**
 * What `demo.throw` throws, by the name its payload gives: values that `String()` cannot be trusted
 * with (no prototype, a `toString` that throws, a symbol) and plain ones that are no `Error`.
 */
export const DEMO_THROWS = {
  "null-prototype": () => Object.create(null) as unknown,
  symbol: () => Symbol("x"),
  "bad-tostring": () => ({
    toString(): string {
      throw new Error("this value refuses to be printed");
    },
  }),
  undefined: () => undefined,
  number: () => 42,
  string: () => "plain string",
} satisfies Record<string, () => unknown>;

export type DemoThrow = keyof typeof DEMO_THROWS;

/**
 * `demo.batch`: completes each job of a batch with its size and the job's place in it; a job whose
 * payload asks (`"fail": true`) fails alone, on every attempt.
 */
const demoBatch = batchExecutor({
  size: 10,
  waitMs: 200,
  run: (jobs) =>
    jobs.map((job, index) =>
      (job.payload as { fail?: unknown } | null)?.fail === true
        ? { ok: false as const, error: "demo.batch: failing as asked" }
        : { ok: true as const, result: { batchSize: jobs.length, index } },
    ),
});

/** The executors `npm run dev` registers (docs/api.md, "Demo executors"). */
export const demoExecutors: ExecutorRegistry = {
  "demo.echo": (payload: Json) => payload,
  "demo.sleep": sleep,
  "demo.fail": (payload: { failTimes?: unknown } | null, { attempt }) => {
    const failTimes = typeof payload?.failTimes === "number" ? payload.failTimes : 0;
    if (attempt <= failTimes) throw new Error(`demo.fail: failing attempt ${attempt} of ${failTimes}`);
    return { attempts: attempt };
  },
  "demo.steps": steps,
  "demo.stream": stream,
  // Each sleep snoozes the job, giving its attempt back: after every one, the attempt is still the first.
  "demo.sleepy": async (payload: { sleeps?: unknown; ms?: unknown } | null, { sleep, attempt }) => {
    const n = count(payload?.sleeps);
    const ms = count(payload?.ms);
    for (let i = 1; i <= n; i++) await sleep(`z${i}`, ms);
    return { attempt };
  },
  "demo.deps": (_payload: Json, { dependencies }) => ({ dependencies }) as unknown as Json,
  // Waits on the waitpoint `<job id>.approval`: a timeout is an answer, not a failure.
  "demo.approval": async (payload: { timeoutMs?: unknown } | null, { waitFor }) => {
    const timeoutMs = typeof payload?.timeoutMs === "number" ? payload.timeoutMs : undefined;
    const waited = await waitFor("approval", timeoutMs === undefined ? {} : { timeoutMs });
    return waited.outcome === "completed" ? { approved: waited.result } : { timedOut: true };
  },
  "demo.batch": demoBatch,
  "demo.throw": (payload: { value?: unknown } | null) => {
    const name = typeof payload?.value === "string" && Object.hasOwn(DEMO_THROWS, payload.value) ? (payload.value as DemoThrow) : "undefined";
    throw DEMO_THROWS[name]();
  },
};
