// Typo tolerance rules (docs/ranking.md, Typos), shared by the embedded engine, the Typesense
// adapter's request shapes, highlighting and the tests' brute-force reference, so that every one
// of them agrees on what counts as a match with how many typos.
//
// Distances are Damerau–Levenshtein in its restricted form (optimal string alignment: an
// insertion, a deletion, a substitution or a swap of two neighbours each cost one edit, and no
// substring is edited twice), over code points of folded tokens.

/** A query token of this many code points or more may match with one typo. */
export const MIN_LENGTH_ONE_TYPO = 4;
/** A query token of this many code points or more may match with two typos. */
export const MIN_LENGTH_TWO_TYPOS = 8;
/** The most typos any one query token may have. */
export const MAX_TYPOS_PER_TOKEN = 2;

const DIGITS_ONLY = /^\p{N}+$/u;

/** How many typos a (folded) query token may match with: 0, 1 or 2. Digits-only tokens: none. */
export function allowedTypos(token: string): number {
  if (DIGITS_ONLY.test(token)) return 0;
  let length = 0;
  for (const _ of token) if (++length >= MIN_LENGTH_TWO_TYPOS) return 2;
  return length >= MIN_LENGTH_ONE_TYPO ? 1 : 0;
}

/**
 * Edit distance between a and b, or `max + 1` as soon as it is sure to exceed `max` (callers only
 * ever ask "within max?", and a bounded answer lets the rows stop early).
 */
export function editDistance(a: string, b: string, max: number): number {
  if (a === b) return 0;
  if (max === 0 || missingMoreThan(a, b, max)) return max + 1;
  return distance(Array.from(a), Array.from(b), max, false);
}

/**
 * Edit distance between `query` and the closest prefix of `term` (its typed start), or `max + 1`:
 * how a last query token, typed only in part, matches a title word with typos.
 */
export function prefixEditDistance(query: string, term: string, max: number): number {
  if (term.startsWith(query)) return 0;
  if (max === 0 || missingMoreThan(query, term, max)) return max + 1;
  return distance(Array.from(query), Array.from(term), max, true);
}

/**
 * Whether more than `max` characters of q occur nowhere in t: each of them needs an edit of its
 * own (a substitution or a deletion; a swap only moves characters t has), so the distance exceeds
 * max. Most words are ruled out this way without the matrix and its allocations: a version's
 * changed records are compared with every query this way, a few hundred words each.
 */
function missingMoreThan(q: string, t: string, max: number): boolean {
  let missing = 0;
  for (const ch of q) if (!t.includes(ch) && ++missing > max) return true;
  return false;
}

/**
 * The distance matrix row by row over `t`, columns over `q`. With `prefix`, the answer is the
 * smallest last-column value of any row (q against every prefix of t), else the last row's.
 */
function distance(q: string[], t: string[], max: number, prefix: boolean): number {
  const m = q.length;
  if (!prefix && Math.abs(m - t.length) > max) return max + 1;
  let before = new Array<number>(m + 1).fill(0);
  let previous = Array.from({ length: m + 1 }, (_, j) => j);
  let current = new Array<number>(m + 1).fill(0);
  let best = previous[m]!;
  for (let i = 1; i <= t.length; i++) {
    current[0] = i;
    let rowMin = i;
    for (let j = 1; j <= m; j++) {
      const cost = q[j - 1] === t[i - 1] ? 0 : 1;
      let d = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + cost);
      if (i > 1 && j > 1 && q[j - 1] === t[i - 2] && q[j - 2] === t[i - 1]) d = Math.min(d, before[j - 2]! + 1);
      current[j] = d;
      if (d < rowMin) rowMin = d;
    }
    if (prefix && current[m]! < best) best = current[m]!;
    // Every later row is at least this row's minimum: the answer can no longer come within max.
    if (rowMin > max) return prefix && best <= max ? best : max + 1;
    [before, previous, current] = [previous, current, before];
  }
  const answer = prefix ? best : previous[m]!;
  return answer <= max ? answer : max + 1;
}
