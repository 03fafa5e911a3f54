/**
 * An effect whose setup runs once for each change of its deps, and is never started once a later
 * render has changed them. hono/jsx/dom (4.13) takes a component's pending effect each time the
 * component is drawn and runs what it took at the next animation frame: drawn twice before that
 * frame (its parent rendered again), the effect runs twice, and the first run's cleanup is lost (a
 * second connection that is never closed, each event read by both). An effect superseded before its
 * frame still runs, its cleanup lost too.
 */
import { useEffect, useMemo, useRef } from "hono/jsx/dom";

type Setup = () => void | (() => void);

interface Run {
  started: boolean;
  cleanup: void | (() => void);
}

export function useSingleEffect(setup: Setup, deps: readonly unknown[]): void {
  // One run per change of deps: the renders between two changes share it.
  const run = useMemo<Run>(() => ({ started: false, cleanup: undefined }), deps);
  const latest = useRef(run);
  latest.current = run;
  useEffect(() => {
    if (run !== latest.current) return;
    if (!run.started) {
      run.started = true;
      run.cleanup = setup();
    }
    // Every run of this effect answers the same cleanup: the one kept is called once.
    return run.cleanup;
  }, deps);
}
