/**
 * Prometheus scrapes in the bench, inside the bench worker: `metricsFill` makes lanes active (jobs
 * run by the no-op executor, so that every family and histogram has samples, and one job left
 * waiting for a pull consumer), and `countingObjectCalls` wraps the Worker's Durable Object
 * namespaces so that the bench counts every call a metrics request makes to any object
 * (`metricsCalls` answers the count). bench/metrics-run.ts drives the scrapes from Node.
 */
import { unwrap } from "../src/shared/errors.js";
import { createApp } from "../src/worker/app.js";
import { NOOP_KIND, PULL_KIND } from "./lanes.js";
import type { BenchEnv } from "./workloads.js";
import { int, type Params } from "./workload-helpers.js";


/** Calls to Durable Objects made by the metrics requests the bench worker has served. */
const counted = { requests: 0, calls: 0 };

/** `env` with each Durable Object namespace's stubs counting the calls made on them (for one request). */
export function countingObjectCalls<E extends object>(env: E): E {
  counted.requests++;
  const out: Record<string, unknown> = { ...(env as Record<string, unknown>) };
  for (const [key, binding] of Object.entries(env)) {
    if (!binding || typeof (binding as { getByName?: unknown }).getByName !== "function") continue;
    const namespace = binding as DurableObjectNamespace;
    out[key] = new Proxy(namespace, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target);
        if (prop !== "getByName" && prop !== "get") return typeof value === "function" ? value.bind(target) : value;
        return (...args: unknown[]) => {
          const stub = Reflect.apply(value as (...a: unknown[]) => object, target, args) as object;
          return new Proxy(stub, {
            get(s, method) {
              const member = Reflect.get(s, method, s);
              if (typeof member !== "function" || method === "then") return member;
              return (...callArgs: unknown[]) => {
                counted.calls++;
                // Called as a method of the stub: an RPC method's own members (`apply` too) are remote calls.
                return (s as Record<PropertyKey, (...a: unknown[]) => unknown>)[method]!(...callArgs);
              };
            },
          });
        };
      },
    });
  }
  return out as E;
}

export const metricsWorkloads: Record<string, (env: BenchEnv, params: Params) => Promise<object>> = {
  /**
   * Lanes `metrics-<run>-<i>` for i < `lanes`, each given `jobs` no-op jobs (run at once by the lane's
   * executor) and one job of a kind no executor runs (it waits: a queued count and an oldest due age),
   * `concurrency` lanes at a time. Answers how long it took.
   */
  async metricsFill(env, params) {
    const lanes = int(params, "lanes", 1000);
    const jobs = int(params, "jobs", 5);
    const concurrency = int(params, "concurrency", 32);
    const t0 = performance.now();
    let next = 0;
    const worker = async () => {
      while (next < lanes) {
        const name = `metrics-${String(params.run)}-${next++}`;
        const batch = [...Array.from({ length: jobs }, (_, i) => ({ kind: NOOP_KIND, payload: { i } })), { kind: PULL_KIND, payload: {} }];
        unwrap(await env.LANE.getByName(name).enqueueBatch({ jobs: batch }));
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, lanes) }, worker));
    return { lanes, jobsPerLane: jobs + 1, ms: performance.now() - t0 };
  },

  /**
   * `n` scrapes inside the worker, each timed through the real app (auth, the route, the registry's
   * call, the text read whole: what a scrape costs the Worker, without wrangler dev's HTTP proxy in
   * front), and `n` of the registry's call alone. The clock moves across I/O only, so each timing
   * ends with a one-row call (fenced: the text is read by then), which it includes.
   */
  async metricsInWorker(env, params) {
    const n = int(params, "n", 10);
    const registry = env.REGISTRY.getByName("registry");
    const token = String((env as unknown as { API_TOKEN?: string }).API_TOKEN ?? "").split(",")[0]!;
    const app = createApp();
    const ms = (times: number[]) => {
      const sorted = [...times].sort((a, b) => a - b);
      return { p50: sorted[Math.floor(sorted.length / 2)], p99: sorted[Math.min(sorted.length - 1, Math.ceil(0.99 * sorted.length) - 1)], max: sorted.at(-1), all: times };
    };
    const app_: number[] = [];
    const registryOnly: number[] = [];
    let chars = 0;
    for (let i = 0; i < n; i++) {
      let t0 = Date.now();
      const response = await app.fetch(new Request("http://bench/v1/metrics", { headers: { authorization: `Bearer ${token}` } }), env as unknown as Env);
      const text = await response.text();
      if (response.status !== 200) throw new Error(`GET /v1/metrics in the worker: ${response.status} ${text.slice(0, 200)}`);
      await registry.served();
      app_.push(Date.now() - t0);
      chars = text.length;
      t0 = Date.now();
      await registry.metrics(Date.now(), null);
      await registry.served();
      registryOnly.push(Date.now() - t0);
    }
    return { n, chars, app: ms(app_), registryCall: ms(registryOnly) };
  },

  /** The object calls counted in metrics requests so far, and the registry's own count of what it served. */
  async metricsCalls(env) {
    const served = await env.REGISTRY.getByName("registry").served();
    return { ...counted, registry: served };
  },
};
