// A search of one version: its major's segment and its overlay of changed records, ranked as one
// list (ranked.ts), with what the whole set of matches decides: the total, the facet counts and,
// with an explicit sort, the order.
//
// Without facets or sort only the top offset + limit are read from the segment (reading-orders.ts)
// and the total is counted apart (match-set.ts), exactly up to tuning.exactTotalUpTo. Facets read
// the whole set (so totals are exact then); a sort ranks the whole set, since neither stored order
// of the postings is the order of an arbitrary field.
import type { FacetResult, SearchHit, SearchPage, SearchRequest } from "../../../ports/engine.ts";
import { FacetTally } from "../../../search/facets.ts";
import { resolvePath } from "../../../search/filter.ts";
import { tokenize } from "../../tokenize.ts";
import { countSegmentFacets } from "../columns/facet-counts.ts";
import { titleLengthKey } from "../columns/title-length.ts";
import type { Segment } from "../segment/segment.ts";
import type { Overlay } from "../versions/overlay.ts";
import { MAX_QUERY_TOKENS, typosOf } from "./lexical.ts";
import type { Level } from "./match-set.ts";
import { compareRanked, compareSortValues, sortValueOf, type RankedHit, type SortValue } from "./ranked.ts";
import { searchSegment, type SearchTuning, type SegmentHit } from "./segment-search.ts";
import { TopK } from "./top-k.ts";

export function searchVersion(
  segment: Segment,
  overlay: Overlay,
  request: SearchRequest,
  tuning: SearchTuning,
): SearchPage {
  const tokens = tokenize(request.query).slice(0, MAX_QUERY_TOKENS);
  const facets = request.facets ?? [];
  const offset = request.offset ?? 0;
  const need = offset + request.limit;
  const emptyFacets = (): FacetResult[] => facets.map((f) => ({ path: f.path, values: [] }));
  if (tokens.length === 0) {
    return { hits: [], totalHits: 0, totalHitsExact: true, ...(facets.length > 0 ? { facets: emptyFacets() } : {}) };
  }
  const prefixLast = request.scope === "title";
  const sort = request.sort;
  const search = searchSegment(
    segment,
    { tokens, prefixLast, request: { ...request, limit: need }, shadowed: overlay.shadowed },
    tuning,
    sort === undefined,
  );
  const { matches, matcher } = search;

  // Matches with typos count only where the version has no exact match (docs/ranking.md, Typos).
  const segmentExact =
    search.hits.some((h) => typosOf(h.bucket) === 0) || (sort !== undefined && matches.count("exact", 1).count > 0);
  // The version's changed records that match: all of them (they are few), ranked like the
  // segment's; exactly only when the segment has an exact match (much cheaper than with typos).
  const changed =
    overlay.upserts.size > 0
      ? overlay.search(tokens, prefixLast, segmentExact ? { ...request, typoTolerance: false } : request)
      : [];
  const changedExact = changed.filter((h) => typosOf(h.bucket) === 0);
  const level: Level = segmentExact || changedExact.length > 0 ? "exact" : "typos";
  const changedHits = level === "exact" ? changedExact : changed;

  // The segment's candidates for the page.
  let fromSegment: RankedHit[];
  let docs: Uint32Array | null = null;
  if (sort !== undefined) {
    const collected = matches.collect(level, true);
    docs = collected.docs;
    fromSegment = sortedSegmentHits(segment, docs, collected.ranks!, sort, need, (doc) => matcher.distanceOf(doc)).map(
      (h) => rankedOf(segment, h, h.sortValue),
    );
  } else {
    fromSegment = search.hits
      .filter((h) => level !== "exact" || typosOf(h.bucket) === 0)
      .map((h) => rankedOf(segment, h));
  }
  if (sort !== undefined) for (const h of changedHits) h.sortValue = sortValueOf(resolvePath(h.record.data, sort.path));
  const hits = changedHits.length > 0 ? [...fromSegment, ...changedHits] : fromSegment;
  if (hits !== fromSegment || sort !== undefined) hits.sort(compareRanked(request.weighted, sort?.direction));

  // The total, and the facets over the whole set.
  let totalHits: number;
  let totalHitsExact = true;
  let facetResults: FacetResult[] | undefined;
  if (facets.length > 0) {
    docs ??= matches.collect(level, false).docs;
    totalHits = docs.length + changedHits.length;
    const tallies = facets.map(() => new FacetTally());
    countSegmentFacets(segment, docs, facets, tallies);
    for (const h of changedHits) {
      for (let i = 0; i < facets.length; i++) tallies[i]!.addRecord(resolvePath(h.record.data, facets[i]!.path));
    }
    facetResults = facets.map((f, i) => tallies[i]!.result(f.path, f.maxValues));
  } else if (docs !== null) {
    totalHits = docs.length + changedHits.length;
  } else {
    const counted = matches.count(level, tuning.exactTotalUpTo + 1);
    totalHits = counted.count + changedHits.length;
    totalHitsExact = counted.exact;
  }

  // Overlay records are shared by every version that holds them: callers get copies.
  const page: SearchHit[] = hits.slice(offset, need).map((h) => {
    const record = h.doc === undefined ? structuredClone(h.record) : h.record;
    return Number.isFinite(h.distance) ? { record, distanceMeters: h.distance } : { record };
  });
  return { hits: page, totalHits, totalHitsExact, ...(facetResults ? { facets: facetResults } : {}) };
}

