// Terms of a sorted dictionary within an edit distance of a query token (docs/ranking.md, Typos).
//
// A sorted string table is a trie in disguise: the strings sharing a prefix are one contiguous
// range. The walk descends that trie one code point at a time carrying one row of the
// edit-distance matrix per level (a Levenshtein automaton computed lazily, as Lucene's FuzzyQuery
// and tantivy's fuzzy term query run one over their term FSTs), and abandons a branch as soon as
// its row's smallest value exceeds the bound: rows never decrease downwards, so nothing below can
// match. Once a row's smallest value is the bound, the walk stops descending: only the rest of the
// query after a cell at the bound can follow (visitTight), and those few continuations are
// searched for directly. Distances are the restricted Damerau–Levenshtein of engine/typos.ts,
// over code points.
import type { SortedStrings } from "./sorted-strings.ts";

/** Terms [lo, hi) all within `distance` of the query (a single term when hi = lo + 1). */
export interface FuzzyRange {
  readonly lo: number;
  readonly hi: number;
  readonly distance: number;
  /** Code points of the prefix every term of the range starts with (the trie node). */
  readonly depth: number;
  /** Every term starting with that prefix (a whole subtree), not a single term that equals it. */
  readonly subtree: boolean;
}

/**
 * Whole terms within `max` edits of `query`, in term order.
 * With `prefix`, the terms whose closest prefix is within `max` edits of `query` instead (how a
 * last token, typed only in part, matches), as disjoint ranges in term order, each at the smallest
 * distance of any prefix of its terms.
 */
export function fuzzyTerms(dict: SortedStrings, query: string, max: number, prefix: boolean): FuzzyRange[] {
  const walk = new FuzzyWalk(dict, query, max, !prefix);
  walk.visit(0, dict.count, 0, 0, Number.POSITIVE_INFINITY, prefix);
  return prefix ? walk.prefixes : walk.whole;
}

/** Both answers for one token in one walk: its terms by closest prefix, and its whole terms. */
export function fuzzyPrefixesAndTerms(
  dict: SortedStrings,
  query: string,
  max: number,
): { prefixes: FuzzyRange[]; whole: FuzzyRange[] } {
  const walk = new FuzzyWalk(dict, query, max, true);
  walk.visit(0, dict.count, 0, 0, Number.POSITIVE_INFINITY, true);
  return { prefixes: walk.prefixes, whole: walk.whole };
}

class FuzzyWalk {
  /** Prefix mode's answer: subtrees and single terms by their closest beginning. */
  readonly prefixes: FuzzyRange[] = [];
  /** Whole mode's answer: terms within max edits. */
  readonly whole: FuzzyRange[] = [];
  private readonly bytes: Buffer;
  private readonly offsets: Uint32Array;
  private readonly query: Int32Array;
  private readonly max: number;
  private readonly wantWhole: boolean;
  /** rows[d]: the matrix row of the trie node at depth d (code points). */
  private readonly rows: Int32Array[] = [];
  /** chars[d]: the code point that leads to depth d + 1. */
  private readonly chars: Int32Array;
  /** rest[j]: the query from character j on, as UTF-8 (the targets of a tight node). */
  private readonly rest: Uint8Array[] = [];
  /** swapped[j]: character j, then the query from character j + 2 on, as UTF-8. */
  private readonly swapped: Uint8Array[] = [];

  /** `wantWhole`: collect whole terms too (the prefix answer is asked for by visiting with prefixOn). */
  constructor(dict: SortedStrings, query: string, max: number, wantWhole: boolean) {
    this.bytes = dict.bytes;
    this.offsets = dict.offsets;
    this.query = Int32Array.from(query, (ch) => ch.codePointAt(0)!);
    this.max = max;
    this.wantWhole = wantWhole;
    const m = this.query.length;
    // No node deeper than m + max can be within max edits: its row is at least depth - m.
    for (let d = 0; d <= m + max + 1; d++) this.rows.push(new Int32Array(m + 1));
    for (let j = 0; j <= m; j++) this.rows[0]![j] = j <= max ? j : max + 1;
    this.chars = new Int32Array(m + max + 2);
    for (let j = 0; j < m; j++) {
      this.rest.push(Buffer.from(String.fromCodePoint(...this.query.subarray(j)), "utf8"));
      this.swapped.push(Buffer.from(String.fromCodePoint(this.query[j]!, ...this.query.subarray(j + 2)), "utf8"));
    }
  }

