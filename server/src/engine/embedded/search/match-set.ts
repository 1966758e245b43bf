// The whole set of a segment's matches, for what the top k alone cannot give: the total (counted
// exactly up to a cap), the documents facets count over, and the order of an explicit sort.
//
// The set is the union of the posting sources of the streams of one level (planning.ts): exact
// matches, or when the version has none, matches with typos (docs/ranking.md, Typos). Each exact
// source holds only documents the query matches (every token is found, which is the whole
// matching rule), so exact members are matched only against the filter and the version; members
// of typo sources are matched in full (the fuzzy term sets are wider than a match).
import { END, RunSource, UnionSource, type Source } from "../postings/sources.ts";
import type { FilterCandidates } from "../columns/filter-columns.ts";
import type { Matcher } from "./matching.ts";
import type { Stream } from "./planning.ts";
import type { QueryTerms } from "./query-terms.ts";
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
  private readonly shadowed: number;
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
    shadowed: number,
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

  private level(level: Level): { source: Source | null; terms: QueryTerms | null; sources: Source[] } {
    const streams = this.streams.filter((s) => typosOf(s.bound) > 0 === (level === "typos"));
    if (streams.length === 0) return { source: null, terms: null, sources: [] };
    const sources = streams.map((s) => s.source("weight")!);
    const terms = streams[0]!.terms();
    if (terms === null || terms === undefined) return { source: null, terms: null, sources: [] };
    return { source: sources.length === 1 ? sources[0]! : new UnionSource(sources), terms, sources };
  }

  /**
   * The number of matches at a level, exact below `cap`; from it on a lower bound (at least cap).
   * Big exact sets are bounded from their largest posting run without reading it.
   */
  count(level: Level, cap: number): MatchCount {
    const { source, terms, sources } = this.level(level);
    if (source === null || terms === null) return { count: 0, exact: true };
    const exactLevel = level === "exact";
    if (exactLevel && !this.matcher.hasFilter) {
      // Every member matches: the largest run, less the documents the version replaced, is a
      // lower bound; past the cap the set need not be read.
      const bound = Math.max(...sources.map(largestRun)) - this.shadowed;
      if (bound >= cap) return { count: bound, exact: false };
    }
    const matcher = this.matcher;
    const filterDocs = this.driver(source);
    if (filterDocs !== null) {
      // Exact members all match: a candidate is in the set when the query's postings hold it (a
      // seek) and it passes the filter and the version. With typos, each is matched in full.
      const docs = filterDocs.docs();
      const query = exactLevel ? source.open() : null;
      let count = 0;
      for (let i = 0; i < docs.length; i++) {
        const doc = docs[i]!;
        if (query !== null && query.seek(doc) !== doc) continue;
        if (matcher.rank(doc, terms, exactLevel) < 0) continue;
        if (++count >= cap) return { count, exact: false };
      }
      return { count, exact: true };
    }
    const it = source.open();
    let count = 0;
    const check = exactLevel && !matcher.restricts ? null : terms;
    for (let doc = it.next(); doc !== END; doc = it.next()) {
      if (check !== null && matcher.rank(doc, check, exactLevel) < 0) continue;
      if (++count >= cap) return { count, exact: false };
    }
    return { count, exact: true };
  }

  /**
   * Every match at a level, ascending, with its packed rank (bucket * 4 + fine) when `ranks` (for
   * sorting); ranks cost a full match per document, so counting sets leave them out.
   */
  collect(level: Level, ranks: boolean): { docs: Uint32Array; ranks: Uint32Array | null } {
    const { source, terms } = this.level(level);
    if (source === null || terms === null) return { docs: new Uint32Array(0), ranks: null };
    const exactLevel = level === "exact";
    const matcher = this.matcher;
    const check = exactLevel && !matcher.restricts && !ranks ? null : terms;
    // Sized by the source's bound (at most every document): one allocation, not a doubling series.
    let docs = new Uint32Array(Math.max(16, Math.min(this.documents, source.count(0, END))));
    let packed = ranks ? new Uint32Array(docs.length) : null;
    let n = 0;
    const filterDocs = this.driver(source);
    const candidates = filterDocs?.docs();
    let next = 0;
    const it = candidates === undefined ? source.open() : null;
    const step = it !== null ? () => it.next() : () => (next < candidates!.length ? candidates![next++]! : END);
    for (let doc = step(); doc !== END; doc = step()) {
      let rank = 0;
      if (candidates !== undefined) {
        rank = matcher.rank(doc, terms);
        if (rank < 0) continue;
      } else if (check !== null) {
        rank = matcher.rank(doc, check, exactLevel && !ranks);
        if (rank < 0) continue;
      }
      if (n === docs.length) {
        const grown = new Uint32Array(n * 2);
        grown.set(docs);
        docs = grown;
        if (packed !== null) {
          const more = new Uint32Array(n * 2);
          more.set(packed);
          packed = more;
        }
      }
      docs[n] = doc;
      if (packed !== null) packed[n] = rank;
      n++;
    }
    return { docs: docs.subarray(0, n), ranks: packed === null ? null : packed.subarray(0, n) };
  }
}

/** The size of the largest single run a source is the union of (0 for intersections). */
function largestRun(source: Source): number {
  if (source instanceof RunSource) return source.size;
  const runs = source.runs();
  if (runs === null) return 0;
  let most = 0;
  for (const run of runs) if (run.size > most) most = run.size;
  return most;
}
