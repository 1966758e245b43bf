// The whole set of a segment's matches, for what the top k alone cannot give: the total (counted
// exactly up to a cap), the documents facets count over, and the order of an explicit sort.
//
// The set is one posting expression over the terms of one level (query-terms.ts): exact matches,
// or when the version has none, matches with typos (docs/ranking.md, Typos). Its members are
// exactly the documents the query matches (every token found, within its typos: the whole
// matching rule; the buckets only order them), so they are checked against the filter and the
// version only. A selective filter's value postings may drive the read instead.
import { AndSource, END, type RunSource, UnionSource, type Source } from "../postings/sources.ts";
import { isDense, runBitmap } from "../postings/run-bitmaps.ts";
import { lowerBound } from "../util/arrays.ts";
import type { FilterCandidates } from "../columns/filter-columns.ts";
import type { Matcher } from "./matching.ts";
import type { Stream } from "./planning.ts";
import type { QueryTerms } from "./query-terms.ts";
import type { HiddenDocs } from "./segment-search.ts";
import { typosOf } from "./lexical.ts";

export type Level = "exact" | "typos";

export interface MatchCount {
  count: number;
  /** False when counting stopped at the cap: count is then a lower bound. */
  exact: boolean;
}

export class MatchSet {
  private readonly streams: Stream[];
  private readonly matcher: Matcher;
  /** The documents the version hides. */
  private readonly shadowed: HiddenDocs;
  private readonly candidates: FilterCandidates | null;
  private readonly filterFirst: number;
  private readonly documents: number;

  /**
   * `candidates`: what the filter bounds the set to (filter-columns.ts), read instead of the
   * query's postings when `filterFirst` times smaller than their bound.
   */
  constructor(
    streams: Stream[],
    matcher: Matcher,
    shadowed: HiddenDocs,
    candidates: FilterCandidates | null,
    filterFirst: number,
    documents: number,
  ) {
    this.documents = documents;
    this.streams = streams;
    this.matcher = matcher;
    this.shadowed = shadowed;
    this.candidates = candidates;
    this.filterFirst = filterFirst;
  }

  /** The filter's candidates when they are the cheaper side of the set, else null. */
  private driver(source: Source): FilterCandidates | null {
    const c = this.candidates;
    return c !== null && c.size * this.filterFirst < source.count(0, END) ? c : null;
  }

  /**
   * The level's set as one posting expression over its terms: every token found (the last as a
   * prefix with scope=title; in the title or in data text with scope=all). Members of it are
   * exactly the documents the query matches at that level (the streams split the same set by
   * bucket), so only the filter and the version remain to check.
   */
  private level(level: Level): { terms: QueryTerms; source: () => Source; inputs: () => RunSource[][] } | null {
    const stream = this.streams.find((s) => typosOf(s.bound) > 0 === (level === "typos"));
    const terms = stream?.terms();
    if (terms === null || terms === undefined) return null;
    const n = terms.n;
    const source = () => {
      const parts: Source[] = [];
      for (let i = 0; i < n; i++) {
        if (terms.prefixLast && i === n - 1) parts.push(terms.prefixSource("all", "weight"));
        else if (terms.prefixLast) parts.push(terms.wholeSource(i, "all", "weight"));
        else parts.push(new UnionSource([terms.wholeSource(i, "all", "weight"), terms.dataSource(i)]));
      }
      return parts.length === 1 ? parts[0]! : new AndSource(parts);
    };
    // The same sets as unmerged runs, for counting without building (and merging) the sources.
    const inputs = () => Array.from({ length: n }, (_, i) => terms.matchRuns(i, "all"));
    return { terms, source, inputs };
  }

