// Planning a segment search: the query's matches split into *streams*, each a posting expression
// (postings/sources.ts) over the runs of any stored order, whose documents share a best bucket
// (lexical.ts) and a kind of last-token match, so that reading a stream in the order that ranks
// its documents yields them best first and can stop after k.
//
// Streams come in two levels: exact (every token at distance 0), then with typos (only read when
// nothing matched exactly: docs/ranking.md, Typos). With a purely lexical order, scope=title has
// four streams per level: {the first token at the title start, anywhere} x {the last token as a
// complete word, only as a prefix}, so that the fine order (complete before prefix) agrees with
// each stream's reading order. With weight or distance, one stream per tier holds both kinds, and
// the reader settles the fine order among equal weights and distances (reading-orders.ts).
import { AndSource, EMPTY, ExceptSource, UnionSource, type Source } from "../postings/sources.ts";
import type { Segment } from "../segment/segment.ts";
import {
  BUCKETS,
  FINE_PREFIX,
  LEX_TIERS,
  TIER_DATA,
  TIER_PHRASE,
  TIER_SCATTERED,
  TIER_START,
  bucketOf,
} from "./lexical.ts";
import { type Order, QueryTerms, type Where } from "./query-terms.ts";
import type { SearchTuning, SegmentQuery } from "./segment-search.ts";

export type { Order } from "./query-terms.ts";

/** Which last-token matches a stream holds (scope=title): complete words, or prefixes only. */
export type LastMatch = "complete" | "prefix" | "any";

export interface Stream {
  /** The best bucket of the stream: streams are read in this order. */
  bound: number;
  /** Bit b set when documents of bucket b are read from this stream (and from no other). */
  buckets: number;
  /** The last-token matches read from this stream. */
  last: LastMatch;
  /** The stream's documents may have a title equal to the query (see StreamReader.readInOrder). */
  exactTitles: boolean;
  /** The terms (at the stream's level) that rank its documents. */
  terms(): QueryTerms;
  /** The stream's postings in an order, or null when not stored in that order. */
  source(order: Order): Source | null;
}

/** Buckets of the given tiers, at typo count 0 (exact) or at every typo count from 1 (typos). */
function bucketMask(typos: boolean, tiers: readonly number[]): number {
  let mask = 0;
  for (let t = typos ? 1 : 0; t * LEX_TIERS < BUCKETS; t++) {
    for (const tier of tiers) mask |= 1 << bucketOf(t, tier);
    if (!typos) break;
  }
  return mask;
}

/** The streams of a query, best bound first. */
export function planStreams(segment: Segment, query: SegmentQuery, tuning: SearchTuning): Stream[] {
  const { tokens, prefixLast, request } = query;
  // Only a purely lexical order ranks complete words before prefixes right after the bucket;
  // with weight or distance in between, one stream per tier holds both (reading-orders.ts).
  const split = !request.weighted && !(request.geo && segment.geo.docs.length > 0);
  const streams: Stream[] = [];
  const exact = QueryTerms.exact(segment, tokens, prefixLast, tuning);
  // Tokens after the first match later title tokens at the start tier: their later runs suffice
  // where those hold every later occurrence (sections.ts); older segments read every run.
  const later: Where = segment.meta.laterRuns ? "else" : "all";
  if (exact !== null) streams.push(...levelStreams(query, () => exact, false, split, later));
  if (query.request.typoTolerance !== false) {
    // Resolved on first use: most queries match something exactly and never read these.
    let typos: QueryTerms | null | undefined;
    const typoTerms = () => {
      if (typos === undefined) typos = QueryTerms.withTypos(segment, tokens, prefixLast, tuning, split);
      return typos;
    };
    streams.push(...levelStreams(query, typoTerms, true, split, later));
  }
  return streams;
}

