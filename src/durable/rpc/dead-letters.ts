/**
 * What a lane answers the outboxes of lanes that name it their dead-letter lane (deadletters/intake.ts):
 * the body of lane.ts's method.
 */
import type { Result } from "../../shared/errors.js";
import type { DeadLetterShardAnswer } from "../../routing/dead-letter-routing.js";
import type { DeadLetterIntake } from "../deadletters/intake.js";

/** The parts the copies' calls reach. */
export interface DeadLetterParts {
  readonly deadLetterIntake: DeadLetterIntake;
}

/** The lane's registration with the registry (lane-lifecycle.ts `register`). */
export interface DeadLetterRegistrar {
  register(): Promise<void> | null;
}

export class DeadLetterRpc {
  constructor(
    private readonly parts: DeadLetterParts,
    private readonly life: DeadLetterRegistrar,
  ) {}

  /**
   * Writes the copies of one call (each answered). A lane that only ever receives copies has jobs all
   * the same: it registers as after an enqueue, so that the lanes' list names it, whichever shard the
   * copies land on.
   */
  enqueueDeadLetters(input: unknown): Result<DeadLetterShardAnswer[]> | Promise<Result<DeadLetterShardAnswer[]>> {
    const registered = (done: Result<DeadLetterShardAnswer[]>) => {
      const registering = done.ok ? this.life.register() : null;
      return registering ? registering.then(() => done) : done;
    };
    const answer = this.parts.deadLetterIntake.receive(input);
    return answer instanceof Promise ? answer.then(registered) : registered(answer);
  }
}
