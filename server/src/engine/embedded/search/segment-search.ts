// Top-k search over one segment without scoring every match.
//
// Matches are split into *streams* whose documents share a best lexical bucket (lexical.ts), e.g.
// for a one-token query: whole token at title start, whole token elsewhere, prefix at start,
// prefix elsewhere. Streams are read best first, each in the order that ranks its documents:
//   weighted        weight order (document numbers): the first k hits of the best bucket end it
//   unweighted      id order: likewise
//   geo             nearest first over the stream's geo-ordered postings (geo.ts), then the
//                   stream's documents without coordinates in id order
//   weighted + geo  weight order; inside a large group of equal weights, nearest first
// Streams built from the data-only lists (scope=all) exist only in weight order and are read
// whole when another order is needed.
import type { SearchRequest } from "../../../ports/engine.ts";
import { compileFilter, type DocPredicate } from "../columns/filter-columns.ts";
import { NearestIterator, haversineMeters } from "../columns/geo.ts";
import { BUCKETS, DATA_BUCKET, MatchScratch, titleBucket } from "./lexical.ts";
import { AndSource, EMPTY, END, RunSource, UnionSource, intersectionByBitmap, materialize, mergeRuns, type Source } from "../postings/sources.ts";
import type { Segment, SplitPostings } from "../segment/segment.ts";
import { TopK } from "./top-k.ts";
import { lowerBound } from "../util/arrays.ts";

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
}

export const DEFAULT_TUNING: SearchTuning = { maxUnionTerms: 32, smallStream: 256, nearestBudget: 2, exactIntersection: 50_000, selectiveAfter: 64 };

export interface SegmentHit {
  doc: number;
  bucket: number;
  /** Infinity when the query has no point or the document no coordinates. */
  distance: number;
}

export interface SegmentQuery {
  tokens: string[];
  prefixLast: boolean;
  request: SearchRequest;
  /** Documents replaced or deleted by the version's changes. */
  shadowed: ReadonlySet<number>;
}

type Order = "weight" | "id" | "geo";

interface Stream {
  /** The best bucket of the stream: streams are read in this order. */
  bound: number;
  /** Bit b set when documents of bucket b are read from this stream (and from no other). */
  buckets: number;
  /** Every document of the stream is in bucket `bound`: no need to compute it. */
  exact: boolean;
  /** The stream's postings in an order, or null when not stored in that order. */
  source(order: Order): Source | null;
}

const only = (...buckets: number[]) => buckets.reduce((mask, b) => mask | (1 << b), 0);

export function searchSegment(segment: Segment, query: SegmentQuery, tuning: SearchTuning): SegmentHit[] {
  const terms = resolveTerms(segment, query);
  if (terms === null) return [];
  return new SegmentSearch(segment, query, terms, tuning).run();
}

interface ResolvedTerms {
  /** Exact term id per query token, -1 when absent. */
  ids: Int32Array;
  /** Term id range of the last token as a prefix (scope=title). */
  lo: number;
  hi: number;
}

function resolveTerms(segment: Segment, query: SegmentQuery): ResolvedTerms | null {
  const n = query.tokens.length;
  const ids = new Int32Array(n);
  for (let i = 0; i < n; i++) ids[i] = segment.terms.find(Buffer.from(query.tokens[i]!, "utf8"));
  const mustBeWhole = query.prefixLast ? n - 1 : n;
  for (let i = 0; i < mustBeWhole; i++) if (ids[i]! < 0) return null;
  if (!query.prefixLast) return { ids, lo: 0, hi: 0 };
  const [lo, hi] = segment.terms.prefixRange(Buffer.from(query.tokens[n - 1]!, "utf8"));
  return lo < hi ? { ids, lo, hi } : null;
}

