// Planning a segment search: the query's tokens resolved to term ids, and its matches split into
// *streams* whose documents share a best lexical bucket (lexical.ts), e.g. for a one-token query:
// whole token at title start, whole token elsewhere, prefix at start, prefix elsewhere. Each
// stream is a posting expression (postings/sources.ts) that can be built over the runs of any
// order the segment stores; streams built from the data-only postings (scope=all) exist only in
// weight order.
import { AndSource, EMPTY, RunSource, UnionSource, mergeRuns, type Source } from "../postings/sources.ts";
import type { Segment, SplitPostings } from "../segment/segment.ts";
import { DATA_BUCKET } from "./lexical.ts";
import type { SearchTuning, SegmentQuery } from "./segment-search.ts";

/** The orders a stream can be read in: document numbers, id ranks, geo positions. */
export type Order = "weight" | "id" | "geo";

export interface ResolvedTerms {
  /** Exact term id per query token, -1 when absent. */
  ids: Int32Array;
  /** Term id range of the last token as a prefix (scope=title). */
  lo: number;
  hi: number;
}

export interface Stream {
  /** The best bucket of the stream: streams are read in this order. */
  bound: number;
  /** Bit b set when documents of bucket b are read from this stream (and from no other). */
  buckets: number;
  /** Every document of the stream is in bucket `bound`: no need to compute it. */
  exact: boolean;
  /** The stream's postings in an order, or null when not stored in that order. */
  source(order: Order): Source | null;
}

/** The query's term ids, or null when some token that must match whole is no term of the segment. */
export function resolveTerms(segment: Segment, query: SegmentQuery): ResolvedTerms | null {
  const n = query.tokens.length;
  const ids = new Int32Array(n);
  for (let i = 0; i < n; i++) ids[i] = segment.terms.find(Buffer.from(query.tokens[i]!, "utf8"));
  const mustBeWhole = query.prefixLast ? n - 1 : n;
  for (let i = 0; i < mustBeWhole; i++) if (ids[i]! < 0) return null;
  if (!query.prefixLast) return { ids, lo: 0, hi: 0 };
  const [lo, hi] = segment.terms.prefixRange(Buffer.from(query.tokens[n - 1]!, "utf8"));
  return lo < hi ? { ids, lo, hi } : null;
}

/** The streams of a query, best bound first. */
export function planStreams(
  segment: Segment,
  query: SegmentQuery,
  terms: ResolvedTerms,
  tuning: SearchTuning,
): Stream[] {
  return new StreamPlanner(segment, query, terms, tuning).streams();
}

const only = (...buckets: number[]) => buckets.reduce((mask, b) => mask | (1 << b), 0);

function stream(bound: number, buckets: number, exact: boolean, source: (order: Order) => Source | null): Stream {
  return { bound, buckets, exact, source };
}

class StreamPlanner {
  private readonly segment: Segment;
  private readonly query: SegmentQuery;
  private readonly terms: ResolvedTerms;
  private readonly tuning: SearchTuning;
  private readonly n: number;

  constructor(segment: Segment, query: SegmentQuery, terms: ResolvedTerms, tuning: SearchTuning) {
    this.segment = segment;
    this.query = query;
    this.terms = terms;
    this.tuning = tuning;
    this.n = query.tokens.length;
  }

