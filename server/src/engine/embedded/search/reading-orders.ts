// Reading orders: each stream of a plan is read best first, in the order that ranks its documents,
// and stops once its best bucket has the hits it needs:
//   weighted        weight order (document numbers): the first k hits of the best bucket end it
//   unweighted      length order (title length, then id): likewise
//   geo             nearest first over the stream's geo-ordered postings (nearest.ts), then the
//                   stream's documents without coordinates in length order
//   weighted + geo  weight order; inside a large group of equal weights, nearest first
// Streams stored only in weight order (data postings, scope=all) are read whole when another
// order is needed.
import type { SearchRequest } from "../../../ports/engine.ts";
import { AndSource, END, ExceptSource, intersectionByBitmap, materialize } from "../postings/sources.ts";
import type { Segment } from "../segment/segment.ts";
import { BUCKETS, FINE_EXACT_TITLE, FINE_PREFIX, typosOf } from "./lexical.ts";
import type { Matcher } from "./matching.ts";
import { NearestIterator } from "./nearest.ts";
import type { Order, Stream } from "./planning.ts";
import type { SearchTuning, SegmentHit } from "./segment-search.ts";
import { TopK } from "./top-k.ts";

export class StreamReader {
  private readonly segment: Segment;
  private readonly request: SearchRequest;
  private readonly matcher: Matcher;
  private readonly tuning: SearchTuning;
  private readonly point: { latitude: number; longitude: number } | null;
  private readonly hits: SegmentHit[] = [];
  private readonly lengthDocs: Uint32Array;

  constructor(segment: Segment, request: SearchRequest, matcher: Matcher, tuning: SearchTuning) {
    this.segment = segment;
    this.lengthDocs = segment.lengthOrder.docAt;
    this.request = request;
    this.matcher = matcher;
    this.tuning = tuning;
    this.point = matcher.point;
  }

  /** The best `limit` hits of the streams (best bound first). */
  run(streams: Stream[]): SegmentHit[] {
    const { limit, weighted } = this.request;
    for (const stream of streams) {
      // Hits of better buckets; for a prefix-only stream (purely lexical order) also the complete
      // words of its own bucket, which rank above all of its documents.
      const prefixOnly = stream.last === "prefix";
      const better = this.hits.reduce(
        (c, h) =>
          c + (h.bucket < stream.bound || (prefixOnly && h.bucket === stream.bound && h.fine < FINE_PREFIX) ? 1 : 0),
        0,
      );
      const need = limit - better;
      if (need <= 0) break;
      // Matches with typos are looked for only when there is no exact match (docs/ranking.md, Typos).
      if (typosOf(stream.bound) > 0 && this.hits.some((h) => typosOf(h.bucket) === 0)) break;
      const counts = new Uint32Array(BUCKETS);
      if (weighted && this.point) this.readWeightedNearest(stream, need, counts);
      else if (weighted) this.readInOrder(stream, need, counts, "weight");
      else if (this.point) this.readGeo(stream, need, counts);
      else this.readInOrder(stream, need, counts, "length");
    }
    return this.hits.sort(this.matcher.compare).slice(0, limit);
  }

  private docAt(order: Order, position: number): number {
    return order === "weight"
      ? position
      : order === "length"
        ? this.lengthDocs[position]!
        : this.segment.geo.docs[position]!;
  }

