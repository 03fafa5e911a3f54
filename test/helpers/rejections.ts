import { expect } from "vitest";
import { QueueError } from "../../src/shared/errors.js";

/** The `QueueError` a client's call is refused with (a fulfilled call fails the test). */
export async function rejection(promise: Promise<unknown>): Promise<QueueError> {
  const error = await promise.then(
    () => expect.fail("expected a refusal"),
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(QueueError);
  return error as QueueError;
}