  streams(): Stream[] {
    const { ids } = this.terms;
    const n = this.n;
    const term = (t: number, order: Order) => this.termSource(t, order);
    if (this.query.prefixLast) {
      const e = ids[n - 1]!;
      if (n === 1) {
        // Prefix runs also hold documents with the whole token, unless the token is no term.
        return [
          stream(0, only(0), true, (o) => (e < 0 ? EMPTY : this.termRun(e, true, o))),
          stream(1, only(1), true, (o) => (e < 0 ? EMPTY : this.termRun(e, false, o))),
          stream(4, only(4), e < 0, (o) => this.prefixSource(true, false, o)),
          stream(5, only(5), e < 0, (o) => this.prefixSource(false, true, o)),
        ];
      }
      // Documents with the whole last token, then those with it as a prefix (whole ones included,
      // for their prefix phrases). A phrase at the title start needs the first token first, so
      // those buckets read the first token's shorter "at start" run and end early when full.
      const first = (o: Order, atStart: boolean) => (atStart ? this.termRun(ids[0]!, true, o) : term(ids[0]!, o));
      const rest = (o: Order) => Array.from(ids.subarray(1, n - 1), (t) => term(t, o));
      const whole = (atStart: boolean) => (o: Order) =>
        e < 0 ? EMPTY : new AndSource([first(o, atStart), ...rest(o), term(e, o)]);
      const prefixed = (atStart: boolean) => (o: Order) =>
        new AndSource([first(o, atStart), ...rest(o), this.prefixSource(true, true, o)]);
      return [
        stream(0, only(0), false, whole(true)),
        stream(1, only(1, 2, 3), false, whole(false)),
        stream(4, only(4), false, prefixed(true)),
        stream(5, only(5, 6, 7), false, prefixed(false)),
      ];
    }
    const { offsets: dataOffsets, docs: dataDocs } = this.segment.dataPostings;
    const dataOnly = (t: number) => new RunSource(dataDocs, dataOffsets[t]!, dataOffsets[t + 1]!);
    const weightOnly = (make: () => Source) => (o: Order) => (o === "weight" ? make() : null);
    if (n === 1) {
      const t = ids[0]!;
      return [
        stream(0, only(0), true, (o) => this.termRun(t, true, o)),
        stream(1, only(1), true, (o) => this.termRun(t, false, o)),
        stream(
          DATA_BUCKET,
          only(DATA_BUCKET),
          true,
          weightOnly(() => dataOnly(t)),
        ),
      ];
    }
    return [
      stream(0, only(0, 1, 2, 3), false, (o) => new AndSource(Array.from(ids, (t) => term(t, o)))),
      stream(
        DATA_BUCKET,
        only(DATA_BUCKET),
        false,
        weightOnly(() => new AndSource(Array.from(ids, (t) => new UnionSource([term(t, "weight"), dataOnly(t)])))),
      ),
    ];
  }

  /** One run of term t: documents with t as first title token, or with t elsewhere. */
  private termRun(t: number, atStart: boolean, order: Order): RunSource {
    return splitRun(this.segment.titlePostings, order, t, atStart);
  }

  private prefixRun(p: number, atStart: boolean, order: Order): RunSource {
    return splitRun(this.segment.prefixPostings, order, p, atStart);
  }

  /** Every title occurrence of term t (both runs). */
  private termSource(t: number, order: Order): Source {
    return new UnionSource([this.termRun(t, true, order), this.termRun(t, false, order)]);
  }

  /** Documents with a title token starting with the last query token: at the start, elsewhere, or both. */
  private prefixSource(atStart: boolean, elsewhere: boolean, order: Order): Source {
    const segment = this.segment;
    const last = this.query.tokens[this.n - 1]!;
    const runs: RunSource[] = [];
    if (Array.from(last).length <= segment.meta.maxPrefix) {
      const p = segment.prefixes.find(Buffer.from(last, "utf8"));
      if (p < 0) return EMPTY;
      if (atStart) runs.push(this.prefixRun(p, true, order));
      if (elsewhere) runs.push(this.prefixRun(p, false, order));
    } else {
      for (let t = this.terms.lo; t < this.terms.hi; t++) {
        if (atStart) runs.push(this.termRun(t, true, order));
        if (elsewhere) runs.push(this.termRun(t, false, order));
      }
    }
    const nonEmpty = runs.filter((r) => r.size > 0);
    if (nonEmpty.length === 0) return EMPTY;
    if (nonEmpty.length === 1) return nonEmpty[0]!;
    if (nonEmpty.length <= this.tuning.maxUnionTerms) return new UnionSource(nonEmpty);
    return mergeRuns(nonEmpty);
  }
}

/** Key k's run "at the first title token" or "elsewhere", in an order. */
function splitRun(postings: SplitPostings, order: Order, key: number, atStart: boolean): RunSource {
  const offsets = order === "geo" ? postings.geoOffsets : postings.offsets;
  const values = order === "weight" ? postings.docs : order === "id" ? postings.ranks : postings.geoPositions;
  return atStart
    ? new RunSource(values, offsets[2 * key]!, offsets[2 * key + 1]!)
    : new RunSource(values, offsets[2 * key + 1]!, offsets[2 * key + 2]!);
}