  /**
   * The number of matches at a level, exact below `cap`; from it on a lower bound (at least cap).
   * Big exact sets are bounded from their largest posting run without reading it.
   */
  count(level: Level, cap: number): MatchCount {
    const found = this.level(level);
    if (found === null) return { count: 0, exact: true };
    const { terms } = found;
    if (!this.matcher.hasFilter) {
      // Every member matches: with one token, its largest run, less the documents the version
      // replaced, is a lower bound; past the cap the set need not be read. Otherwise the set is
      // counted in bitmaps, less the documents the version hides.
      const inputs = found.inputs();
      const hidden = this.shadowed.size;
      const bound = inputs.length === 1 ? inputs[0]!.reduce((most, r) => Math.max(most, r.size), 0) : 0;
      if (bound - hidden >= cap) return { count: bound - hidden, exact: false };
      return countByBitmap(inputs, this.documents, cap, hidden > 0 ? this.shadowed : null);
    }
    const source = found.source();
    const matcher = this.matcher;
    const filterDocs = this.driver(source);
    if (filterDocs !== null) {
      // A candidate is in the set when the level's postings hold it (a seek) and it passes the
      // filter and the version.
      const docs = filterDocs.docs();
      const query = source.open();
      let count = 0;
      for (let i = 0; i < docs.length; i++) {
        const doc = docs[i]!;
        if (query.seek(doc) !== doc) continue;
        if (matcher.rank(doc, terms, true) < 0) continue;
        if (++count >= cap) return { count, exact: false };
      }
      return { count, exact: true };
    }
    const it = source.open();
    let count = 0;
    const check = matcher.restricts;
    for (let doc = it.next(); doc !== END; doc = it.next()) {
      if (check && matcher.rank(doc, terms, true) < 0) continue;
      if (++count >= cap) return { count, exact: false };
    }
    return { count, exact: true };
  }

  /**
   * A bucket no member of the level's set ranks above: the bound of its first stream that holds
   * a document (the streams of a level split its set by bucket, best bound first).
   */
  bestBound(level: Level): number {
    const streams = this.streams.filter((s) => typosOf(s.bound) > 0 === (level === "typos"));
    streams.sort((a, b) => a.bound - b.bound);
    for (const s of streams) {
      const source = s.source("weight");
      // Unknown without reading it whole: its bound is still a bound.
      if (source === null || source.open().next() !== END) return s.bound;
    }
    return Infinity;
  }

  /** The packed rank (bucket * 4 + fine) of members of the level's set (collect's docs). */
  ranker(level: Level): (doc: number) => number {
    const terms = this.level(level)?.terms;
    const matcher = this.matcher;
    return terms === undefined ? () => -1 : (doc) => matcher.rank(doc, terms, false);
  }

  /**
   * Every match at a level, ascending (views of buffers the next search reuses: read them before
   * anything awaits), with its packed rank (bucket * 4 + fine) when `ranks` (for
   * sorting); ranks cost a full match per document, so counting sets leave them out.
   */
  collect(level: Level, ranks: boolean): { docs: Uint32Array; ranks: Uint32Array | null } {
    const found = this.level(level);
    if (found === null) return { docs: new Uint32Array(0), ranks: null };
    const { terms } = found;
    const source = found.source();
    const matcher = this.matcher;
    // Members match: only the filter and the version are checked, unless ranks need the full match.
    const check = ranks || matcher.restricts;
    // Buffers reused between searches (the caller is done with them before the next one), sized
    // by the source's bound (at most every document): facet queries read 100,000s of documents.
    const bound = Math.max(16, Math.min(this.documents, source.count(0, END)));
    if (collected.docs.length < bound) collected.docs = new Uint32Array(bound);
    if (ranks && collected.ranks.length < bound) collected.ranks = new Uint32Array(bound);
    let docs = collected.docs;
    let packed = ranks ? collected.ranks : null;
    let n = 0;
    const candidates = this.driver(source)?.docs();
    const it = source.open();
    let next = 0;
    // From the filter's candidates, those the level's postings hold (a seek); else the postings.
    const step =
      candidates === undefined
        ? () => it.next()
        : () => {
            while (next < candidates.length) {
              const doc = candidates[next++]!;
              if (it.seek(doc) === doc) return doc;
            }
            return END;
          };
    for (let doc = step(); doc !== END; doc = step()) {
      let rank = 0;
      if (check) {
        rank = matcher.rank(doc, terms, !ranks);
        if (rank < 0) continue;
      }
      if (n === docs.length) {
        const grown = new Uint32Array(n * 2);
        grown.set(docs);
        docs = grown;
        collected.docs = grown;
        if (packed !== null) {
          const more = new Uint32Array(n * 2);
          more.set(packed);
          packed = more;
          collected.ranks = more;
        }
      }
      docs[n] = doc;
      if (packed !== null) packed[n] = rank;
      n++;
    }
    return { docs: docs.subarray(0, n), ranks: packed === null ? null : packed.subarray(0, n) };
  }
}

/** The buffers collect() fills, reused from search to search. */
const collected = { docs: new Uint32Array(0), ranks: new Uint32Array(0) };

