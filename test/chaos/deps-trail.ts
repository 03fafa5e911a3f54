/**
 * Why a parent of the dependencies' chaos run is still blocked, read from the stopped runtime's
 * files (persisted.ts) and the outbox lines of its log: for each child it has not heard of, whether
 * the child never settled (and whether the object holding it has an alarm that will run), or settled
 * and its notice is still owed (an outbox row, when due, how often sent), or was acknowledged (the
 * answer the log shows) yet never reached the parent, or was never owed (no registration).
 */
import { laneObjects, rows, type StoredObject } from "./persisted.js";

export interface Blocked {
  lane: string;
  id: string;
}

type JobRow = { seq: number; id: string; state: string; outcome: string | null; run_at: number; blocked: number; has_dependents: number; attempts: number };
type OutboxRow = { seq: number; dep_id: string; outcome: string; lane: string; id: string; next_at: number; attempts: number };
type DependentRow = { dep_seq: number; lane: string; id: string };
type DependencyRow = { job_seq: number; lane: string; id: string; outcome: string | null };

interface ObjectState extends StoredObject {
  lane: string;
  jobs: Map<string, JobRow>;
  outbox: OutboxRow[];
  dependents: DependentRow[];
}

/** One outbox notice's trail in the log: sends and answers, keyed by sending object and key. */
type Trail = { sent: number; answers: string[]; to: string; dependency: string; dependent: string };

function trails(logLines: readonly string[]): Map<string, Trail> {
  const out = new Map<string, Trail>();
  const at = (from: string, key: number) => {
    const k = `${from}:${key}`;
    let t = out.get(k);
    if (!t) out.set(k, (t = { sent: 0, answers: [], to: "", dependency: "", dependent: "" }));
    return t;
  };
  for (const line of logLines) {
    if (!line.includes('"lane.outbox_')) continue;
    const start = line.indexOf("{");
    if (start < 0) continue;
    const event = JSON.parse(line.slice(start)) as { event: string; from: string; to: string; keys: number[]; answers?: (string | null)[]; dependencies?: string[]; dependents?: string[] };
    if (event.event === "lane.outbox_sent") {
      event.keys.forEach((key, i) => {
        const t = at(event.from, key);
        t.sent++;
        Object.assign(t, { to: event.to, dependency: event.dependencies?.[i] ?? "", dependent: event.dependents?.[i] ?? "" });
      });
    }
    else if (event.event === "lane.outbox_answered") event.keys.forEach((key, i) => at(event.from, key).answers.push(event.answers?.[i] ?? "none"));
  }
  return out;
}

/** Lines that say, for each blocked parent, what became of each child it has not heard of, then the state of each object involved. */
export function explainBlocked(persistDir: string, logLines: readonly string[], blocked: readonly Blocked[], now: number): string[] {
  const objects: ObjectState[] = laneObjects(persistDir).map((o) => ({
    ...o,
    lane: o.name.split("#")[0]!,
    jobs: new Map(rows<JobRow>(o.file, "SELECT seq, id, state, outcome, run_at, blocked, has_dependents, attempts FROM jobs").map((j) => [j.id, j])),
    outbox: rows<OutboxRow>(o.file, "SELECT seq, dep_id, outcome, lane, id, next_at, attempts FROM outbox"),
    dependents: rows<DependentRow>(o.file, "SELECT dep_seq, lane, id FROM dependents"),
  }));
  const holder = (lane: string, id: string) => objects.find((o) => o.lane === lane && o.jobs.has(id));
  const log = trails(logLines);
  const lines: string[] = [];
  const involved = new Set<ObjectState>();
  const kinds = new Map<string, number>();
  for (const parent of blocked) {
    const home = holder(parent.lane, parent.id);
    const job = home?.jobs.get(parent.id);
    if (!home || !job) {
      lines.push(`${parent.lane}/${parent.id}: on no object's disk`);
      continue;
    }
    involved.add(home);
    const untold = rows<DependencyRow>(home.file, `SELECT job_seq, lane, id, outcome FROM dependencies WHERE job_seq = ${Number(job.seq)} AND outcome IS NULL ORDER BY position`);
    const why = untold.map((dep) => {
      const kind = explainChild(dep, home, parent.id, holder, log, now, involved);
      kinds.set(kind.split(":")[0]!, (kinds.get(kind.split(":")[0]!) ?? 0) + 1);
      return `${dep.lane}/${dep.id} ${kind}`;
    });
    lines.push(`${parent.lane}/${parent.id} on ${home.name} (${job.state}, waits for ${job.blocked}): ${why.join("; ") || "no untold dependency"}`);
  }
  const objectLines = [...involved].sort((a, b) => a.name.localeCompare(b.name)).map((o) => describeObject(o, now));
  return [`untold children by what became of them: ${JSON.stringify(Object.fromEntries(kinds))}`, ...objectLines, ...lines];
}

