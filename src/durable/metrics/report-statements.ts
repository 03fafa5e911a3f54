/** The statements a lane's metrics report reads (lane-report.ts), beside its kept counts (store/counts.ts). */

/** Every row of `job_histograms`: a histogram's rows together (`wait` first), by outcome, then bucket. */
export const HISTOGRAMS_SQL = `SELECT name, outcome, bucket, count, sum_ms FROM job_histograms ORDER BY name DESC, outcome, bucket`;
