// The lexical score of docs/ranking.md "Lexical buckets", as a small bucket number (lower ranks first) so that
// near-equal matches tie and weight, distance and id decide between them. The order, as
// written: a whole-token match beats a prefix-only one; then closer, then earlier matches win:
//
//   bucket = 4*w + 2*p + s        (scope=all adds DATA_BUCKET after every title match)
//   w: 0 when the last query token matches a whole title token, 1 when only as a prefix
//   p: 0 when the query tokens occur consecutively and in order in the title, 1 when scattered
//   s: 0 when the match starts at the first title token, 1 when later
//
// Every query token but the last must match a whole title token; the last may match a prefix
// (scope=title). The same function ranks segment documents (term ids from the forward index)
// and overlay records (token strings), so both sides of a version agree.

export const BUCKETS = 8;
/** Records matched in `data` (scope=all) rank after every title match. */
export const DATA_BUCKET = 6;
/** Query tokens beyond this are ignored: per-position matches are kept in a 32-bit mask. */
export const MAX_QUERY_TOKENS = 30;

/**
 * masks[j]: bit i set when title token j equals query token i (the last token included, as bit n-1).
 * prefix[j]: 1 when title token j starts with the last query token.
 * Returns the bucket, or -1 when the title does not match.
 */
export function titleBucket(
  masks: Uint32Array,
  prefix: Uint8Array,
  len: number,
  n: number,
  prefixLast: boolean,
): number {
  let found = 0;
  let anyPrefix = 0;
  for (let j = 0; j < len; j++) {
    found |= masks[j]!;
    anyPrefix |= prefix[j]!;
  }
  const lastBit = 1 << (n - 1);
  const rest = lastBit - 1;
  if ((found & rest) !== rest) return -1;
  const whole = (found & lastBit) !== 0;
  if (!whole && !(prefixLast && anyPrefix)) return -1;

  // A scattered match "starts" when the title's first token is the query's first.
  const start = (masks[0]! & 1) !== 0 ? 0 : 1;
  if (whole) {
    const at = firstPhrase(masks, prefix, len, n, true);
    return at >= 0 ? (at === 0 ? 0 : 1) : 2 + start;
  }
  const at = firstPhrase(masks, prefix, len, n, false);
  return at >= 0 ? (at === 0 ? 4 : 5) : 6 + start;
}

/** Position of the first run of the query tokens in order, or -1. */
function firstPhrase(masks: Uint32Array, prefix: Uint8Array, len: number, n: number, wholeLast: boolean): number {
  const lastBit = 1 << (n - 1);
  for (let j = 0; j + n <= len; j++) {
    let i = 0;
    while (i < n - 1 && (masks[j + i]! & (1 << i)) !== 0) i++;
    if (i === n - 1 && (wholeLast ? (masks[j + i]! & lastBit) !== 0 : prefix[j + i] === 1)) return j;
  }
  return -1;
}

/** Per-position match scratch space, grown to the longest title seen. */
export class MatchScratch {
  masks = new Uint32Array(64);
  prefix = new Uint8Array(64);

  ensure(len: number): void {
    if (len > this.masks.length) {
      this.masks = new Uint32Array(len * 2);
      this.prefix = new Uint8Array(len * 2);
    }
  }
}

/** The title bucket of an overlay record, from token strings. */
export function stringTitleBucket(
  titleTokens: readonly string[],
  query: readonly string[],
  prefixLast: boolean,
  scratch: MatchScratch,
): { bucket: number; found: number } {
  const len = titleTokens.length;
  const n = query.length;
  const last = query[n - 1]!;
  scratch.ensure(len);
  let found = 0;
  for (let j = 0; j < len; j++) {
    const token = titleTokens[j]!;
    let mask = 0;
    for (let i = 0; i < n; i++) if (token === query[i]) mask |= 1 << i;
    scratch.masks[j] = mask;
    scratch.prefix[j] = prefixLast && token.startsWith(last) ? 1 : 0;
    found |= mask;
  }
  return { bucket: titleBucket(scratch.masks, scratch.prefix, len, n, prefixLast), found };
}
