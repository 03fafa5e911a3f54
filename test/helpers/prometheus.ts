/**
 * Reads a Prometheus text exposition with parse-prometheus-text-format, the parser the tests trust
 * over string matching. That parser folds a histogram's series into one (its buckets keyed by `le`
 * alone, `_sum` and `_count` of labelled series dropped), so histograms are read twice: once as
 * it reads families (name, type, help), and once with their TYPE lines left out, which makes each
 * `_bucket`, `_sum` and `_count` line an untyped sample with all its labels.
 */
import parsePrometheusTextFormat, { type ParsedFamily } from "parse-prometheus-text-format";
import { expect } from "vitest";

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Exposition {
  /** Every family as the parser reads it: name, TYPE (upper case), HELP. */
  families: ParsedFamily[];
  /** Every sample line, histograms' `_bucket`, `_sum` and `_count` lines each on its own. */
  samples: Sample[];
}

export function parseExposition(text: string): Exposition {
  const families = parsePrometheusTextFormat(text);
  const flat = parsePrometheusTextFormat(text.replace(/^# TYPE \S+ histogram$/gm, ""));
  const samples: Sample[] = [];
  for (const f of flat) for (const m of f.metrics) samples.push({ name: f.name, labels: m.labels ?? {}, value: Number(m.value) });
  return { families, samples };
}

/** The samples of metric `name` whose labels include `match`. */
export function samplesOf(exposition: Exposition, name: string, match: Record<string, string> = {}): Sample[] {
  return exposition.samples.filter((s) => s.name === name && Object.entries(match).every(([k, v]) => s.labels[k] === v));
}

/** One histogram series (`labels` exactly, besides `le`): its buckets by `le`, sum and count; checks they hang together. */
export function histogram(exposition: Exposition, name: string, labels: Record<string, string>): { buckets: Record<string, number>; sum: number; count: number } {
  const same = (s: Sample) => {
    const { le: _le, ...rest } = s.labels;
    return JSON.stringify(Object.entries(rest).sort()) === JSON.stringify(Object.entries(labels).sort());
  };
  const buckets: Record<string, number> = {};
  const order: number[] = [];
  for (const s of exposition.samples) {
    if (s.name !== `${name}_bucket` || !same(s)) continue;
    buckets[s.labels.le!] = s.value;
    order.push(s.value);
  }
  const sum = exposition.samples.filter((s) => s.name === `${name}_sum` && same(s));
  const count = exposition.samples.filter((s) => s.name === `${name}_count` && same(s));
  expect(sum, `${name}_sum ${JSON.stringify(labels)}`).toHaveLength(1);
  expect(count, `${name}_count ${JSON.stringify(labels)}`).toHaveLength(1);
  expect(order, "cumulative buckets never go down").toEqual([...order].sort((a, b) => a - b));
  expect(buckets["+Inf"], "the +Inf bucket is the count").toBe(count[0]!.value);
  return { buckets, sum: sum[0]!.value, count: count[0]!.value };
}

/** The series of a histogram family: the label sets of its `_count` lines. */
export function histogramSeries(exposition: Exposition, name: string, match: Record<string, string> = {}): Record<string, string>[] {
  return samplesOf(exposition, `${name}_count`, match).map((s) => s.labels);
}
