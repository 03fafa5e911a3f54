/**
 * Coalesces a worker's acks (complete, fail, release, progress) into batch-ack requests: the acks of
 * one turn go together, at most 100 and under 1 MiB per request, with a bounded number of requests in
 * flight; acks that arrive meanwhile wait and go together next. Each ack's promise settles with its
 * own answer. A request that fails for a reason other than an API refusal is sent again a few times:
 * every op is safe to repeat with the same token (docs/api.md), and a later repeat of a release or of
 * a progress that already landed answers a refusal that the worker treats as the end of the attempt.
 */
import type { AckAnswer } from "../shared/answers.js";
import { MAX_ACKS, WORKER_ACK_BODY_BYTES, WORKER_ACK_REQUESTS, WORKER_ACK_RETRIES } from "../shared/defaults.js";
import { utf8Length } from "../shared/json.js";
import type { AckItem } from "../shared/schemas.js";
import { isTransient } from "./worker-http.js";

interface Pending {
  json: string;
  bytes: number;
  resolve(answer: AckAnswer): void;
  reject(error: unknown): void;
}

export interface AckBatcherHost {
  /** Sends one batch (the JSON text of `{"acks": […]}`); answers one result per item, in order. */
  send(body: string): Promise<{ results: AckAnswer[] }>;
  /** A request failed; `willRetry`: it goes again. */
  failed(error: unknown, willRetry: boolean): void;
  /** Waits `ms` before a request goes again. */
  sleep(ms: number): Promise<void>;
}

export class AckBatcher {
  private queue: Pending[] = [];
  private inFlight = 0;
  private scheduled = false;
  private idle: (() => void)[] = [];

  private readonly host: AckBatcherHost;

  // No parameter properties here: Node runs the client straight from TypeScript by stripping types.
  constructor(host: AckBatcherHost) {
    this.host = host;
  }

  /** Queues one ack; settles with its answer, or rejects when its request failed for good. */
  push(item: AckItem): Promise<AckAnswer> {
    const json = JSON.stringify(item);
    return new Promise((resolve, reject) => {
      this.queue.push({ json, bytes: utf8Length(json) + 1, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        // The acks of this turn (a claim's worth of handlers finishing together) go in one request.
        setTimeout(() => {
          this.scheduled = false;
          this.pump();
        }, 0);
      }
    });
  }

  /** Resolves once every queued ack has been answered (or given up). */
  drained(): Promise<void> {
    if (this.queue.length === 0 && this.inFlight === 0 && !this.scheduled) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  private pump(): void {
    while (this.queue.length > 0 && this.inFlight < WORKER_ACK_REQUESTS) {
      const batch: Pending[] = [];
      let bytes = 10;
      while (batch.length < MAX_ACKS && this.queue.length > 0) {
        const size = this.queue[0]!.bytes;
        if (batch.length > 0 && bytes + size > WORKER_ACK_BODY_BYTES) break;
        bytes += size;
        batch.push(this.queue.shift()!);
      }
      this.inFlight++;
      void this.deliver(batch).finally(() => {
        this.inFlight--;
        this.pump();
        if (this.queue.length === 0 && this.inFlight === 0 && !this.scheduled) for (const resolve of this.idle.splice(0)) resolve();
      });
    }
  }

  private async deliver(batch: Pending[]): Promise<void> {
    const body = `{"acks":[${batch.map((p) => p.json).join(",")}]}`;
    for (let attempt = 0; ; attempt++) {
      try {
        const { results } = await this.host.send(body);
        batch.forEach((p, i) => p.resolve(results[i]!));
        return;
      } catch (error) {
        const again = isTransient(error) && attempt < WORKER_ACK_RETRIES;
        this.host.failed(error, again);
        if (!again) {
          for (const p of batch) p.reject(error);
          return;
        }
        await this.host.sleep(100 * 4 ** attempt);
      }
    }
  }
}
