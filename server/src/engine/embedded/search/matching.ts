// Matching a document read from a stream: its exact bucket and fine value (from the forward index,
// and the data postings for scope=all), whether the version still has it, whether it passes the
// filter; its distance; and the order of a segment's hits.
import { compileFilter, type DocPredicate } from "../columns/filter-columns.ts";
import { haversineMeters } from "../columns/geo.ts";
import type { Segment } from "../segment/segment.ts";
import {
  FINE_LAST_COMPLETE,
  MatchScratch,
  NO_MATCH,
  TIER_DATA,
  bucketOf,
  exactTitleMatch,
  titleMatch,
} from "./lexical.ts";
import { holdsFine, type Stream } from "./planning.ts";
import type { QueryTerms } from "./query-terms.ts";
import type { DocSet, SegmentHit, SegmentQuery } from "./segment-search.ts";

export class Matcher {
  /** The query's point, or null when distance orders nothing (no point, or no document with coordinates). */
  readonly point: { latitude: number; longitude: number } | null;
  /** The fine value of the last document accept() took (its bucket is what accept returns). */
  fine = 0;
  private readonly segment: Segment;
  private readonly query: SegmentQuery;
  private readonly n: number;
  private readonly filter: DocPredicate | null;
  /** The documents the version hides, when it hides any (tested for every document read). */
  private readonly hidden: DocSet | null;
  private readonly scratch = new MatchScratch();
  private readonly forwardOffsets: Uint32Array;
  private readonly forwardTerms: Uint32Array;
  private readonly lengthRank: Uint32Array;

  constructor(segment: Segment, query: SegmentQuery) {
    this.segment = segment;
    this.query = query;
    this.n = query.tokens.length;
    this.filter = query.request.filter ? compileFilter(query.request.filter, segment) : null;
    this.hidden = query.shadowed.size > 0 ? query.shadowed : null;
    // Without any document with coordinates, distance cannot order anything here.
    this.point = query.request.geo && segment.geo.docs.length > 0 ? query.request.geo : null;
    this.scratch.ensure(segment.meta.maxTitleTokens, this.n);
    this.forwardOffsets = segment.forward.offsets;
    this.forwardTerms = segment.forward.terms;
    this.lengthRank = segment.lengthOrder.rankOf;
  }

  /** Segment hits best first: bucket, weight (when weighted), distance, fine, then length and id. */
  readonly compare = (a: SegmentHit, b: SegmentHit): number => {
    if (a.bucket !== b.bucket) return a.bucket - b.bucket;
    if (this.query.request.weighted) {
      const w = this.segment.weight[b.doc]! - this.segment.weight[a.doc]!;
      if (w !== 0) return w;
    }
    if (a.distance !== b.distance) return a.distance < b.distance ? -1 : 1;
    if (a.fine !== b.fine) return a.fine - b.fine;
    return this.lengthRank[a.doc]! - this.lengthRank[b.doc]!;
  };

  get queryTokens(): number {
    return this.n;
  }

  /** The number of title tokens of doc. */
  titleTokens(doc: number): number {
    return this.forwardOffsets[doc + 1]! - this.forwardOffsets[doc]!;
  }

  /**
   * The document's bucket if it matches the query, belongs to the stream and passes the filter,
   * else -1; its fine value is left in `fine`.
   */
  accept(doc: number, stream: Stream): number {
    if (this.hidden?.has(doc)) return -1;
    const packed = this.match(doc, stream.terms());
    if (packed < 0) return -1;
    const bucket = packed >>> 2;
    const fine = packed & 3;
    if (((stream.buckets >>> bucket) & 1) === 0 || !holdsFine(stream.last, fine)) return -1;
    if (this.filter !== null && !this.filter(doc)) return -1;
    this.fine = fine;
    return bucket;
  }

  /**
   * `bucket * 4 + fine` of doc against the terms of one level if the version has the document and
   * it matches and passes the filter, else -1. `matched`: the caller knows the query matches (the
   * document came from a source whose members all match), so only the version and filter are checked.
   */
  rank(doc: number, terms: QueryTerms, matched = false): number {
    if (this.hidden?.has(doc)) return -1;
    const packed = matched ? 0 : this.match(doc, terms);
    if (packed < 0) return -1;
    if (this.filter !== null && !this.filter(doc)) return -1;
    return packed;
  }

