/** Times and numbers as the page shows them: local wall-clock time, durations in words. */

const pad = (n: number, width = 2) => String(n).padStart(width, "0");

/** `14:03:05.123`, local time. */
export function clockTime(ms: number): string {
  const d = new Date(ms);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

/** `2026-11-20 14:03:05`, local time; an em dash for none. */
export function dateTime(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return "—";
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** `1.5 s`, `3 min`, `2 h`, `4 d`. */
export function duration(ms: number): string {
  const s = Math.abs(ms) / 1000;
  if (s < 10) return `${s.toFixed(1)} s`;
  if (s < 120) return `${Math.round(s)} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  if (s < 172_800) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86_400)} d`;
}

/** `in 3.0 s` or `5 min ago`. */
export function relative(ms: number, now = Date.now()): string {
  return ms >= now ? `in ${duration(ms - now)}` : `${duration(now - ms)} ago`;
}

/** A rate per second: `12.3/s`, or an em dash when unknown. */
export function rate(perSecond: number | null): string {
  if (perSecond === null) return "—";
  return perSecond >= 100 ? `${Math.round(perSecond)}/s` : `${perSecond.toFixed(1)}/s`;
}
