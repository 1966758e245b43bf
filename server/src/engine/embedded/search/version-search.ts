// A search of one version: its major's segments (one, or a base and a delta: versions/layers.ts)
// and its overlay of changed records, ranked as one list (ranked.ts), with what the whole set of
// matches decides: the total, the facet counts and, with an explicit sort, the order.
//
// Without facets or sort only the top offset + limit are read from the segment (reading-orders.ts)
// and the total is counted apart (match-set.ts), exactly up to tuning.exactTotalUpTo. Facets read
// the whole set (so totals are exact then); a sort reads the whole set, since neither stored order
// of the postings is the order of an arbitrary field, but ranks its members in the order of the
// sort's value column, stopping once the best bucket has the page (sortedByColumn).
import type { FacetResult, SearchHit, SearchPage, SearchRequest } from "../../../ports/engine.ts";
import { FacetTally } from "../../../search/facets.ts";
import { resolvePath } from "../../../search/filter.ts";
import { tokenize } from "../../tokenize.ts";
import { countSegmentFacets } from "../columns/facet-counts.ts";
import { titleLengthKey } from "../columns/title-length.ts";
import type { Segment } from "../segment/segment.ts";
import type { Layers } from "../versions/layers.ts";
import type { Overlay } from "../versions/overlay.ts";
import { MAX_QUERY_TOKENS, typosOf } from "./lexical.ts";
import type { Level } from "./match-set.ts";
import { compareRanked, compareSortValues, sortValueOf, type RankedHit, type SortValue } from "./ranked.ts";
import { searchSegment, type SearchTuning, type SegmentHit, type SegmentSearch } from "./segment-search.ts";
import { TopK } from "./top-k.ts";
import { NO_VALUE, type ValueColumn } from "../columns/value-columns.ts";

