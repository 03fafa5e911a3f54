/** The opaque cursor of a job list: the last seq of the page, in base 36 behind a version prefix. */
const CURSOR_PREFIX = "c1.";

export function encodeCursor(seq: number): string {
  return CURSOR_PREFIX + seq.toString(36);
}

/** The seq a cursor continues after, or null when it is not one this API gave. */
export function decodeCursor(cursor: string): number | null {
  if (!cursor.startsWith(CURSOR_PREFIX)) return null;
  const seq = Number.parseInt(cursor.slice(CURSOR_PREFIX.length), 36);
  return Number.isSafeInteger(seq) && seq >= 0 && cursor === encodeCursor(seq) ? seq : null;
}