function levelStreams(
  query: SegmentQuery,
  lazyTerms: () => QueryTerms | null,
  typos: boolean,
  split: boolean,
  later: Where,
): Stream[] {
  const n = query.tokens.length;
  const terms = () => lazyTerms()!;
  const make = (
    tier: number,
    tiers: readonly number[],
    last: LastMatch,
    exactTitles: boolean,
    source: (t: QueryTerms, o: Order) => Source | null,
  ): Stream => ({
    bound: bucketOf(typos ? 1 : 0, tier),
    buckets: bucketMask(typos, tiers),
    last,
    exactTitles: exactTitles && !typos,
    terms,
    source: (o) => {
      const t = lazyTerms();
      return t === null ? EMPTY : source(t, o);
    },
  });
  const rest = (t: QueryTerms, o: Order, from: number, to: number, where: Where = "all") => {
    const out: Source[] = [];
    for (let i = from; i < to; i++) out.push(t.wholeSource(i, where, o));
    return out;
  };
  const and = (sources: Source[]): Source => (sources.length === 1 ? sources[0]! : new AndSource(sources));

  if (query.prefixLast) {
    const complete = (t: QueryTerms, where: Where, o: Order) => t.wholeSource(n - 1, where, o);
    const prefixed = (t: QueryTerms, where: Where, o: Order) => t.prefixSource(where, o);
    // Prefix-only streams skip, by a seek, the documents that have the last token as a complete
    // word anywhere (those are the complete streams'), instead of matching each of them.
    const only = (source: Source, t: QueryTerms, o: Order): Source => {
      const complete = t.completeSource(o);
      return complete === EMPTY ? source : new ExceptSource(source, complete);
    };
    if (!split) {
      if (n === 1) {
        return [
          make(TIER_START, [TIER_START], "any", true, (t, o) => prefixed(t, "start", o)),
          make(TIER_PHRASE, [TIER_PHRASE], "any", false, (t, o) => prefixed(t, "else", o)),
        ];
      }
      return [
        make(TIER_START, [TIER_START], "any", true, (t, o) =>
          and([t.wholeSource(0, "start", o), ...rest(t, o, 1, n - 1, later), prefixed(t, later, o)]),
        ),
        make(TIER_PHRASE, [TIER_PHRASE, TIER_SCATTERED], "any", false, (t, o) =>
          and([...rest(t, o, 0, n - 1), prefixed(t, "all", o)]),
        ),
      ];
    }
    if (n === 1) {
      return [
        // The title starts with the token, and has it as a complete word somewhere.
        make(TIER_START, [TIER_START], "complete", true, (t, o) => and([prefixed(t, "start", o), t.completeSource(o)])),
        make(TIER_START, [TIER_START], "prefix", false, (t, o) => only(prefixed(t, "start", o), t, o)),
        make(TIER_PHRASE, [TIER_PHRASE], "complete", false, (t, o) => complete(t, "else", o)),
        make(TIER_PHRASE, [TIER_PHRASE], "prefix", false, (t, o) => only(prefixed(t, "else", o), t, o)),
      ];
    }
    const first = (t: QueryTerms, where: Where, o: Order) => t.wholeSource(0, where, o);
    const laterTiers = [TIER_PHRASE, TIER_SCATTERED];
    return [
      make(TIER_START, [TIER_START], "complete", true, (t, o) =>
        and([first(t, "start", o), ...rest(t, o, 1, n - 1, later), t.completeSource(o)]),
      ),
      make(TIER_START, [TIER_START], "prefix", false, (t, o) =>
        only(and([first(t, "start", o), ...rest(t, o, 1, n - 1, later), prefixed(t, later, o)]), t, o),
      ),
      make(TIER_PHRASE, laterTiers, "complete", false, (t, o) => and([...rest(t, o, 0, n - 1), t.completeSource(o)])),
      make(TIER_PHRASE, laterTiers, "prefix", false, (t, o) =>
        only(and([...rest(t, o, 0, n - 1), prefixed(t, "all", o)]), t, o),
      ),
    ];
  }

  // scope=all: every token whole, in the title or in data; records matched in data rank last.
  const weightOnly = (make: (t: QueryTerms) => Source) => (t: QueryTerms, o: Order) =>
    o === "weight" ? make(t) : null;
  const titleOrData = (t: QueryTerms, i: number) =>
    new UnionSource([t.wholeSource(i, "all", "weight"), t.dataSource(i)]);
  if (n === 1) {
    return [
      make(TIER_START, [TIER_START], "any", true, (t, o) => t.wholeSource(0, "start", o)),
      make(TIER_PHRASE, [TIER_PHRASE], "any", false, (t, o) => t.wholeSource(0, "else", o)),
      make(
        TIER_DATA,
        [TIER_DATA],
        "any",
        false,
        weightOnly((t) => t.dataSource(0)),
      ),
    ];
  }
  return [
    make(TIER_START, [TIER_START, TIER_PHRASE, TIER_SCATTERED], "any", true, (t, o) => and(rest(t, o, 0, n))),
    make(
      TIER_DATA,
      [TIER_DATA],
      "any",
      false,
      weightOnly((t) => and(Array.from({ length: n }, (_, i) => titleOrData(t, i)))),
    ),
  ];
}

/** Whether a document's fine value belongs to a stream that holds `last` matches. */
export function holdsFine(last: LastMatch, fine: number): boolean {
  return last === "any" || (last === "prefix") === (fine === FINE_PREFIX);
}