  /**
   * Reads the stream in weight or length order (positions [lo, hi) of that order), keeping the
   * first `need` hits of each bucket; the stream's best bucket full means nothing later can rank,
   * once the ties of the last hit kept are read too:
   *   weight order, a stream of every last-token match: the rest of the group of equal weight
   *     (arriving by title length, where the fine order, last word complete first, comes first);
   *   length order, a stream where titles may equal the query: the titles with as few tokens as
   *     the query (a title equal to the query ranks first among its ties).
   * `fine` reads only the documents whose last token is a complete word, or only a prefix.
   */
  private readInOrder(
    stream: Stream,
    need: number,
    counts: Uint32Array,
    order: "weight" | "length",
    unlocatedOnly = false,
    lo = 0,
    hi = END,
    fine: "complete" | "prefix" | null = null,
  ): void {
    const source = stream.source(order);
    if (source === null) {
      this.readWhole(stream, need, counts, unlocatedOnly);
      return;
    }
    const matcher = this.matcher;
    const lat = this.segment.geo.lat;
    const n = matcher.queryTokens;
    const titleTail = order === "length" && stream.exactTitles;
    let tail = false;
    const mark = this.hits.length;
    // An intersection, possibly behind the skipping of another stream's documents.
    const intersection =
      source instanceof AndSource
        ? source
        : source instanceof ExceptSource && source.include instanceof AndSource
          ? source.include
          : null;
    let it = source.open(lo, hi);
    let read = 0;
    for (let p = it.next(); p !== END; p = it.next()) {
      // Many matches and the best bucket still not full: the rest is likely read to the end. When
      // the inputs mostly miss each other (most leapfrog steps find nothing), an exact
      // intersection by bitmap costs less than leapfrogging through the rest.
      if (++read === this.tuning.selectiveAfter && intersection !== null && read * 4 < intersection.count(lo, p + 1)) {
        const rest = intersectionByBitmap(intersection, p, hi);
        if (rest !== null) {
          it = source instanceof ExceptSource ? new ExceptSource(rest, source.exclude).open(p, hi) : rest.open();
          p = it.next();
          if (p === END) return;
        }
      }
      const doc = this.docAt(order, p);
      if (tail && matcher.titleTokens(doc) > n) return;
      if (unlocatedOnly && !Number.isNaN(lat[doc]!)) continue;
      const bucket = matcher.accept(doc, stream);
      if (bucket < 0) continue;
      if (fine !== null && (fine === "prefix") !== (matcher.fine === FINE_PREFIX)) continue;
      if (counts[bucket]!++ < need || (tail && bucket === stream.bound)) {
        this.hits.push({ doc, bucket, fine: matcher.fine, distance: Infinity });
      }
      if (counts[stream.bound]! >= need && !tail) {
        if (order === "weight" && stream.last === "any" && fine !== "prefix") {
          this.readGroupTail(stream, doc, Math.min(hi, this.weightGroupEnd(doc)), mark, unlocatedOnly);
          return;
        }
        if (!titleTail) return;
        tail = true;
      }
    }
  }

  /**
   * The best bucket is full at `doc`, read in weight order, where equal weights arrive by title
   * length: later documents of the same weight [doc + 1, end) can still rank above those kept by
   * the fine order, but only with a better fine value than the worst kept of that weight. Those
   * are few (complete last words, or titles as short as the query), and only they are read.
   */
  private readGroupTail(stream: Stream, doc: number, end: number, mark: number, unlocatedOnly: boolean): void {
    if (end <= doc + 1) return;
    const weight = this.segment.weight[doc]!;
    let worst = 0;
    for (let i = mark; i < this.hits.length; i++) {
      const h = this.hits[i]!;
      if (h.bucket === stream.bound && this.segment.weight[h.doc] === weight && h.fine > worst) worst = h.fine;
    }
    if (worst === FINE_EXACT_TITLE) return;
    const matcher = this.matcher;
    const terms = stream.terms();
    const lat = this.segment.geo.lat;
    // Better than "prefix only" means a complete last word: walk only the complete documents.
    const source = terms.prefixLast
      ? new AndSource([stream.source("weight")!, terms.completeSource("weight")])
      : stream.source("weight")!;
    const it = source.open(doc + 1, end);
    for (let d = it.next(); d !== END; d = it.next()) {
      // Without a prefix every match is complete; a better one has a title as short as the query.
      if (!terms.prefixLast && matcher.titleTokens(d) > matcher.queryTokens) return;
      if (unlocatedOnly && !Number.isNaN(lat[d]!)) continue;
      const bucket = matcher.accept(d, stream);
      if (bucket === stream.bound && matcher.fine < worst) {
        this.hits.push({ doc: d, bucket, fine: matcher.fine, distance: Infinity });
      }
    }
  }

