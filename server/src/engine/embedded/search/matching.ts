// Matching a document read from a stream: its exact lexical bucket (from the forward index, and
// the data postings for scope=all), whether the version still has it, whether it passes the
// filter; its distance; and the order of a segment's hits.
import { compileFilter, type DocPredicate } from "../columns/filter-columns.ts";
import { haversineMeters } from "../columns/geo.ts";
import type { Segment } from "../segment/segment.ts";
import { lowerBound } from "../util/arrays.ts";
import { DATA_BUCKET, MatchScratch, titleBucket } from "./lexical.ts";
import type { ResolvedTerms, Stream } from "./planning.ts";
import type { SegmentHit, SegmentQuery } from "./segment-search.ts";

export class Matcher {
  /** The query's point, or null when distance orders nothing (no point, or no document with coordinates). */
  readonly point: { latitude: number; longitude: number } | null;
  private readonly segment: Segment;
  private readonly query: SegmentQuery;
  private readonly terms: ResolvedTerms;
  private readonly n: number;
  private readonly full: number;
  private readonly filter: DocPredicate | null;
  private readonly scratch = new MatchScratch();
  private readonly forwardOffsets: Uint32Array;
  private readonly forwardTerms: Uint32Array;
  private readonly dataOffsets: Uint32Array;
  private readonly dataDocs: Uint32Array;

  constructor(segment: Segment, query: SegmentQuery, terms: ResolvedTerms) {
    this.segment = segment;
    this.query = query;
    this.terms = terms;
    this.n = query.tokens.length;
    this.full = (1 << this.n) - 1;
    this.filter = query.request.filter ? compileFilter(query.request.filter, segment) : null;
    // Without any document with coordinates, distance cannot order anything here.
    this.point = query.request.geo && segment.geo.docs.length > 0 ? query.request.geo : null;
    this.scratch.ensure(segment.meta.maxTitleTokens);
    this.forwardOffsets = segment.forward.offsets;
    this.forwardTerms = segment.forward.terms;
    this.dataOffsets = segment.dataPostings.offsets;
    this.dataDocs = segment.dataPostings.docs;
  }

  /** Segment hits best first: bucket, then weight (when weighted), distance and id. */
  readonly compare = (a: SegmentHit, b: SegmentHit): number => {
    if (a.bucket !== b.bucket) return a.bucket - b.bucket;
    if (this.query.request.weighted) {
      const w = this.segment.weight[b.doc]! - this.segment.weight[a.doc]!;
      if (w !== 0) return w;
    }
    if (a.distance !== b.distance) return a.distance < b.distance ? -1 : 1;
    return this.segment.docToRank[a.doc]! - this.segment.docToRank[b.doc]!;
  };

  /** The document's bucket if it matches the query, belongs to the stream and passes the filter, else -1. */
  accept(doc: number, stream: Stream): number {
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
    const forwardOffsets = this.forwardOffsets;
    const forwardTerms = this.forwardTerms;
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
    const dataOffsets = this.dataOffsets;
    const dataDocs = this.dataDocs;
    for (let i = 0; i < n; i++) {
      if (found & (1 << i)) continue;
      const t = ids[i]!;
      const end = dataOffsets[t + 1]!;
      const at = lowerBound(dataDocs, dataOffsets[t]!, end, doc);
      if (at === end || dataDocs[at] !== doc) return -1;
    }
    return DATA_BUCKET;
  }

  distanceOf(doc: number): number {
    const { lat, lon } = this.segment.geo;
    if (this.point === null || Number.isNaN(lat[doc]!)) return Infinity;
    return haversineMeters(this.point.latitude, this.point.longitude, lat[doc]!, lon[doc]!);
  }
}
