/**
 * Peak memory of the runtime's workerd process(es) during one workload, read from /proc: `VmHWM` after
 * resetting it (`clear_refs` 5) at the start of the workload, and `VmRSS` sampled every 100 ms as a
 * cross-check where the reset is not permitted. Linux only; elsewhere the figures are null.
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

export interface MemoryFigures {
  /** Peak resident set of workerd during the workload, MB (max of VmHWM-after-reset and sampled VmRSS). */
  peakRssMb: number | null;
  /** VmRSS at the start of the workload, MB. */
  startRssMb: number | null;
  /** VmRSS at the end of the workload, MB. */
  endRssMb: number | null;
  /** Whether VmHWM could be reset at the start (else it is the process's lifetime peak, and only samples count). */
  hwmReset: boolean;
}

export class MemoryWatch {
  private readonly processGroup: number;
  private timer: ReturnType<typeof setInterval> | undefined;
  private sampledKb = 0;
  private startKb: number | null = null;
  private hwmReset = false;

  constructor(processGroup: number) {
    this.processGroup = processGroup;
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
    this.sampledKb = this.startKb ?? 0;
    this.timer = setInterval(() => {
      this.sampledKb = Math.max(this.sampledKb, this.rssKb() ?? 0);
    }, SAMPLE_MS);
  }

  stop(): MemoryFigures {
    clearInterval(this.timer);
    const pids = workerdPids(this.processGroup);
    const end = this.rssKb();
    let peak = Math.max(this.sampledKb, end ?? 0);
    if (this.hwmReset) {
      const hwm = pids.map((pid) => statusKb(pid, "VmHWM") ?? 0).reduce((a, b) => a + b, 0);
      peak = Math.max(peak, hwm);
    }
    return { peakRssMb: pids.length > 0 ? mb(peak) : null, startRssMb: mb(this.startKb), endRssMb: mb(end), hwmReset: this.hwmReset };
  }
}