export function searchVersion(
  major: Layers,
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
  // Each segment of the major (one, or a base and a delta: versions/layers.ts) without the
  // documents the version hides in it.
  const hidden = major.hidden(overlay.shadowed);
  // Matches with typos count only where the version has no exact match (docs/ranking.md, Typos).
  const hasExact = (search: SegmentSearch) =>
    search.hits.some((h) => typosOf(h.bucket) === 0) ||
    (sort !== undefined && search.matches.count("exact", 1).count > 0);
  const searches: (SegmentSearch & { segment: Segment })[] = [];
  let segmentExact = false;
  for (const [i, layer] of major.layers.entries()) {
    // Once a segment (the base first) matches exactly, the next is searched without typos: a
    // small delta alone often has no exact match, and walked its dictionary for typos that the
    // version then dropped (a third of a layered major's extra time on exact queries).
    const search = searchSegment(
      layer.segment,
      {
        tokens,
        prefixLast,
        request: segmentExact ? { ...request, limit: need, typoTolerance: false } : { ...request, limit: need },
        shadowed: hidden[i]!,
      },
      tuning,
      sort === undefined,
    );
    searches.push({ segment: layer.segment, ...search });
    if (!segmentExact) segmentExact = hasExact(search);
  }
  // The version's changed records that match: all of them (they are few), ranked like the
  // segment's; exactly only when the segment has an exact match (much cheaper than with typos).
  const changed =
    overlay.upsertedCount > 0
      ? overlay.search(tokens, prefixLast, segmentExact ? { ...request, typoTolerance: false } : request)
      : [];
  const changedExact = changed.filter((h) => typosOf(h.bucket) === 0);
  const level: Level = segmentExact || changedExact.length > 0 ? "exact" : "typos";
  const changedHits = level === "exact" ? changedExact : changed;

  // Each segment's candidates for the page.
  const fromSegments: RankedHit[] = [];
  const docsOf: (Uint32Array | null)[] = [];
  for (const { segment, matches, matcher, hits } of searches) {
    let docs: Uint32Array | null = null;
    if (sort !== undefined) {
      const found = segment.valueColumn(sort.path);
      const distanceOf = (doc: number) => matcher.distanceOf(doc);
      let sorted: (SegmentHit & { sortValue: SortValue })[];
      if (found.kind === "column") {
        // Members in the column's order, ranked only until the best bucket has the page.
        docs = matches.collect(level, false).docs;
        sorted = sortedByColumn(found.column, docs, sort.direction, need, {
          best: matches.bestBound(level),
          rank: matches.ranker(level),
          distanceOf,
          lengthRank: segment.lengthOrder.rankOf,
        });
      } else {
        const collected = matches.collect(level, true);
        docs = collected.docs;
        sorted = sortedSegmentHits(segment, docs, collected.ranks!, sort, need, distanceOf);
      }
      for (const h of sorted) fromSegments.push(rankedOf(segment, h, h.sortValue));
    } else {
      for (const h of hits) if (level !== "exact" || typosOf(h.bucket) === 0) fromSegments.push(rankedOf(segment, h));
    }
    // collect() fills buffers the next segment's collect reuses: a layered major keeps copies.
    docsOf.push(docs !== null && searches.length > 1 ? docs.slice() : docs);
  }
  if (sort !== undefined) for (const h of changedHits) h.sortValue = sortValueOf(resolvePath(h.record.data, sort.path));
  const hits = changedHits.length > 0 ? [...fromSegments, ...changedHits] : fromSegments;
  // One segment's hits come in rank order already.
  if (hits !== fromSegments || sort !== undefined || searches.length > 1) {
    hits.sort(compareRanked(request.weighted, sort?.direction));
  }

  // The total, and the facets over the whole set.
  let totalHits = changedHits.length;
  let totalHitsExact = true;
  let facetResults: FacetResult[] | undefined;
  if (facets.length > 0) {
    const tallies = facets.map(() => new FacetTally());
    for (const [i, { segment, matches }] of searches.entries()) {
      const docs = docsOf[i] ?? matches.collect(level, false).docs;
      totalHits += docs.length;
      countSegmentFacets(segment, docs, facets, tallies);
    }
    for (const h of changedHits) {
      for (let i = 0; i < facets.length; i++) tallies[i]!.addRecord(resolvePath(h.record.data, facets[i]!.path));
    }
    facetResults = facets.map((f, i) => tallies[i]!.result(f.path, f.maxValues));
  } else {
    const cap = tuning.exactTotalUpTo + 1;
    for (const [i, { matches }] of searches.entries()) {
      const docs = docsOf[i];
      if (docs !== null && docs !== undefined) {
        totalHits += docs.length;
        continue;
      }
      // Past the cap the total is a lower bound: the segments left are not counted.
      if (totalHits >= cap) {
        totalHitsExact = false;
        continue;
      }
      const counted = matches.count(level, cap - totalHits);
      totalHits += counted.count;
      if (!counted.exact) totalHitsExact = false;
    }
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
 * bucket, the sort field, distance, fine, then the length order (title length key, then id). For
 * paths without a value column (sortedByColumn serves the others): every match is offered.
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
    found.kind !== "unindexed"
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

/**
 * The best `need` of the segment's matches (docs, ascending) in the sort's order, read in the
 * order of the sort column: each document's position in it is a key (its value id, reversed for
 * desc; numbers before strings either way; no single number or string last), the documents are
 * sorted by key (counting sort over the dictionary, or a typed sort when the dictionary is much
 * larger than the matches) and ranked (a full match each) one group of equal keys at a time. Once
 * `need` of them are in the best bucket the level allows, no later document can rank above them:
 * its key is larger and its bucket no better. A query whose matches all start the title reads
 * about a page of them instead of all; otherwise every match is ranked, as before.
 */
function sortedByColumn(
  column: ValueColumn,
  docs: Uint32Array,
  direction: "asc" | "desc",
  need: number,
  by: {
    best: number;
    rank: (doc: number) => number;
    distanceOf: (doc: number) => number;
    lengthRank: Uint32Array;
  },
): (SegmentHit & { sortValue: SortValue })[] {
  const n = docs.length;
  const { present, ids, offsets } = column;
  const numberEnd = column.numberEnd;
  const booleanEnd = column.booleanEnd;
  const size = column.size;
  const none = size;
  // Keys in [0, size]: numbers first, then strings, each in the direction asked; `none` last.
  const keys = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    const doc = docs[i]!;
    let id = NO_VALUE;
    if (present[doc] === 1) {
      if (!column.multiValued) id = ids[doc]!;
      else if (offsets[doc + 1]! - offsets[doc]! === 1) id = ids[offsets[doc]!]!;
    }
    let key = none;
    if (id !== NO_VALUE && (id < numberEnd || id >= booleanEnd)) {
      if (direction === "asc") key = id;
      else key = id < numberEnd ? numberEnd - 1 - id : numberEnd + (size - 1 - id);
    }
    keys[i] = key;
  }
  // Positions of docs by key, ties in document order.
  let order: Uint32Array;
  if (size <= 4 * n + 1024 || (size + 1) * 2 ** Math.ceil(Math.log2(n + 1)) >= 2 ** 53) {
    const starts = new Uint32Array(size + 2);
    for (let i = 0; i < n; i++) starts[keys[i]! + 1]!++;
    for (let k = 0; k <= size; k++) starts[k + 1]! += starts[k]!;
    order = new Uint32Array(n);
    for (let i = 0; i < n; i++) order[starts[keys[i]!]!++] = i;
  } else {
    // (key, position) as one double: exact while (size + 1) * scale stays below 2^53.
    const scale = 2 ** Math.ceil(Math.log2(n + 1));
    const packed = new Float64Array(n);
    for (let i = 0; i < n; i++) packed[i] = keys[i]! * scale + i;
    packed.sort();
    order = Uint32Array.from(packed, (p) => p % scale);
  }
  type Hit = SegmentHit & { key: number };
  const lengthRank = by.lengthRank;
  const top = new TopK<Hit>(need, (a, b) => {
    if (a.bucket !== b.bucket) return a.bucket - b.bucket;
    if (a.key !== b.key) return a.key - b.key;
    if (a.distance !== b.distance) return a.distance < b.distance ? -1 : 1;
    if (a.fine !== b.fine) return a.fine - b.fine;
    return lengthRank[a.doc]! - lengthRank[b.doc]!;
  });
  let inBest = 0;
  for (let at = 0; at < n; ) {
    const key = keys[order[at]!]!;
    // A whole group of equal keys is ranked before stopping: its ties order by what follows.
    for (; at < n && keys[order[at]!] === key; at++) {
      const doc = docs[order[at]!]!;
      const packed = by.rank(doc);
      if (packed < 0) continue;
      const bucket = packed >>> 2;
      if (bucket === by.best) inBest++;
      top.offer({ doc, bucket, fine: packed & 3, distance: by.distanceOf(doc), key });
    }
    if (inBest >= need) break;
  }
  return top.sorted().map((h) => ({
    doc: h.doc,
    bucket: h.bucket,
    fine: h.fine,
    distance: h.distance,
    sortValue: h.key === none ? null : column.sortValue(h.doc),
  }));
}
