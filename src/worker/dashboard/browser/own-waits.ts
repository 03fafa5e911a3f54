/**
 * A job's own in-process waits among a prefix listing of `<job id>.`: a wait's name holds no `.`, so
 * an id whose rest does is another job's (job `a.b`'s wait `c` is listed under job `a`'s prefix).
 * An empty name is none.
 */
export function ownWaits<W extends { id: string }>(jobId: string, listed: readonly W[]): W[] {
  const prefix = `${jobId}.`;
  return listed.filter((w) => w.id.startsWith(prefix) && w.id.length > prefix.length && !w.id.slice(prefix.length).includes("."));
}
