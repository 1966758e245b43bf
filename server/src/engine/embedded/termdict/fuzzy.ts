// Terms of a sorted dictionary within an edit distance of a query token (docs/ranking.md, Typos).
//
// A sorted string table is a trie in disguise: the strings sharing a prefix are one contiguous
// range. The walk descends that trie one code point at a time carrying one row of the
// edit-distance matrix per level (a Levenshtein automaton computed lazily, as Lucene's FuzzyQuery
// and tantivy's fuzzy term query run one over their term FSTs), and abandons a branch as soon as
// its row's smallest value exceeds the bound: rows never decrease downwards, so nothing below can
// match. Distances are the restricted Damerau–Levenshtein of engine/typos.ts, over code points.
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
  const walk = new FuzzyWalk(dict, query, max, prefix);
  walk.visit(0, dict.count, 0, 0, Number.POSITIVE_INFINITY);
  return walk.found;
}

/** Ranges of at most this many terms are stepped through child by child (visitMatchingChildren). */
const SCAN_BELOW = 48;

class FuzzyWalk {
  readonly found: FuzzyRange[] = [];
  private readonly bytes: Buffer;
  private readonly offsets: Uint32Array;
  private readonly query: Int32Array;
  private readonly max: number;
  private readonly prefix: boolean;
  /** rows[d]: the matrix row of the trie node at depth d (code points). */
  private readonly rows: Int32Array[] = [];
  /** chars[d]: the code point that leads to depth d + 1. */
  private readonly chars: Int32Array;
  /** Each query character as UTF-8. */
  private readonly encoded = new Map<number, Uint8Array>();
  /** Scratch per depth: the characters a tight node's children may have (visitMatchingChildren). */
  private readonly candidates: Int32Array[] = [];

  constructor(dict: SortedStrings, query: string, max: number, prefix: boolean) {
    this.bytes = dict.bytes;
    this.offsets = dict.offsets;
    this.query = Int32Array.from(query, (ch) => ch.codePointAt(0)!);
    this.max = max;
    this.prefix = prefix;
    const m = this.query.length;
    // No node deeper than m + max can be within max edits: its row is at least depth - m.
    for (let d = 0; d <= m + max + 1; d++) this.rows.push(new Int32Array(m + 1));
    for (let j = 0; j <= m; j++) this.rows[0]![j] = j <= max ? j : max + 1;
    this.chars = new Int32Array(m + max + 2);
    for (const c of this.query) this.encoded.set(c, Buffer.from(String.fromCodePoint(c), "utf8"));
    for (let d = 0; d < this.rows.length; d++) this.candidates.push(new Int32Array(2 * m + 2));
  }

  /**
   * The trie node of terms [lo, hi), which share their first `bytes` bytes (`depth` code points),
   * whose row is rows[depth]; `best` is the smallest last-column value on the path above it.
   */
  visit(lo: number, hi: number, bytes: number, depth: number, best: number): void {
    const m = this.query.length;
    const row = this.rows[depth]!;
    let rowMin = row[0]!;
    for (let j = 1; j <= m; j++) if (row[j]! < rowMin) rowMin = row[j]!;
    const here = row[m]!;
    if (this.prefix) {
      const nodeBest = Math.min(best, here);
      // Nothing below can come closer than this row's minimum: the whole subtree is at nodeBest.
      if (nodeBest <= this.max && rowMin >= nodeBest) {
        this.found.push({ lo, hi, distance: nodeBest, depth, subtree: true });
        return;
      }
      if (rowMin > this.max) return;
      best = nodeBest;
    } else if (rowMin > this.max) {
      return;
    }
    let i = lo;
    // The term equal to the node's prefix, if any, sorts first.
    if (this.offsets[i + 1]! - this.offsets[i]! === bytes) {
      const distance = this.prefix ? best : here;
      if (distance <= this.max) this.found.push({ lo: i, hi: i + 1, distance, depth, subtree: false });
      i++;
    }
    if (depth + 1 >= this.rows.length) return;
    if (rowMin === this.max && !(this.prefix && best <= this.max)) {
      this.visitMatchingChildren(i, hi, bytes, depth, best);
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
      if (this.nextRow(depth) <= this.max) this.visit(i, end, bytes + width, depth + 1, best);
      else if (this.prefix && best <= this.max) {
        this.found.push({ lo: i, hi: end, distance: best, depth: depth + 1, subtree: true });
      }
      i = end;
    }
  }

  /**
   * Every value of this node's row is at least max: a child stays within reach only by matching
   * the query character after a cell at max (or by completing a swap), since any other character
   * adds an edit everywhere. Those one to three children are visited alone, instead of computing
   * a row for every child (all but a handful of the rows a walk with two typos would compute).
   */
  private visitMatchingChildren(lo: number, hi: number, bytes: number, depth: number, best: number): void {
    const count = this.tightCandidates(depth);
    const candidates = this.candidates[depth]!;
    // A short range is cheaper to step through child by child than to search once per character.
    if (hi - lo <= SCAN_BELOW) {
      for (let i = lo; i < hi; ) {
        const at = this.offsets[i]! + bytes;
        const lead = this.bytes[at]!;
        const width = lead < 0x80 ? 1 : lead < 0xe0 ? 2 : lead < 0xf0 ? 3 : 4;
        const end = this.childEnd(i, hi, bytes, bytes + width);
        const char = decode(this.bytes, at, width);
        for (let k = 0; k < count; k++) {
          if (candidates[k] !== char) continue;
          this.chars[depth] = char;
          if (this.nextRow(depth) <= this.max) this.visit(i, end, bytes + width, depth + 1, best);
          break;
        }
        i = end;
      }
      return;
    }
    for (let k = 0; k < count; k++) {
      const char = candidates[k]!;
      const encoded = this.encoded.get(char)!;
      const [a, b] = this.childRange(lo, hi, bytes, encoded);
      if (a === b) continue;
      this.chars[depth] = char;
      if (this.nextRow(depth) <= this.max) this.visit(a, b, bytes + encoded.length, depth + 1, best);
    }
  }

  /**
   * The characters a child of a tight node at `depth` may have, distinct and ascending (code point
   * order is the dictionary's byte order, so ranges come out sorted), in `candidates[depth]`;
   * returns how many. See nextRow: a cell stays at max only on the diagonal after a cell at max, or by a swap.
   */
  private tightCandidates(depth: number): number {
    const q = this.query;
    const m = q.length;
    const max = this.max;
    const row = this.rows[depth]!;
    const candidates = this.candidates[depth]!;
    let count = 0;
    const add = (c: number) => {
      let k = count;
      for (let x = 0; x < count; x++) if (candidates[x] === c) return;
      while (k > 0 && candidates[k - 1]! > c) {
        candidates[k] = candidates[k - 1]!;
        k--;
      }
      candidates[k] = c;
      count++;
    };
    for (let j = 0; j < m; j++) if (row[j]! <= max) add(q[j]!);
    if (depth > 0) {
      const previousChar = this.chars[depth - 1]!;
      const twoAbove = this.rows[depth - 1]!;
      for (let j = 2; j <= m; j++) if (q[j - 1] === previousChar && twoAbove[j - 2]! + 1 <= max) add(q[j - 2]!);
    }
    return count;
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
