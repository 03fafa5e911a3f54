/**
 * Answers given once the lane is registered with the registry (lane-lifecycle.ts `register`): a lane
 * that took a write registers, so that the lanes' list names it, before its caller hears back. A
 * lane registered already answers in its own turn.
 */

/** The lane's registration with the registry: null when there is nothing to wait for (registered already, or no registry). */
export interface LaneRegistrar {
  register(): Promise<void> | null;
}

/** `answer`, after the lane's registration when `registers` (the call wrote); at once when there is none to wait for. */
export function answerRegistered<T>(life: LaneRegistrar, registers: boolean, answer: T): T | Promise<T> {
  const registering = registers ? life.register() : null;
  return registering ? registering.then(() => answer) : answer;
}