function explainChild(
  dep: DependencyRow,
  home: ObjectState,
  parentId: string,
  holder: (lane: string, id: string) => ObjectState | undefined,
  log: Map<string, Trail>,
  now: number,
  involved: Set<ObjectState>,
): string {
  const at = holder(dep.lane, dep.id);
  if (!at) return "missing: on no object's disk";
  involved.add(at);
  const child = at.jobs.get(dep.id)!;
  const where = `on ${at.name}`;
  if (child.state !== "settled") {
    return `never settled: ${child.state}${child.state === "queued" ? `, due ${child.run_at - now} ms from now` : ""}, ${child.attempts} attempts, ${where}`;
  }
  const registered = at.dependents.some((d) => d.dep_seq === child.seq && d.lane === home.name && d.id === parentId);
  const row = at.outbox.find((r) => r.dep_id === dep.id && r.id === parentId && r.lane === home.name);
  if (row) {
    const trail = log.get(`${at.name}:${row.seq}`);
    return `notice owed: settled ${child.outcome} ${where}, outbox row ${row.seq} due ${row.next_at - now} ms from now, ${row.attempts} failed tries, sent ${trail?.sent ?? 0} times, answers ${JSON.stringify(trail?.answers ?? [])}`;
  }
  // No row: acknowledged (the log has its answers) or never written (no registration when it settled).
  const sent = [...log.entries()].filter(([k, t]) => k.startsWith(`${at.name}:`) && t.dependency === dep.id && t.dependent === parentId);
  const trail = sent.map(([k, t]) => `key ${k.slice(at.name.length + 1)} to ${t.to} sent ${t.sent} times, answers ${JSON.stringify(t.answers)}`).join(", ");
  return `${sent.length > 0 ? "acknowledged, not told" : registered ? "no notice" : "never registered"}: settled ${child.outcome} ${where}, no outbox row, ${registered ? "registered" : "no registration"}${trail ? `, ${trail}` : ", never sent"}`;
}

function describeObject(o: ObjectState, now: number): string {
  const queued = [...o.jobs.values()].filter((j) => j.state === "queued");
  const due = queued.filter((j) => j.blocked === 0 && j.run_at <= now).length;
  const running = [...o.jobs.values()].filter((j) => j.state === "running" || j.state === "completing").length;
  const outboxDue = o.outbox.filter((r) => r.next_at <= now).length;
  const alarm = o.alarm === null ? "none" : `${o.alarm - now} ms from now`;
  const scheduled = o.scheduled === null ? "none" : `${o.scheduled - now} ms from now`;
  // An alarm the object's storage holds but the scheduler does not (or at another time) will not run as stored.
  const lostAlarm = o.alarm !== null && o.alarm !== o.scheduled ? ` (NOT SCHEDULED as stored${o.alarm < now ? ", overdue: a lost alarm" : ""})` : "";
  return `object ${o.name}: stored alarm ${alarm}, scheduler's alarm ${scheduled}${lostAlarm}; queued ${queued.length} (${due} due, ${queued.filter((j) => j.blocked > 0).length} blocked), running ${running}, outbox ${o.outbox.length} rows (${outboxDue} due)`;
}