  /**
   * Reads the stream's documents without coordinates (all at the same infinite distance, so the
   * fine order decides among them) in an order: complete last words first, then prefixes only.
   */
  private readUnlocated(
    stream: Stream,
    need: number,
    counts: Uint32Array,
    order: "weight" | "length",
    lo = 0,
    hi = END,
  ): void {
    if (stream.last !== "any") {
      this.readInOrder(stream, need, counts, order, true, lo, hi);
      return;
    }
    const complete = counts.slice();
    this.readInOrder(stream, need, complete, order, true, lo, hi, "complete");
    const prefix = counts.slice();
    this.readInOrder(stream, need, prefix, order, true, lo, hi, "prefix");
    for (let b = 0; b < counts.length; b++) counts[b] = complete[b]! + prefix[b]! - counts[b]!;
  }

  /** Reads the whole stream in weight order and keeps its best `need` hits (streams stored in no other order). */
  private readWhole(stream: Stream, need: number, counts: Uint32Array, unlocatedOnly: boolean): void {
    const matcher = this.matcher;
    const found = new TopK<SegmentHit>(need, matcher.compare);
    const lat = this.segment.geo.lat;
    const it = stream.source("weight")!.open();
    for (let doc = it.next(); doc !== END; doc = it.next()) {
      if (unlocatedOnly && !Number.isNaN(lat[doc]!)) continue;
      const bucket = matcher.accept(doc, stream);
      if (bucket >= 0) found.offer({ doc, bucket, fine: matcher.fine, distance: matcher.distanceOf(doc) });
    }
    this.keepBest(found.sorted(), need, counts);
  }

  /** Unweighted + geo: nearest first, then the documents without coordinates by id. */
  private readGeo(stream: Stream, need: number, counts: Uint32Array): void {
    const readCost = stream.source("weight")!.count(0, END);
    if (readCost <= this.tuning.smallStream) {
      this.readWhole(stream, need, counts, false);
      return;
    }
    const mark = this.hits.length;
    const outcome = this.readNearest(stream, need, counts, 0, END, readCost * this.tuning.nearestBudget, readCost);
    if (outcome === "over budget") {
      this.hits.length = mark;
      counts.fill(0);
      this.readWhole(stream, need, counts, false);
    } else if (outcome === "exhausted") this.readUnlocated(stream, need, counts, "length");
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
    const matcher = this.matcher;
    const nearest = new NearestIterator(this.segment.geo, source, this.point!.latitude, this.point!.longitude);
    const lastDistance = new Float64Array(BUCKETS).fill(-1);
    let stopAt = Infinity;
    while (nearest.peekDistance() <= stopAt && nearest.next()) {
      if (nearest.work > budget) return "over budget";
      const doc = this.segment.geo.docs[nearest.position]!;
      if (doc < lo || doc >= hi) continue;
      const bucket = matcher.accept(doc, stream);
      if (bucket < 0) continue;
      if (counts[bucket]! < need || nearest.distance === lastDistance[bucket]) {
        this.hits.push({ doc, bucket, fine: matcher.fine, distance: nearest.distance });
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
    const matcher = this.matcher;
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
          const outcome = this.readNearest(
            stream,
            need,
            counts,
            doc,
            groupEnd,
            members * this.tuning.nearestBudget,
            source.count(0, END),
          );
          // Within a group, weight order is length order: its unlocated documents come in that order.
          if (outcome === "exhausted") this.readUnlocated(stream, need, counts, "weight", doc, groupEnd);
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
          const bucket = matcher.accept(d, stream);
          if (bucket >= 0) group.push({ doc: d, bucket, fine: matcher.fine, distance: matcher.distanceOf(d) });
        }
        if (group.length > 1) group.sort(matcher.compare);
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
