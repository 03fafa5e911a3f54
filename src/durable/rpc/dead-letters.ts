/**
 * What a lane answers the outboxes of lanes that name it their dead-letter lane (deadletters/intake.ts):
 * the body of lane.ts's method.
 */
import type { Result } from "../../shared/errors.js";
import type { DeadLetterShardAnswer } from "../../routing/dead-letter-routing.js";
import type { DeadLetterIntake } from "../deadletters/intake.js";
import { answerRegistered, type LaneRegistrar } from "./registered-answers.js";

/** The parts the copies' calls reach. */
export interface DeadLetterParts {
  readonly deadLetterIntake: DeadLetterIntake;
}

export class DeadLetterRpc {
  constructor(
    private readonly parts: DeadLetterParts,
    private readonly life: LaneRegistrar,
  ) {}

  /**
   * Writes the copies of one call (each answered). A lane that only ever receives copies has jobs all
   * the same: it registers as after an enqueue, so that the lanes' list names it, whichever shard the
   * copies land on.
   */
  enqueueDeadLetters(input: unknown): Result<DeadLetterShardAnswer[]> | Promise<Result<DeadLetterShardAnswer[]>> {
    const registered = (done: Result<DeadLetterShardAnswer[]>) => answerRegistered(this.life, done.ok, done);
    const answer = this.parts.deadLetterIntake.receive(input);
    return answer instanceof Promise ? answer.then(registered) : registered(answer);
  }
}
