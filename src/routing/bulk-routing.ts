/**
 * A lane's bulk actions across its shards (docs/api.md "Bulk actions"): one runs on every shard under
 * one id, which the router makes (as it makes a waitpoint's), and its answers are summed (`sumBulks`:
 * running while any shard's runs). A start first asks every shard whether one runs (409 `bulk_running`
 * with that one, summed); then shard 0 takes it first, so that of two starts at once one alone goes
 * on, and the other shards after it. A shard given the id again answers the one it has (a retry).
 */
import { sumBulks, type Bulk } from "../shared/bulk.js";
import { fail, ok, type Result } from "../shared/errors.js";
import type { Answer } from "./peer.js";

/** What the bulk actions' routing calls on a lane's objects. */
export interface BulkPeer {
  startBulk(request: object, id?: string): Answer<Bulk>;
  getBulk(id: string): Answer<Bulk>;
  runningBulk(): Answer<Bulk | null>;
}

/** The router's count cache and stubs, as the bulk actions' routing uses them. */
export interface BulkRouter<P extends BulkPeer> {
  shards(lane: string, fresh?: boolean): Promise<Result<number>>;
  stub(lane: string, index?: number): P;
}

/** Starts a bulk action on every shard of the lane, under one id. */
export async function startBulk<P extends BulkPeer>(router: BulkRouter<P>, lane: string, request: object): Promise<Result<Bulk>> {
  const count = await router.shards(lane, true);
  if (!count.ok) return count;
  const shards = count.value;
  if (shards === 1) return router.stub(lane, 0).startBulk(request);
  const running = await everyShard(shards, (i) => router.stub(lane, i).runningBulk());
  if (!running.ok) return running;
  const busy = running.value.find((bulk) => bulk !== null);
  if (busy) return refusedFor(router, lane, shards, busy.id);
  const id = crypto.randomUUID();
  const first = await router.stub(lane, 0).startBulk(request, id);
  if (!first.ok) return first.error.code === "bulk_running" ? refusedFor(router, lane, shards, (first.error.details as { bulk: Bulk }).bulk.id) : first;
  const rest = await everyShard(shards - 1, (i) => router.stub(lane, i + 1).startBulk(request, id));
  if (!rest.ok) return rest;
  return ok(sumBulks([first.value, ...rest.value]));
}

/** A bulk action of the lane, summed over its shards; `bulk_not_found` when shard 0 (which every start reaches first) has none. */
export async function getBulk<P extends BulkPeer>(router: BulkRouter<P>, lane: string, id: string): Promise<Result<Bulk>> {
  const count = await router.shards(lane, false);
  if (!count.ok) return count;
  if (count.value === 1) return router.stub(lane, 0).getBulk(id);
  const answers = await Promise.all(Array.from({ length: count.value }, (_, i) => router.stub(lane, i).getBulk(id)));
  if (!answers[0]!.ok) return answers[0]!;
  const found: Bulk[] = [];
  for (const answer of answers) {
    if (answer.ok) found.push(answer.value);
    else if (answer.error.code !== "bulk_not_found") return answer;
  }
  return ok(sumBulks(found));
}

/** The `bulk_running` refusal, with the running one as the whole lane has it. */
async function refusedFor<P extends BulkPeer>(router: BulkRouter<P>, lane: string, shards: number, id: string): Promise<Result<never>> {
  const answers = await Promise.all(Array.from({ length: shards }, (_, i) => router.stub(lane, i).getBulk(id)));
  const bulks = answers.flatMap((answer) => (answer.ok ? [answer.value] : []));
  const bulk = bulks.length > 0 ? sumBulks(bulks) : null;
  return fail("bulk_running", `bulk action ${id} runs in lane ${lane}; one runs at a time`, bulk ? { bulk } : undefined);
}

async function everyShard<T>(shards: number, call: (i: number) => Answer<T>): Promise<Result<T[]>> {
  const answers = await Promise.all(Array.from({ length: shards }, (_, i) => call(i)));
  const refused = answers.find((answer) => !answer.ok);
  return refused ? (refused as Result<never>) : ok(answers.map((answer) => (answer as { value: T }).value));
}
