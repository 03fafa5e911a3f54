/**
 * The bodies of the lane's RPC methods (rpc/), by what they answer, each built on the lane's parts:
 * lane.ts's methods validate nothing themselves and each delegates to one of these through the gate.
 */
import type { Clock } from "../shared/clock.js";
import { BulkRpc } from "./bulk/bulk-rpc.js";
import type { LaneLifecycle } from "./lane-lifecycle.js";
import type { LaneParts } from "./lane-parts.js";
import { DeadLetterRpc } from "./rpc/dead-letters.js";
import { DebounceKeyRpc } from "./rpc/debounce-keys.js";
import { DependencyRpc } from "./rpc/dependencies.js";
import { EnqueueRpc } from "./rpc/enqueue.js";
import { JobWaitRpc } from "./rpc/job-waits.js";
import { OperatorRpc } from "./rpc/operator.js";
import { PullConsumerRpc } from "./rpc/pull-consumers.js";
import { ReaderRpc } from "./rpc/readers.js";
import { ScheduleRpc } from "./rpc/schedules.js";
import { ShardRpc } from "./rpc/shards.js";
import { StepRpc } from "./rpc/steps.js";
import { StreamRpc } from "./rpc/streams.js";
import { WaitpointListRpc } from "./rpc/waitpoint-list.js";
import { WaitpointWaiterRpc } from "./rpc/waitpoint-waiters.js";
import { WaitpointRpc } from "./rpc/waitpoints.js";

export class LaneRpcBodies {
  readonly producers: EnqueueRpc;
  readonly shards: ShardRpc;
  readonly keys: DebounceKeyRpc;
  readonly consumers: PullConsumerRpc;
  readonly deps: DependencyRpc;
  readonly deadLetters: DeadLetterRpc;
  readonly operator: OperatorRpc;
  readonly scheduleRpc: ScheduleRpc;
  readonly steps: StepRpc;
  readonly readers: ReaderRpc;
  readonly waitpointRpc: WaitpointRpc;
  readonly waitpointList: WaitpointListRpc;
  readonly streams: StreamRpc;
  readonly jobWaits: JobWaitRpc;
  readonly waitpointWaiters: WaitpointWaiterRpc;
  readonly bulk: BulkRpc;

  constructor(parts: LaneParts, life: LaneLifecycle, clock: Clock) {
    this.producers = new EnqueueRpc(parts, life);
    this.shards = new ShardRpc(parts, life, clock);
    this.keys = new DebounceKeyRpc(parts);
    this.consumers = new PullConsumerRpc(parts);
    this.deps = new DependencyRpc(parts);
    this.deadLetters = new DeadLetterRpc(parts, life);
    this.operator = new OperatorRpc(parts, life);
    this.scheduleRpc = new ScheduleRpc(parts);
    this.steps = new StepRpc(parts);
    this.readers = new ReaderRpc(parts);
    this.waitpointRpc = new WaitpointRpc(parts);
    this.waitpointList = new WaitpointListRpc(parts);
    this.streams = new StreamRpc(parts);
    this.jobWaits = new JobWaitRpc(parts);
    this.waitpointWaiters = new WaitpointWaiterRpc(parts);
    this.bulk = new BulkRpc(parts.bulk);
  }
}
