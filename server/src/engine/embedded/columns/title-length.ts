// The "shorter title" tie-break of the rank order (docs/ranking.md): fewer title tokens first, then
// fewer characters (UTF-16 units of the stored title), as one 32-bit key. Segments number their
// documents and keep a length order by it; records outside segments (a version's changes) are
// compared with the same key, so both sides of a version order ties alike.

const MAX_TOKENS = 0xff;
const MAX_UNITS = 0xff_ffff;

/** The length key of a title with `tokens` tokens and `units` UTF-16 code units (smaller first). */
export function titleLengthKey(tokens: number, units: number): number {
  return Math.min(tokens, MAX_TOKENS) * (MAX_UNITS + 1) + Math.min(units, MAX_UNITS);
}
