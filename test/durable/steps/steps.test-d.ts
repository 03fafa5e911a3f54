/** Type tests of durable steps, checked by `tsc --noEmit`, never run: `ctx.step` infers its function's result. */
import { expectTypeOf } from "vitest";
import type { Checkpoints, ExecutorRegistry } from "../../../src/durable/attempts/executors.js";
import type { Json } from "../../../src/shared/job.js";

export const executors: ExecutorRegistry = {
  "order.ship": async (_payload: { order: string }, { step, checkpoints, progress }) => {
    const charge = await step("charge", async () => ({ id: "ch_1", cents: 1200 }));
    expectTypeOf(charge).toEqualTypeOf<{ id: string; cents: number }>();
    const label = await step("label", () => "1Z999");
    expectTypeOf(label).toEqualTypeOf<string>();
    expectTypeOf(checkpoints).toEqualTypeOf<Checkpoints>();
    expectTypeOf(await checkpoints.load()).toEqualTypeOf<Record<string, Json>>();
    expectTypeOf(progress).parameter(0).toBeUnknown();
    // @ts-expect-error a step's name is a string
    await step(1, () => 1);
    return { charge, label };
  },
};
