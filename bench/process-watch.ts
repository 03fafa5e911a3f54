/**
 * What the runtime's workerd process(es) used during one workload, read from /proc. Memory: `VmHWM`
 * after resetting it (`clear_refs` 5) at the start, and `VmRSS` sampled every 100 ms as a cross-check
 * where the reset is not permitted. CPU: user + system time over wall time, in cores (1.0 = one core
 * busy throughout). Linux only; elsewhere the figures are null.
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";

const SAMPLE_MS = 100;

/** The pids of `workerd` processes in a process group. */
export function workerdPids(processGroup: number): number[] {
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return [];
  }
  const pids: number[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      // pid (comm) state ppid pgrp …: comm may hold spaces, so split after its closing parenthesis
      const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const pgrp = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[2]);
      if (pgrp === processGroup && comm.startsWith("workerd")) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

function statusKb(pid: number, field: "VmHWM" | "VmRSS"): number | null {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match ? Number(match[1]) : null;
  } catch {
    return null;
  }
}

const mb = (kb: number | null) => (kb === null ? null : Math.round(kb / 102.4) / 10);

/** User + system CPU time of a process, seconds (/proc/<pid>/stat fields 14 and 15, in clock ticks). */
function cpuSeconds(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return null;
  }
}

/** USER_HZ: 100 on every Linux this runs on. */
const CLOCK_TICKS = 100;

export interface ProcessFigures {
  /** Peak resident set of workerd during the workload, MB (max of VmHWM-after-reset and sampled VmRSS). */
  peakRssMb: number | null;
  /** VmRSS at the start of the workload, MB. */
  startRssMb: number | null;
  /** VmRSS at the end of the workload, MB. */
  endRssMb: number | null;
  /** Whether VmHWM could be reset at the start (else it is the process's lifetime peak, and only samples count). */
  hwmReset: boolean;
  /** workerd's CPU time over the workload's wall time: 1.0 is one core busy throughout. */
  cpuCores: number | null;
}

export class ProcessWatch {
  private readonly processGroup: number;
  private timer: ReturnType<typeof setInterval> | undefined;
  private sampledKb = 0;
  private startKb: number | null = null;
  private startCpu: number | null = null;
  private startWall = 0;
  private hwmReset = false;

  constructor(processGroup: number) {
    this.processGroup = processGroup;
  }

  private cpu(): number | null {
    const values = workerdPids(this.processGroup).map(cpuSeconds);
    return values.some((v) => v !== null) ? values.reduce<number>((sum, v) => sum + (v ?? 0), 0) : null;
  }

  private rssKb(): number | null {
    const values = workerdPids(this.processGroup).map((pid) => statusKb(pid, "VmRSS"));
    return values.some((v) => v !== null) ? values.reduce<number>((sum, v) => sum + (v ?? 0), 0) : null;
  }

  start(): void {
    const pids = workerdPids(this.processGroup);
    this.hwmReset = pids.length > 0;
    for (const pid of pids) {
      try {
        writeFileSync(`/proc/${pid}/clear_refs`, "5");
      } catch {
        this.hwmReset = false;
      }
    }
    this.startKb = this.rssKb();
    this.startCpu = this.cpu();
    this.startWall = performance.now();
    this.sampledKb = this.startKb ?? 0;
    this.timer = setInterval(() => {
      this.sampledKb = Math.max(this.sampledKb, this.rssKb() ?? 0);
    }, SAMPLE_MS);
  }

  stop(): ProcessFigures {
    clearInterval(this.timer);
    const cpu = this.cpu();
    const wallSeconds = (performance.now() - this.startWall) / 1000;
    const cpuCores = cpu !== null && this.startCpu !== null && wallSeconds > 0 ? Math.round(((cpu - this.startCpu) / wallSeconds) * 100) / 100 : null;
    const pids = workerdPids(this.processGroup);
    const end = this.rssKb();
    let peak = Math.max(this.sampledKb, end ?? 0);
    if (this.hwmReset) {
      const hwm = pids.map((pid) => statusKb(pid, "VmHWM") ?? 0).reduce((a, b) => a + b, 0);
      peak = Math.max(peak, hwm);
    }
    return { peakRssMb: pids.length > 0 ? mb(peak) : null, startRssMb: mb(this.startKb), endRssMb: mb(end), hwmReset: this.hwmReset, cpuCores };
  }
}