/** Documents per block of the blockwise count: its bitmaps (2,048 words) stay in L1. */
const BLOCK = 1 << 16;
const BLOCK_WORDS = BLOCK >>> 5;
/** Reused bitmaps of one block, left cleared after each use. */
const marks = [new Int32Array(BLOCK_WORDS), new Int32Array(BLOCK_WORDS)];

/**
 * The size of the intersection of unions of runs, counted in bitmaps in tight loops over the runs
 * (cheaper than merging many runs and leapfrogging), one block of documents at a time in
 * ascending order: in a block the smallest input is marked, each next one keeps the marked
 * documents it holds, and the last counts them. Blockwise, the count stops at the cap having read
 * only the blocks before it (two common words: a fraction of both lists), and the bitmaps stay in
 * L1 instead of spanning every document. Dense runs (a 32nd of the documents or more: common
 * words, short prefixes) are never read as lists: their cached bitmaps (run-bitmaps.ts) are
 * ANDed in by words, or, when every input but the smallest is dense, only the smallest is read
 * and its documents tested a bit each (countAgainstBitmaps).
 */
export function countByBitmap(
  inputs: RunSource[][],
  documents: number,
  cap: number,
  hidden: HiddenDocs | null = null,
): MatchCount {
  const size = (runs: RunSource[]) => runs.reduce((sum, r) => sum + r.size, 0);
  const order = inputs.map((runs) => ({ runs, size: size(runs) })).sort((a, b) => a.size - b.size);
  const rest = order.slice(1);
  const smallest = order[0]!;
  const bitmapWords = documents / 32;
  if (rest.length > 0) {
    // Every other input dense (common words, short prefixes): the smallest input's entries are
    // read and each tested by a bit per run (run-bitmaps.ts), unless ANDing the bitmaps' words
    // (a block at a time below) is cheaper.
    const runs = rest.reduce((sum, input) => sum + input.runs.length, 0);
    if (
      rest.every((input) => input.runs.every((r) => isDense(r, documents))) &&
      smallest.size * 4 < bitmapWords * (runs + smallest.runs.length)
    ) {
      return countAgainstBitmaps(
        smallest.runs,
        rest.map((input) => input.runs.map((r) => runBitmap(r, documents, true))),
        documents,
        cap,
        hidden,
      );
    }
    // Probing from a rare input costs a gallop per other run for each of its documents; marking
    // reads every entry of the sparse runs and a block's words per dense run.
    let probe = 0;
    let mark = 0;
    for (const r of smallest.runs) mark += isDense(r, documents) ? bitmapWords : r.size;
    for (const input of rest) {
      for (const r of input.runs) {
        probe += isDense(r, documents) ? 2 : 8;
        mark += isDense(r, documents) ? bitmapWords : r.size;
      }
    }
    if (smallest.runs.length <= 4 && smallest.size * (8 + probe) < mark) {
      return countByProbing(
        smallest.runs,
        rest.map((input) => input.runs),
        documents,
        cap,
        hidden,
      );
    }
  }
  // Dense runs (run-bitmaps.ts) are not read: their bitmap's words are ANDed in, a block's 2,048
  // words per run instead of its (32 or more times as many) entries. The others are read, with
  // each run's read position; a run's documents in a block are those from it below the block's end.
  const dense = order.map((input) =>
    input.runs.filter((r) => isDense(r, documents)).map((r) => runBitmap(r, documents, true)),
  );
  const sparse = order.map((input) => input.runs.filter((r) => !isDense(r, documents)));
  const cursors = sparse.map((runs) => Uint32Array.from(runs, (r) => r.start));
  // The version's hidden documents in order: each block's count less those among its members.
  // Until then the count may hold them, so it stops at the cap plus their number.
  const unseen = hidden === null ? null : sortedDocs(hidden);
  let nextHidden = 0;
  const stop = cap + (unseen?.length ?? 0);
  const stopped = (count: number): MatchCount => ({ count: count - (unseen?.length ?? 0), exact: false });
  let count = 0;
  for (let lo = 0; lo < documents; lo += BLOCK) {
    const hi = lo + BLOCK;
    const base = lo >>> 5;
    const words = Math.min(BLOCK_WORDS, (documents - lo + 31) >>> 5);
    let current: Int32Array | null = null;
    let any = true;
    let k = 0;
    for (; k < order.length && any; k++) {
      const last = k === order.length - 1;
      const next: Int32Array = marks[current === marks[0] ? 1 : 0]!;
      any = false;
      for (const bitmap of dense[k]!) {
        let seen = 0;
        for (let w = 0; w < words; w++) {
          const v = current === null ? bitmap[base + w]! : current[w]! & bitmap[base + w]!;
          // The last input counts the documents it marks first (two of its runs may share some).
          if (last && (v & ~next[w]!) !== 0) count += popcount(v & ~next[w]!);
          next[w]! |= v;
          seen |= v;
        }
        if (seen !== 0) any = true;
      }
      if (last && count >= stop) {
        current?.fill(0);
        next.fill(0);
        return unseen === null ? { count: cap, exact: false } : stopped(count);
      }
      const runs = sparse[k]!;
      const at = cursors[k]!;
      for (let r = 0; r < runs.length; r++) {
        const run = runs[r]!;
        const { values, end } = run;
        // Blocks skipped since (an earlier input had none there) are passed over by galloping.
        let i = gallop(values, at[r]!, end, lo);
        for (; i < end; i++) {
          const doc = values[i]!;
          if (doc >= hi) break;
          const word = (doc - lo) >>> 5;
          const bit = 1 << (doc & 31);
          if ((current === null || (current[word]! & bit) !== 0) && (next[word]! & bit) === 0) {
            next[word]! |= bit;
            any = true;
            if (last && ++count >= stop) {
              current?.fill(0);
              next.fill(0);
              return unseen === null ? { count, exact: false } : stopped(count);
            }
          }
        }
        at[r] = i;
      }
      current?.fill(0);
      current = next;
    }
    if (unseen !== null) {
      // `current` holds the block's members when every input was read (else it counted none).
      for (; nextHidden < unseen.length && unseen[nextHidden]! < hi; nextHidden++) {
        const doc = unseen[nextHidden]!;
        if (k === order.length && any && (current![(doc - lo) >>> 5]! & (1 << (doc & 31))) !== 0) count--;
      }
    }
    current?.fill(0);
    // Checked at each block's end, where the count is exact so far: within a block it stops only
    // at the cap plus every hidden document, which many queries never reach.
    if (unseen !== null && count >= cap) return { count, exact: false };
  }
  if (unseen !== null && count >= cap) return { count, exact: false };
  return { count, exact: true };
}