  /** Whether a filter or the version's changes can reject documents the query matches. */
  get restricts(): boolean {
    return this.filter !== null || this.hidden !== null;
  }

  get hasFilter(): boolean {
    return this.filter !== null;
  }

  /** `bucket * 4 + fine` of doc against the terms of one level, or -1. */
  private match(doc: number, terms: QueryTerms): number {
    const forwardTerms = this.forwardTerms;
    const { dist, whole } = this.scratch;
    const n = this.n;
    const from = this.forwardOffsets[doc]!;
    const len = this.forwardOffsets[doc + 1]! - from;
    const prefixLast = terms.prefixLast;
    const wholeTokens = prefixLast ? n - 1 : n;
    if (!terms.typos) {
      // Without typos every match is at distance 0: bit masks, not the distance matrix.
      const ids = terms.ids;
      const last = ids[n - 1]!;
      const masks = this.scratch.masks;
      let anyWholeLast = false;
      let wholeLastAtEnd = false;
      for (let j = 0; j < len; j++) {
        const t = forwardTerms[from + j]!;
        let mask = 0;
        for (let i = 0; i < wholeTokens; i++) if (ids[i] === t) mask |= 1 << i;
        if (prefixLast) {
          if (t >= terms.lo && t < terms.hi) mask |= 1 << (n - 1);
          if (t === last) {
            anyWholeLast = true;
            if (j === n - 1) wholeLastAtEnd = true;
          }
        }
        masks[j] = mask;
      }
      const exact = exactTitleMatch(masks, len, n, prefixLast, wholeLastAtEnd, anyWholeLast);
      if (exact >= 0 || prefixLast) return exact;
      // scope=all: the tokens missing from the title must all be in data.
      let found = 0;
      for (let j = 0; j < len; j++) found |= masks[j]!;
      for (let i = 0; i < n; i++) {
        if (((found >>> i) & 1) === 0 && terms.dataDistance(i, doc, 1) !== 0) return -1;
      }
      return bucketOf(0, TIER_DATA) * 4 + FINE_LAST_COMPLETE;
    }
    {
      const byTerm = terms.byTerm!;
      for (let j = 0; j < len; j++) {
        const t = forwardTerms[from + j]!;
        const row = j * n;
        const distances = byTerm.get(t);
        for (let i = 0; i < wholeTokens; i++) dist[row + i] = distances === undefined ? NO_MATCH : distances[i]!;
        if (prefixLast) {
          const prefix = terms.lastPrefixDistance(t);
          dist[row + n - 1] = prefix;
          // A word is never closer whole than by its beginning.
          whole[j] = prefix === NO_MATCH ? NO_MATCH : terms.lastWholeDistance(t);
        }
      }
    }
    const title = titleMatch(this.scratch, len, n, prefixLast);
    if (prefixLast) return title;
    // scope=all: a token may also match in data; the record takes its better route (a title
    // match at some typos, or a data match at the typos of each token's closest match anywhere).
    let typos = 0;
    for (let i = 0; i < n; i++) {
      let inTitle = NO_MATCH;
      for (let j = 0; j < len; j++) if (dist[j * n + i]! < inTitle) inTitle = dist[j * n + i]!;
      const inData = terms.dataDistance(i, doc, inTitle);
      const closest = inData < inTitle ? inData : inTitle;
      if (closest === NO_MATCH) return title;
      typos += closest;
    }
    const viaData = bucketOf(typos, TIER_DATA) * 4 + FINE_LAST_COMPLETE;
    return title >= 0 && title < viaData ? title : viaData;
  }

  distanceOf(doc: number): number {
    const { lat, lon } = this.segment.geo;
    if (this.point === null || Number.isNaN(lat[doc]!)) return Infinity;
    return haversineMeters(this.point.latitude, this.point.longitude, lat[doc]!, lon[doc]!);
  }
}
