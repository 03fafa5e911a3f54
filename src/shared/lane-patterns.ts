/**
 * Lane patterns of scoped tokens (docs/api.md "Access"): lane names, or prefixes ending in `*`; null
 * is every lane. One rule, read by the front worker's access checks, the registry's scoped scrape and
 * the dashboard.
 */

/** Whether `lane` is one of `lanes` (null: every lane). */
export function reachesLane(lanes: readonly string[] | null, lane: string): boolean {
  return lanes === null || lanes.some((p) => (p.endsWith("*") ? lane.startsWith(p.slice(0, -1)) : lane === p));
}