/** A version's hidden documents in ascending order, sorted once per version. */
const sortedHidden = new WeakMap<HiddenDocs, Uint32Array>();
function sortedDocs(hidden: HiddenDocs): Uint32Array {
  let sorted = sortedHidden.get(hidden);
  if (sorted === undefined || sorted.length !== hidden.size) {
    sorted = Uint32Array.from(hidden).sort();
    sortedHidden.set(hidden, sorted);
  }
  return sorted;
}

/**
 * The size of the intersection when every input but the smallest is given as bitmaps (one per
 * run): the smallest input's entries are read once (a block at a time, marked so that a document
 * in two of its runs counts once) and each is tested in the bitmaps.
 */
function countAgainstBitmaps(
  smallest: RunSource[],
  others: Int32Array[][],
  documents: number,
  cap: number,
  hidden: HiddenDocs | null,
): MatchCount {
  const seen = marks[0]!;
  const single = smallest.length === 1;
  const at = Uint32Array.from(smallest, (r) => r.start);
  const k = others.length;
  let count = 0;
  for (let lo = 0; lo < documents; lo += BLOCK) {
    const hi = lo + BLOCK;
    for (let r = 0; r < smallest.length; r++) {
      const { values, end } = smallest[r]!;
      let i = at[r]!;
      for (; i < end; i++) {
        const doc = values[i]!;
        if (doc >= hi) break;
        if (!single) {
          const w = (doc - lo) >>> 5;
          const b = 1 << (doc & 31);
          if ((seen[w]! & b) !== 0) continue;
          seen[w]! |= b;
        }
        const word = doc >>> 5;
        const bit = 1 << (doc & 31);
        let all = true;
        for (let o = 0; o < k && all; o++) {
          const maps = others[o]!;
          let found = false;
          for (let m = 0; m < maps.length && !found; m++) found = (maps[m]![word]! & bit) !== 0;
          all = found;
        }
        if (all && hidden?.has(doc)) continue;
        if (all && ++count >= cap) {
          if (!single) seen.fill(0);
          return { count, exact: false };
        }
      }
      at[r] = i;
    }
    if (!single) seen.fill(0);
  }
  return { count, exact: true };
}

