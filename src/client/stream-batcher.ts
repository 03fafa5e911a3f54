/**
 * createWorker's `stream.write`, batched: the chunks a handler writes in one tick go to the lane in
 * one fenced request (at most `MAX_STREAM_CHUNKS_PER_WRITE`, and within the body limit), rather than
 * one each. Batches are sent one after another, so the chunks keep the order they were written in;
 * each write settles with its own batch's outcome (a refusal, all or none, rejects every write of it).
 */
import { MAX_BODY_BYTES, MAX_STREAM_CHUNKS_PER_WRITE } from "../shared/defaults.js";
import type { Json } from "../shared/job.js";

/** Room left in a body for its token and its envelope. */
const BODY_HEADROOM = 4 * 1024;

interface Pending {
  chunk: Json;
  bytes: number;
  resolve(): void;
  reject(error: unknown): void;
}

export class StreamBatcher {
  private waiting: Pending[] = [];
  private scheduled = false;
  /** The batch being sent: the next waits for it. */
  private sending: Promise<void> = Promise.resolve();

  private readonly send: (chunks: Json[]) => Promise<unknown>;

  // No parameter property: Node runs the client's sources with type stripping only.
  constructor(send: (chunks: Json[]) => Promise<unknown>) {
    this.send = send;
  }

  /** Writes `chunk` (its JSON `bytes` long, already within a chunk's limit) with the others of this tick. */
  write(chunk: Json, bytes: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.waiting.push({ chunk, bytes, resolve, reject });
      if (this.scheduled) return;
      this.scheduled = true;
      queueMicrotask(() => {
        this.scheduled = false;
        const tick = this.waiting;
        this.waiting = [];
        for (const batch of batches(tick)) this.sending = this.sending.then(() => this.flush(batch));
      });
    });
  }

  private async flush(batch: Pending[]): Promise<void> {
    try {
      await this.send(batch.map((p) => p.chunk));
      for (const p of batch) p.resolve();
    } catch (error) {
      for (const p of batch) p.reject(error);
    }
  }
}

/** A tick's writes cut into requests: at most 100 chunks each, their JSON within the body limit. */
function batches(tick: Pending[]): Pending[][] {
  const out: Pending[][] = [];
  let current: Pending[] = [];
  let bytes = 0;
  for (const p of tick) {
    if (current.length > 0 && (current.length === MAX_STREAM_CHUNKS_PER_WRITE || bytes + p.bytes + 1 > MAX_BODY_BYTES - BODY_HEADROOM)) {
      out.push(current);
      current = [];
      bytes = 0;
    }
    current.push(p);
    bytes += p.bytes + 1;
  }
  if (current.length > 0) out.push(current);
  return out;
}
