/**
 * Whether a component is still mounted. hono/jsx/dom (4.13) puts a removed component back into the
 * page when its state is set twice after its removal (the first update is dropped, the second is
 * applied to its old container), so a state update that follows an await checks this first.
 */
import { useEffect, useRef } from "hono/jsx/dom";

export function useAlive(): { readonly current: boolean } {
  const alive = useRef(true);
  useEffect(() => {
    alive.current = true;
    return () => {
      alive.current = false;
    };
  }, []);
  return alive as { readonly current: boolean };
}