/**
 * The intersection counted from its smallest input, each of whose documents is looked up in the
 * other inputs' few runs by galloping from a cursor that only moves forward: much cheaper than a
 * bitmap when one input is rare (a rare word next to a common prefix), and in ascending order it
 * stops at the cap without reading the rest of either side.
 */
function countByProbing(
  smallest: RunSource[],
  others: RunSource[][],
  documents: number,
  cap: number,
  hidden: HiddenDocs | null,
): MatchCount {
  // Dense runs are tested by a bit of their bitmap (run-bitmaps.ts), the others by galloping. A
  // bitmap not yet built is built only if galloping would read much of the run anyway.
  const probes = smallest.reduce((sum, r) => sum + r.size, 0);
  const dense: Int32Array[][] = [];
  const sparse: RunSource[][] = [];
  for (const runs of others) {
    const maps: Int32Array[] = [];
    const lists: RunSource[] = [];
    for (const r of runs) {
      const bitmap = isDense(r, documents) ? runBitmap(r, documents, probes * 16 >= r.size) : null;
      if (bitmap === null) lists.push(r);
      else maps.push(bitmap);
    }
    dense.push(maps);
    sparse.push(lists);
  }
  const cursors = sparse.map((runs) => Uint32Array.from(runs, (r) => r.start));
  const holds = (doc: number): boolean => {
    if (hidden?.has(doc)) return false;
    for (let k = 0; k < others.length; k++) {
      const maps = dense[k]!;
      let found = false;
      for (let m = 0; m < maps.length && !found; m++) found = (maps[m]![doc >>> 5]! & (1 << (doc & 31))) !== 0;
      const runs = sparse[k]!;
      const at = cursors[k]!;
      // A run left behind keeps its cursor: a later seek gallops from there, still correct.
      for (let r = 0; r < runs.length && !found; r++) {
        const run = runs[r]!;
        const p = gallop(run.values, at[r]!, run.end, doc);
        at[r] = p;
        if (p < run.end && run.values[p] === doc) found = true;
      }
      if (!found) return false;
    }
    return true;
  };
  let count = 0;
  if (smallest.length <= 4) {
    const it = smallest.length === 1 ? smallest[0]!.open() : new UnionSource(smallest).open();
    for (let doc = it.next(); doc !== END; doc = it.next()) {
      if (holds(doc) && ++count >= cap) return { count, exact: false };
    }
    return { count, exact: true };
  }
  // Many runs (a typo's or a long prefix's terms) are not merged: marked a block at a time, and
  // the marks read back in order.
  const bits = marks[0]!;
  const at = Uint32Array.from(smallest, (r) => r.start);
  for (let lo = 0; lo < documents; lo += BLOCK) {
    const hi = lo + BLOCK;
    let first = BLOCK_WORDS;
    let last = -1;
    for (let r = 0; r < smallest.length; r++) {
      const { values, end } = smallest[r]!;
      let i = at[r]!;
      for (; i < end; i++) {
        const doc = values[i]!;
        if (doc >= hi) break;
        const w = (doc - lo) >>> 5;
        bits[w]! |= 1 << (doc & 31);
        if (w < first) first = w;
        if (w > last) last = w;
      }
      at[r] = i;
    }
    for (let w = first; w <= last; w++) {
      for (let word = bits[w]!; word !== 0; word &= word - 1) {
        const doc = lo + w * 32 + (31 - Math.clz32(word & -word));
        if (holds(doc) && ++count >= cap) {
          bits.fill(0, first, last + 1);
          return { count, exact: false };
        }
      }
    }
    if (last >= 0) bits.fill(0, first, last + 1);
  }
  return { count, exact: true };
}

function popcount(v: number): number {
  v -= (v >>> 1) & 0x55555555;
  v = (v & 0x33333333) + ((v >>> 2) & 0x33333333);
  return (((v + (v >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
}

/** lowerBound from `lo` by doubling steps then a binary search: cheap when the target is near. */
function gallop(values: Uint32Array, lo: number, hi: number, target: number): number {
  if (lo >= hi || values[lo]! >= target) return lo;
  let step = 1;
  let below = lo;
  while (below + step < hi && values[below + step]! < target) {
    below += step;
    step <<= 1;
  }
  return lowerBound(values, below + 1, Math.min(hi, below + step + 1), target);
}