function rankedOf(segment: Segment, hit: SegmentHit, sortValue?: SortValue): RankedHit {
  const record = segment.records.readHot(hit.doc);
  const titleTokens = segment.forward.offsets[hit.doc + 1]! - segment.forward.offsets[hit.doc]!;
  return {
    bucket: hit.bucket,
    fine: hit.fine,
    lengthKey: titleLengthKey(titleTokens, record.title.length),
    weight: segment.weight[hit.doc]!,
    distance: hit.distance,
    id: record.id,
    record,
    doc: hit.doc,
    ...(sortValue !== undefined ? { sortValue } : {}),
  };
}

/**
 * The best `need` of the segment's matches (docs, with their packed ranks) in the sort's order:
 * bucket, the sort field, distance, fine, then the length order (title length key, then id).
 */
function sortedSegmentHits(
  segment: Segment,
  docs: Uint32Array,
  ranks: Uint32Array,
  sort: NonNullable<SearchRequest["sort"]>,
  need: number,
  distanceOf: (doc: number) => number,
): (SegmentHit & { sortValue: SortValue })[] {
  const found = segment.valueColumn(sort.path);
  const sortValueAt: (doc: number) => SortValue =
    found.kind === "column"
      ? (doc) => found.column.sortValue(doc)
      : found.kind === "none"
        ? () => null
        : (doc) =>
            found.presence && found.presence[doc] !== 1
              ? null
              : sortValueOf(resolvePath(segment.records.read(doc).data, sort.path));
  const lengthRank = segment.lengthOrder.rankOf;
  const direction = sort.direction;
  type Hit = SegmentHit & { sortValue: SortValue };
  const top = new TopK<Hit>(need, (a, b) => {
    if (a.bucket !== b.bucket) return a.bucket - b.bucket;
    const bySort = compareSortValues(a.sortValue, b.sortValue, direction);
    if (bySort !== 0) return bySort;
    if (a.distance !== b.distance) return a.distance < b.distance ? -1 : 1;
    if (a.fine !== b.fine) return a.fine - b.fine;
    return lengthRank[a.doc]! - lengthRank[b.doc]!;
  });
  for (let i = 0; i < docs.length; i++) {
    const doc = docs[i]!;
    const packed = ranks[i]!;
    top.offer({ doc, bucket: packed >>> 2, fine: packed & 3, distance: distanceOf(doc), sortValue: sortValueAt(doc) });
  }
  return top.sorted();
}