  /**
   * The trie node of terms [lo, hi), which share their first `bytes` bytes (`depth` code points),
   * whose row is rows[depth]; `best` is the smallest last-column value on the path above it.
   * `prefixOn`: no ancestor's whole subtree was taken as prefix matches yet (below such a node,
   * only whole matches are still looked for).
   */
  visit(lo: number, hi: number, bytes: number, depth: number, best: number, prefixOn: boolean): void {
    const m = this.query.length;
    const max = this.max;
    const row = this.rows[depth]!;
    let rowMin = row[0]!;
    for (let j = 1; j <= m; j++) if (row[j]! < rowMin) rowMin = row[j]!;
    const here = row[m]!;
    if (prefixOn) {
      const nodeBest = Math.min(best, here);
      // Nothing below can come closer than this row's minimum: the whole subtree is at nodeBest.
      if (nodeBest <= max && rowMin >= nodeBest) {
        this.prefixes.push({ lo, hi, distance: nodeBest, depth, subtree: true });
        if (!this.wantWhole) return;
        prefixOn = false;
      } else {
        best = nodeBest;
      }
    }
    if (rowMin > max) return;
    let i = lo;
    // The term equal to the node's prefix, if any, sorts first.
    if (this.offsets[i + 1]! - this.offsets[i]! === bytes) {
      if (prefixOn && best <= max) this.prefixes.push({ lo: i, hi: i + 1, distance: best, depth, subtree: false });
      if (this.wantWhole && here <= max) this.whole.push({ lo: i, hi: i + 1, distance: here, depth, subtree: false });
      i++;
    }
    if (depth + 1 >= this.rows.length) return;
    if (rowMin === max && !(prefixOn && best <= max)) {
      this.visitTight(lo, hi, bytes, depth, prefixOn);
      return;
    }
    while (i < hi) {
      const at = this.offsets[i]! + bytes;
      const lead = this.bytes[at]!;
      const width = lead < 0x80 ? 1 : lead < 0xe0 ? 2 : lead < 0xf0 ? 3 : 4;
      const end = this.childEnd(i, hi, bytes, bytes + width);
      this.chars[depth] = decode(this.bytes, at, width);
      // A child whose row is out of reach is not visited: nothing below it can match, though with
      // a prefix its whole subtree still matches at the distance reached above it.
      if (this.nextRow(depth) <= max) this.visit(i, end, bytes + width, depth + 1, best, prefixOn);
      else if (prefixOn && best <= max) {
        this.prefixes.push({ lo: i, hi: end, distance: best, depth: depth + 1, subtree: true });
      }
      i = end;
    }
  }

  /**
   * Every value of this node's row is at max: from here a cell keeps its value only by following
   * its diagonal with exact matches (or, at the first step, by completing a swap), every other
   * step adds an edit. So the terms below within reach are those that continue with the rest of
   * the query after such a cell, at exactly max edits: one search per diagonal instead of a walk
   * down, level by level, through every child.
   */
  private visitTight(lo: number, hi: number, bytes: number, depth: number, prefixOn: boolean): void {
    const q = this.query;
    const m = q.length;
    const max = this.max;
    const row = this.rows[depth]!;
    const swap = depth > 0;
    const previousChar = swap ? this.chars[depth - 1]! : -1;
    const twoAbove = swap ? this.rows[depth - 1]! : row;
    let emitted = this.prefixes.length;
    const wordsFrom = this.whole.length;
    for (let j = 0; j < m; j++) {
      if (row[j] === max) this.takeTarget(lo, hi, bytes, depth, m - j, this.rest[j]!, prefixOn);
      // A swap of q[j] and q[j + 1] that completes at the first step below: q[j], then q[j + 2..].
      if (swap && j + 2 <= m && q[j + 1] === previousChar && twoAbove[j]! + 1 <= max) {
        this.takeTarget(lo, hi, bytes, depth, m - j - 1, this.swapped[j]!, prefixOn);
      }
    }
    // Targets can come out of order, and nest (a query repeating itself, "abab" then "ab").
    if (this.prefixes.length - emitted > 1) {
      const mine = this.prefixes.splice(emitted).sort((x, y) => x.lo - y.lo || y.hi - x.hi);
      let end = -1;
      for (const r of mine) {
        if (r.lo >= end) {
          this.prefixes.push(r);
          end = r.hi;
        }
      }
      emitted = this.prefixes.length;
    }
    if (this.whole.length - wordsFrom > 1) {
      const mine = this.whole.splice(wordsFrom).sort((x, y) => x.lo - y.lo);
      for (let k = 0; k < mine.length; k++) if (k === 0 || mine[k]!.lo !== mine[k - 1]!.lo) this.whole.push(mine[k]!);
    }
  }

