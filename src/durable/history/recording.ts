/**
 * The switch that turns a lane's recording off: its per-minute history (docs/operations.md, "History")
 * and its metrics reports. On unless the Worker's `RECORDING` variable is `"off"`; a lane class may
 * override it (the bench binds a class whose recording is off beside one whose recording is on).
 */

/** What the switch reads: the Worker's `RECORDING` variable, when it has one. */
export interface RecordingEnv {
  RECORDING?: string;
}

/**
 * Whether a lane records history and metrics under this environment: anything but `"off"` is on.
 * `override`: the lane class's own choice (`defineLane({ recording })`), which wins when given.
 */
export function recordingOn(env: RecordingEnv, override?: boolean): boolean {
  return override ?? env.RECORDING?.trim().toLowerCase() !== "off";
}
