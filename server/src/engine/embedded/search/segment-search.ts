// Top-k search over one segment without scoring every match, in three steps:
//
//   planning.ts        the query's matches split into streams whose documents share a best bucket
//                      (lexical.ts), exact ones first, then with typos; query-terms.ts resolves the
//                      tokens in the term dictionary (fuzzily for typos: termdict/fuzzy.ts)
//   reading-orders.ts  each stream read best first, in the order that ranks its documents (weight,
//                      length or distance), stopping once the best bucket has k hits
//   matching.ts        each document read checked: its exact bucket and fine value (from the
//                      forward index), the version's shadowed documents, the filter, its distance
import type { SearchRequest } from "../../../ports/engine.ts";
import type { Segment } from "../segment/segment.ts";
import { filterCandidates } from "../columns/filter-columns.ts";
import { MatchSet } from "./match-set.ts";
import { Matcher } from "./matching.ts";
import { planStreams } from "./planning.ts";
import { StreamReader } from "./reading-orders.ts";

/** Documents of the segment, as a search tests them (the ones the version hides). */
export interface DocSet {
  readonly size: number;
  has(doc: number): boolean;
}

/** The documents a version hides in a segment, listed too (a count and a checkpoint go through them). */
export type HiddenDocs = DocSet & Iterable<number>;

export interface SearchTuning {
  /** A prefix longer than the prefix index spanning more terms than this is merged into one run. */
  maxUnionTerms: number;
  /** In geo queries, streams (or equal-weight groups) with at most this many matches are read whole. */
  smallStream: number;
  /**
   * A nearest-first read gives up (and reads whole) after this many times the work of reading
   * whole: a stream whose best bucket is rare is cheaper to read in one go.
   */
  nearestBudget: number;
  /**
   * Intersections whose smallest input has at most this many entries are computed exactly before
   * a nearest-first read: their per-cell counts are otherwise loose upper bounds that make the
   * walk open many cells where the inputs never meet.
   */
  exactIntersection: number;
  /**
   * An intersection read in order that has yielded this many matches without filling the
   * stream's best bucket, mostly through leapfrog steps that found nothing, is computed whole by
   * bitmap from there on (intersectionByBitmap).
   */
  selectiveAfter: number;
  /** totalHits is exact up to this many matches; past it a lower bound (docs/api.md, Pages). */
  exactTotalUpTo: number;
  /**
   * The whole set of matches is read from the filter's value postings instead of the query's
   * when those are this many times fewer than the query's bound (match-set.ts).
   */
  filterFirst: number;
}

export const DEFAULT_TUNING: SearchTuning = {
  maxUnionTerms: 32,
  smallStream: 256,
  nearestBudget: 2,
  exactIntersection: 50_000,
  selectiveAfter: 64,
  exactTotalUpTo: 10_000,
  filterFirst: 4,
};

export interface SegmentHit {
  doc: number;
  bucket: number;
  /** The fine tie-break value (lexical.ts). */
  fine: number;
  /** Infinity when the query has no point or the document no coordinates. */
  distance: number;
}

export interface SegmentQuery {
  tokens: string[];
  prefixLast: boolean;
  request: SearchRequest;
  /** Documents replaced or deleted by the version's changes (and hidden by a layered major). */
  shadowed: HiddenDocs;
}

export interface SegmentSearch {
  /** The best `request.limit` hits (none when the caller ranks the match set itself: topK false). */
  hits: SegmentHit[];
  /** The whole set of matches, read on demand (match-set.ts). */
  matches: MatchSet;
  matcher: Matcher;
}

export function searchSegment(segment: Segment, query: SegmentQuery, tuning: SearchTuning, topK = true): SegmentSearch {
  const streams = planStreams(segment, query, tuning);
  const matcher = new Matcher(segment, query);
  const filter = query.request.filter;
  const candidates = filter ? filterCandidates(filter, segment) : null;
  const matches = new MatchSet(streams, matcher, query.shadowed, candidates, tuning.filterFirst, segment.docCount);
  if (streams.length === 0 || !topK) return { hits: [], matches, matcher };
  return { hits: new StreamReader(segment, query.request, matcher, tuning).run(streams), matches, matcher };
}