class SegmentSearch {
  private readonly segment: Segment;
  private readonly query: SegmentQuery;
  private readonly terms: ResolvedTerms;
  private readonly tuning: SearchTuning;
  private readonly n: number;
  private readonly full: number;
  private readonly filter: DocPredicate | null;
  private readonly point: { latitude: number; longitude: number } | null;
  private readonly scratch = new MatchScratch();
  private readonly hits: SegmentHit[] = [];

  constructor(segment: Segment, query: SegmentQuery, terms: ResolvedTerms, tuning: SearchTuning) {
    this.segment = segment;
    this.query = query;
    this.terms = terms;
    this.tuning = tuning;
    this.n = query.tokens.length;
    this.full = (1 << this.n) - 1;
    this.filter = query.request.filter ? compileFilter(query.request.filter, segment) : null;
    // Without any document with coordinates, distance cannot order anything here.
    this.point = query.request.geo && segment.geo.docs.length > 0 ? query.request.geo : null;
    this.scratch.ensure(segment.meta.maxTitleTokens);
  }

  run(): SegmentHit[] {
    const { limit, weighted } = this.query.request;
    for (const stream of this.streams()) {
      const better = this.hits.reduce((c, h) => c + (h.bucket < stream.bound ? 1 : 0), 0);
      const need = limit - better;
      if (need <= 0) break;
      const counts = new Uint32Array(BUCKETS);
      if (weighted && this.point) this.readWeightedNearest(stream, need, counts);
      else if (weighted) this.readInOrder(stream, need, counts, "weight");
      else if (this.point) this.readGeo(stream, need, counts);
      else this.readInOrder(stream, need, counts, "id");
    }
    return this.hits.sort(this.compare).slice(0, limit);
  }

  private readonly compare = (a: SegmentHit, b: SegmentHit): number => {
    if (a.bucket !== b.bucket) return a.bucket - b.bucket;
    if (this.query.request.weighted) {
      const w = this.segment.weight[b.doc]! - this.segment.weight[a.doc]!;
      if (w !== 0) return w;
    }
    if (a.distance !== b.distance) return a.distance < b.distance ? -1 : 1;
    return this.segment.docToRank[a.doc]! - this.segment.docToRank[b.doc]!;
  };

  // ---- streams ----------------------------------------------------------------------------

  private streams(): Stream[] {
    const { ids } = this.terms;
    const n = this.n;
    const term = (t: number, order: Order) => this.termSource(t, order);
    if (this.query.prefixLast) {
      const e = ids[n - 1]!;
      if (n === 1) {
        // Prefix runs also hold documents with the whole token, unless the token is no term.
        return [
          this.stream(0, only(0), true, (o) => (e < 0 ? EMPTY : this.termRun(e, true, o))),
          this.stream(1, only(1), true, (o) => (e < 0 ? EMPTY : this.termRun(e, false, o))),
          this.stream(4, only(4), e < 0, (o) => this.prefixSource(true, false, o)),
          this.stream(5, only(5), e < 0, (o) => this.prefixSource(false, true, o)),
        ];
      }
      // Documents with the whole last token, then those with it as a prefix (whole ones included,
      // for their prefix phrases). A phrase at the title start needs the first token first, so
      // those buckets read the first token's shorter "at start" run and end early when full.
      const first = (o: Order, atStart: boolean) => (atStart ? this.termRun(ids[0]!, true, o) : term(ids[0]!, o));
      const rest = (o: Order) => Array.from(ids.subarray(1, n - 1), (t) => term(t, o));
      const whole = (atStart: boolean) => (o: Order) => (e < 0 ? EMPTY : new AndSource([first(o, atStart), ...rest(o), term(e, o)]));
      const prefixed = (atStart: boolean) => (o: Order) => new AndSource([first(o, atStart), ...rest(o), this.prefixSource(true, true, o)]);
      return [
        this.stream(0, only(0), false, whole(true)),
        this.stream(1, only(1, 2, 3), false, whole(false)),
        this.stream(4, only(4), false, prefixed(true)),
        this.stream(5, only(5, 6, 7), false, prefixed(false)),
      ];
    }
    const { offsets: dataOffsets, docs: dataDocs } = this.segment.dataPostings;
    const dataOnly = (t: number) => new RunSource(dataDocs, dataOffsets[t]!, dataOffsets[t + 1]!);
    const weightOnly = (make: () => Source) => (o: Order) => (o === "weight" ? make() : null);
    if (n === 1) {
      const t = ids[0]!;
      return [
        this.stream(0, only(0), true, (o) => this.termRun(t, true, o)),
        this.stream(1, only(1), true, (o) => this.termRun(t, false, o)),
        this.stream(DATA_BUCKET, only(DATA_BUCKET), true, weightOnly(() => dataOnly(t))),
      ];
    }
    return [
      this.stream(0, only(0, 1, 2, 3), false, (o) => new AndSource(Array.from(ids, (t) => term(t, o)))),
      this.stream(
        DATA_BUCKET,
        only(DATA_BUCKET),
        false,
        weightOnly(() => new AndSource(Array.from(ids, (t) => new UnionSource([term(t, "weight"), dataOnly(t)])))),
      ),
    ];
  }