  /** The terms below a tight node that continue with `encoded` (`length` code points), at max. */
  private takeTarget(
    lo: number,
    hi: number,
    bytes: number,
    depth: number,
    length: number,
    encoded: Uint8Array,
    prefixOn: boolean,
  ): void {
    const [a, b] = this.childRange(lo, hi, bytes, encoded);
    if (a === b) return;
    if (prefixOn) this.prefixes.push({ lo: a, hi: b, distance: this.max, depth: depth + length, subtree: true });
    if (this.wantWhole && this.offsets[a + 1]! - this.offsets[a]! === bytes + encoded.length) {
      this.whole.push({ lo: a, hi: a + 1, distance: this.max, depth: depth + length, subtree: false });
    }
  }

  /** The terms of [lo, hi) whose bytes from `bytes` on start with `encoded`. */
  private childRange(lo: number, hi: number, bytes: number, encoded: Uint8Array): [number, number] {
    let a = lo;
    let b = hi;
    while (a < b) {
      const mid = (a + b) >>> 1;
      if (this.compareAt(mid, bytes, encoded) < 0) a = mid + 1;
      else b = mid;
    }
    const start = a;
    b = hi;
    while (a < b) {
      const mid = (a + b) >>> 1;
      if (this.compareAt(mid, bytes, encoded) === 0) a = mid + 1;
      else b = mid;
    }
    return [start, a];
  }

  /** Term k's bytes from `bytes` on against `encoded`: below, starting with it (0), or above. */
  private compareAt(k: number, bytes: number, encoded: Uint8Array): number {
    const at = this.offsets[k]! + bytes;
    const available = this.offsets[k + 1]! - at;
    const data = this.bytes;
    for (let j = 0; j < encoded.length; j++) {
      if (j >= available) return -1;
      const d = data[at + j]! - encoded[j]!;
      if (d !== 0) return d;
    }
    return 0;
  }

  /**
   * rows[depth + 1] from rows[depth] (and rows[depth - 1] for swaps) and chars[depth]; returns its
   * smallest value. Cells more than max away from the diagonal are at least max + 1 and are set to
   * exactly that: a value above max only ever matters as "out of reach".
   */
  private nextRow(depth: number): number {
    const q = this.query;
    const m = q.length;
    const max = this.max;
    const out = max + 1;
    const above = this.rows[depth]!;
    const row = this.rows[depth + 1]!;
    const c = this.chars[depth]!;
    const previousChar = depth > 0 ? this.chars[depth - 1]! : -1;
    const twoAbove = depth > 0 ? this.rows[depth - 1]! : above;
    const i = depth + 1;
    row[0] = i < out ? i : out;
    let rowMin = row[0]!;
    const from = i - max > 1 ? i - max : 1;
    const to = i + max < m ? i + max : m;
    for (let j = 1; j < from; j++) row[j] = out;
    for (let j = from; j <= to; j++) {
      let d = above[j - 1]! + (q[j - 1] === c ? 0 : 1);
      const up = above[j]! + 1;
      if (up < d) d = up;
      const left = row[j - 1]! + 1;
      if (left < d) d = left;
      if (j > 1 && depth > 0 && q[j - 1] === previousChar && q[j - 2] === c) {
        const swap = twoAbove[j - 2]! + 1;
        if (swap < d) d = swap;
      }
      if (d > out) d = out;
      row[j] = d;
      if (d < rowMin) rowMin = d;
    }
    for (let j = to + 1; j <= m; j++) row[j] = out;
    return rowMin;
  }

  /**
   * The end of the run of terms from `i` (before hi) whose bytes [from, to) equal term i's: the
   * terms of [i, hi) already share every byte before `from`. Galloping from i, since most runs
   * below the first levels are a few terms long.
   */
  private childEnd(i: number, hi: number, from: number, to: number): number {
    let step = 1;
    let a = i + 1;
    while (a + step <= hi && this.sameBytes(a + step - 1, i, from, to)) {
      a += step;
      step *= 2;
    }
    let b = Math.min(a + step - 1, hi);
    while (a < b) {
      const mid = (a + b) >>> 1;
      if (this.sameBytes(mid, i, from, to)) a = mid + 1;
      else b = mid;
    }
    return a;
  }

  private sameBytes(k: number, i: number, from: number, to: number): boolean {
    const offsets = this.offsets;
    const at = offsets[k]!;
    if (offsets[k + 1]! - at < to) return false;
    const start = offsets[i]!;
    const data = this.bytes;
    for (let j = from; j < to; j++) if (data[at + j] !== data[start + j]) return false;
    return true;
  }
}

function decode(bytes: Uint8Array, at: number, width: number): number {
  const lead = bytes[at]!;
  if (width === 1) return lead;
  let cp = lead & (width === 2 ? 0x1f : width === 3 ? 0x0f : 0x07);
  for (let k = 1; k < width; k++) cp = (cp << 6) | (bytes[at + k]! & 0x3f);
  return cp;
}
