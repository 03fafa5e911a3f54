/**
 * The runtime under chaos: one `wrangler dev` at a time over one persisted state directory, killed
 * (SIGKILL of its process group) and restarted on demand. Requests go to whichever incarnation is up;
 * a request cut off by a kill answers status 0, and the caller decides whether it may be retried.
 */
import { LocalRuntime } from "../../scripts/local-runtime.js";

export interface Answer {
  /** 0: no answer (the runtime died under the request, or it timed out). */
  status: number;
  body: any;
}

export class ChaosRuntime {
  private current: LocalRuntime | null = null;
  private upWaiters: (() => void)[] = [];
  private restartWaiters: (() => void)[] = [];
  kills = 0;
  /** Client time of each restart's first healthy answer. */
  readonly restarts: number[] = [];

  constructor(
    private readonly persistDir: string,
    readonly apiToken: string,
    /** Every line the runtime prints, with the number of the incarnation (0, 1, …) that printed it. */
    private readonly onLog: (line: string, incarnation: number) => void,
  ) {}

  async start(): Promise<void> {
    const incarnation = this.restarts.length;
    // Runtimes started at the same moment (the chaos files run side by side) can race for one of
    // wrangler's own ports ("Address already in use") and exit: such a start is tried again.
    for (let tries = 1; ; tries++) {
      try {
        this.current = await LocalRuntime.start({
          persistDir: this.persistDir,
          apiToken: this.apiToken,
          onLog: (line) => this.onLog(line, incarnation),
        });
        break;
      } catch (error) {
        if (tries >= 3 || !String(error).includes("Address already in use")) throw error;
      }
    }
    this.restarts.push(Date.now());
    for (const wake of this.upWaiters.splice(0)) wake();
  }

  /** SIGKILL, no goodbye; then a new incarnation over the same state. */
  async killAndRestart(): Promise<void> {
    const victim = this.current;
    this.current = null;
    this.kills++;
    await victim?.kill();
    await this.start();
    for (const wake of this.restartWaiters.splice(0)) wake();
  }

  /** SIGKILL without a restart: the state directory may be read (or changed) before the next `start`. */
  async kill(): Promise<void> {
    const victim = this.current;
    this.current = null;
    this.kills++;
    await victim?.kill();
  }

  async stop(): Promise<void> {
    const last = this.current;
    this.current = null;
    await last?.stop();
  }

  /** Resolves when the next incarnation is up (after the next kill). */
  restarted(): Promise<void> {
    return new Promise((resolve) => this.restartWaiters.push(resolve));
  }

  /** Resolves once an incarnation is up. */
  up(): Promise<void> {
    if (this.current) return Promise.resolve();
    return new Promise((resolve) => this.upWaiters.push(resolve));
  }

  /** One attempt of a request: the answer, or status 0 if the runtime died under it. */
  async request(method: string, path: string, body?: unknown): Promise<Answer> {
    await this.up();
    try {
      return await this.current!.api(method, path, body, 20_000);
    } catch {
      return { status: 0, body: null };
    }
  }

  /** A request that is safe to repeat (idempotent): retried across kills until it is answered. */
  async settle(method: string, path: string, body?: unknown): Promise<Answer> {
    for (;;) {
      const answer = await this.request(method, path, body);
      if (answer.status !== 0) return answer;
    }
  }
}