  private stream(bound: number, buckets: number, exact: boolean, source: (order: Order) => Source | null): Stream {
    return { bound, buckets, exact, source };
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

  private docAt(order: Order, position: number): number {
    return order === "weight" ? position : order === "id" ? this.segment.rankToDoc[position]! : this.segment.geo.docs[position]!;
  }

  // ---- matching ---------------------------------------------------------------------------

  /** The document's bucket if it matches the query, belongs to the stream and passes the filter, else -1. */
  private accept(doc: number, stream: Stream): number {
    if (this.query.shadowed.size > 0 && this.query.shadowed.has(doc)) return -1;
    let bucket = stream.bound;
    if (!stream.exact) {
      bucket = this.bucketOf(doc);
      if (bucket < 0 || ((stream.buckets >>> bucket) & 1) === 0) return -1;
    }
    if (this.filter !== null && !this.filter(doc)) return -1;
    return bucket;
  }

  private bucketOf(doc: number): number {
    const { offsets: forwardOffsets, terms: forwardTerms } = this.segment.forward;
    const { ids, lo, hi } = this.terms;
    const { masks, prefix } = this.scratch;
    const n = this.n;
    const from = forwardOffsets[doc]!;
    const len = forwardOffsets[doc + 1]! - from;
    const prefixLast = this.query.prefixLast;
    let found = 0;
    for (let j = 0; j < len; j++) {
      const t = forwardTerms[from + j]!;
      let mask = 0;
      for (let i = 0; i < n; i++) if (ids[i] === t) mask |= 1 << i;
      masks[j] = mask;
      prefix[j] = prefixLast && t >= lo && t < hi ? 1 : 0;
      found |= mask;
    }
    if (prefixLast || found === this.full) return titleBucket(masks, prefix, len, n, prefixLast);
    // scope=all: the tokens missing from the title must all be in data.
    const { offsets: dataOffsets, docs: dataDocs } = this.segment.dataPostings;
    for (let i = 0; i < n; i++) {
      if (found & (1 << i)) continue;
      const t = ids[i]!;
      const end = dataOffsets[t + 1]!;
      const at = lowerBound(dataDocs, dataOffsets[t]!, end, doc);
      if (at === end || dataDocs[at] !== doc) return -1;
    }
    return DATA_BUCKET;
  }

  private distanceOf(doc: number): number {
    const { lat, lon } = this.segment.geo;
    if (this.point === null || Number.isNaN(lat[doc]!)) return Infinity;
    return haversineMeters(this.point.latitude, this.point.longitude, lat[doc]!, lon[doc]!);
  }

  // ---- reading orders ---------------------------------------------------------------------

  /**
   * Reads the stream in weight or id order (positions [lo, hi) of that order), keeping the first
   * `need` hits of each bucket; the stream's best bucket full means nothing later can rank.
   */
  private readInOrder(stream: Stream, need: number, counts: Uint32Array, order: "weight" | "id", unlocatedOnly = false, lo = 0, hi = END): void {
    const source = stream.source(order);
    if (source === null) return this.readWhole(stream, need, counts, unlocatedOnly);
    const lat = this.segment.geo.lat;
    let it = source.open(lo, hi);
    let read = 0;
    for (let p = it.next(); p !== END; p = it.next()) {
      // Many matches and the best bucket still not full: the rest is likely read to the end. When
      // the inputs mostly miss each other (most leapfrog steps find nothing), an exact
      // intersection by bitmap costs less than leapfrogging through the rest.
      if (++read === this.tuning.selectiveAfter && source instanceof AndSource && read * 4 < source.count(lo, p + 1)) {
        const rest = intersectionByBitmap(source, p, hi);
        if (rest !== null) {
          it = rest.open();
          p = it.next();
          if (p === END) return;
        }
      }
      const doc = this.docAt(order, p);
      if (unlocatedOnly && !Number.isNaN(lat[doc]!)) continue;
      const bucket = this.accept(doc, stream);
      if (bucket < 0) continue;
      if (counts[bucket]!++ < need) this.hits.push({ doc, bucket, distance: Infinity });
      if (counts[stream.bound]! >= need) return;
    }
  }

  /** Reads the whole stream in weight order and keeps its best `need` hits (streams stored in no other order). */
  private readWhole(stream: Stream, need: number, counts: Uint32Array, unlocatedOnly: boolean): void {
    const found = new TopK<SegmentHit>(need, this.compare);
    const lat = this.segment.geo.lat;
    const it = stream.source("weight")!.open();
    for (let doc = it.next(); doc !== END; doc = it.next()) {
      if (unlocatedOnly && !Number.isNaN(lat[doc]!)) continue;
      const bucket = this.accept(doc, stream);
      if (bucket >= 0) found.offer({ doc, bucket, distance: this.distanceOf(doc) });
    }
    this.keepBest(found.sorted(), need, counts);
  }

  /** Unweighted + geo: nearest first, then the documents without coordinates by id. */
  private readGeo(stream: Stream, need: number, counts: Uint32Array): void {
    const readCost = stream.source("weight")!.count(0, END);
    if (readCost <= this.tuning.smallStream) return this.readWhole(stream, need, counts, false);
    const mark = this.hits.length;
    const outcome = this.readNearest(stream, need, counts, 0, END, readCost * this.tuning.nearestBudget, readCost);
    if (outcome === "over budget") {
      this.hits.length = mark;
      counts.fill(0);
      this.readWhole(stream, need, counts, false);
    } else if (outcome === "exhausted") this.readInOrder(stream, need, counts, "id", true);
  }

  /**
   * Reads the stream's documents with coordinates (within documents [lo, hi)) nearest first until
   * its best bucket has `need` hits. Documents at exactly the distance of the last one needed are
   * read too: they may win on id.
   */
  private readNearest(
    stream: Stream,
    need: number,
    counts: Uint32Array,
    lo: number,
    hi: number,
    budget: number,
    readCost: number,
  ): "full" | "exhausted" | "over budget" {
    let source = stream.source("geo");
    if (source === null) return "over budget";
    if (source instanceof AndSource && readCost <= this.tuning.exactIntersection) source = materialize(source);
    const nearest = new NearestIterator(this.segment.geo, source, this.point!.latitude, this.point!.longitude);
    const lastDistance = new Float64Array(BUCKETS).fill(-1);
    let stopAt = Infinity;
    while (nearest.peekDistance() <= stopAt && nearest.next()) {
      if (nearest.work > budget) return "over budget";
      const doc = this.segment.geo.docs[nearest.position]!;
      if (doc < lo || doc >= hi) continue;
      const bucket = this.accept(doc, stream);
      if (bucket < 0) continue;
      if (counts[bucket]! < need || nearest.distance === lastDistance[bucket]) {
        this.hits.push({ doc, bucket, distance: nearest.distance });
        lastDistance[bucket] = nearest.distance;
      }
      counts[bucket]!++;
      if (bucket === stream.bound && counts[bucket]! >= need && stopAt === Infinity) stopAt = nearest.distance;
    }
    return counts[stream.bound]! >= need ? "full" : "exhausted";
  }

  /**
   * Weighted + geo: weight order, with distance (then id) deciding inside each group of equal
   * weight. A small group is read whole; a large one nearest first, restricted to the group.
   */
  private readWeightedNearest(stream: Stream, need: number, counts: Uint32Array): void {
    const source = stream.source("weight")!;
    const located = stream.source("geo");
    const it = source.open();
    for (let doc = it.next(); doc !== END; doc = it.seek(doc)) {
      const groupEnd = this.weightGroupEnd(doc);
      // Most groups are a handful of documents (distinct weights): read whole without counting.
      let readWhole = true;
      if (located !== null && groupEnd - doc > this.tuning.smallStream) {
        const members = source.count(doc, groupEnd);
        // Nearest first visits about need * (all located matches) / (matches in the group) matches.
        const nearestCost = (need * located.count(0, END)) / members;
        if (members > this.tuning.smallStream && nearestCost < members) {
          const mark = this.hits.length;
          const saved = counts.slice();
          const outcome = this.readNearest(stream, need, counts, doc, groupEnd, members * this.tuning.nearestBudget, source.count(0, END));
          // Within a group, weight order is id order: its unlocated documents come in id order.
          if (outcome === "exhausted") this.readInOrder(stream, need, counts, "weight", true, doc, groupEnd);
          readWhole = outcome === "over budget";
          if (readWhole) {
            this.hits.length = mark;
            counts.set(saved);
          }
        }
      }
      if (readWhole) {
        const group: SegmentHit[] = [];
        for (let d = it.seek(doc); d < groupEnd; d = it.next()) {
          const bucket = this.accept(d, stream);
          if (bucket >= 0) group.push({ doc: d, bucket, distance: this.distanceOf(d) });
        }
        if (group.length > 1) group.sort(this.compare);
        this.keepBest(group, need, counts);
      }
      doc = groupEnd;
      // Later groups weigh less: once the stream's best bucket is full they cannot rank.
      if (counts[stream.bound]! >= need) return;
    }
  }

  /**
   * Weights are non-increasing in document order: the group of doc ends at the first smaller
   * weight. Galloping from doc: groups are usually a document or two.
   */
  private weightGroupEnd(doc: number): number {
    const weight = this.segment.weight;
    const end = this.segment.docCount;
    const w = weight[doc]!;
    let lo = doc + 1;
    let step = 1;
    while (lo + step <= end && weight[lo + step - 1]! >= w) {
      lo += step;
      step *= 2;
    }
    let hi = Math.min(lo + step, end);
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (weight[mid]! >= w) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Adds hits (sorted best first) up to `need` per bucket. */
  private keepBest(sorted: SegmentHit[], need: number, counts: Uint32Array): void {
    for (const hit of sorted) if (counts[hit.bucket]!++ < need) this.hits.push(hit);
  }
}

/** Key k's run "at the first title token" or "elsewhere", in an order. */
function splitRun(postings: SplitPostings, order: Order, key: number, atStart: boolean): RunSource {
  const offsets = order === "geo" ? postings.geoOffsets : postings.offsets;
  const values = order === "weight" ? postings.docs : order === "id" ? postings.ranks : postings.geoPositions;
  return atStart ? new RunSource(values, offsets[2 * key]!, offsets[2 * key + 1]!) : new RunSource(values, offsets[2 * key + 1]!, offsets[2 * key + 2]!);
}
