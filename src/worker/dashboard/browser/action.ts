/**
 * An operator's action and what came of it: `run` marks the control busy, then keeps the sentence
 * the action returns (a notice) or the refusal (a problem), and drops both once the view is gone.
 */
import { useState } from "hono/jsx/dom";
import { useAlive } from "./alive.js";
import { describe } from "./api.js";

export interface Action {
  busy: boolean;
  problem: string | null;
  notice: string | null;
  /** Runs `action` (controls stay disabled while `busy`); its answer is the notice to show (null: none). */
  run(action: () => Promise<string | null>): Promise<void>;
}

export function useAction(): Action {
  const [problem, setProblem] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const alive = useAlive();
  const run = async (action: () => Promise<string | null>) => {
    setBusy(true);
    setProblem(null);
    setNotice(null);
    try {
      const said = await action();
      if (alive.current) setNotice(said);
    } catch (error) {
      if (alive.current) setProblem(describe(error));
    } finally {
      if (alive.current) setBusy(false);
    }
  };
  return { busy, problem, notice, run };
}
