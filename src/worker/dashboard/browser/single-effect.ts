/**
 * An effect whose setup runs once for each change of its deps, and is never started once a later
 * render has changed them or the component has left the page. hono/jsx/dom (4.13) takes a
 * component's pending effect each time the component is drawn and runs what it took at the next
 * animation frame: drawn twice before that frame (its parent rendered again), the effect runs twice,
 * and the first run's cleanup is lost (a second connection that is never closed, each event read by
 * both). An effect superseded before its frame, or whose component was removed before it, still
 * runs, and its cleanup is never called.
 */
import { useEffect, useLayoutEffect, useMemo } from "hono/jsx/dom";

type Setup = () => void | (() => void);

interface Run {
  started: boolean;
  /** Its deps changed or its component was removed: a frame that comes later starts nothing. */
  retired: boolean;
  cleanup: void | (() => void);
}

export function useSingleEffect(setup: Setup, deps: readonly unknown[]): void {
  // One run per change of deps: the renders between two changes share it.
  const run = useMemo<Run>(() => ({ started: false, retired: false, cleanup: undefined }), deps);
  // A layout effect runs in the render that draws it, never later, and its cleanup is called when
  // the deps change or the component is removed, even if the frame that starts the run is still to come.
  useLayoutEffect(
    () => () => {
      run.retired = true;
    },
    deps,
  );
  useEffect(() => {
    if (run.retired) return;
    if (!run.started) {
      run.started = true;
      run.cleanup = setup();
    }
    // Every run of this effect answers the same cleanup: the one kept is called once.
    return run.cleanup;
  }, deps);
}

/**
 * `tick` every `everyMs` while `active`: one timer, set up anew when `active` or `deps` change (a
 * second timer, its cleanup lost, would tick twice as often forever).
 */
export function useEvery(everyMs: number, tick: () => void, deps: readonly unknown[], active = true): void {
  useSingleEffect(() => {
    if (!active) return;
    const timer = setInterval(tick, everyMs);
    return () => clearInterval(timer);
  }, [active, ...deps]);
}
