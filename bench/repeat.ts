/**
 * Repetitions of one measurement, and the one whose ratio is the median: what a target takes where a
 * single measurement swings more than the margin it is judged by (the drains, the enqueue ratios).
 * Node runs this file by type stripping: no enums or parameter properties.
 */

/** The repetition of the median ratio (the upper one of an even count), with every repetition's ratio in order. */
export function medianBy<T extends object>(repetitions: readonly T[], ratio: (rep: T) => number): T & { ratio: number; ratios: number[] } {
  const ratios = repetitions.map(ratio);
  const order = ratios.map((_, i) => i).sort((a, b) => ratios[a]! - ratios[b]!);
  const middle = order[Math.floor(order.length / 2)]!;
  return { ...repetitions[middle]!, ratio: ratios[middle]!, ratios };
}
