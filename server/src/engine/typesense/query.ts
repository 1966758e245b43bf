// SearchRequest -> Typesense search parameters, and hits back to SearchHits.
//
// Matching follows docs/ranking.md "Rank order" as far as Typesense allows: every query token must
// match (no dropped tokens, no typos, no split/join), whole tokens except the last one with
// scope=title (`prefix` applies to the last token only). Order: text match, then weight, then
// distance, then record id. Typesense sorts on at most three keys; when weight and distance
// are both asked for, the id tie-break is applied here to runs of hits that tie on everything
// Typesense sorted by (see stabilise).
import type { DocumentSchema, SearchParams, SearchResponse } from "typesense";
import type { SearchHit, SearchRequest } from "../../ports/engine.ts";
import type { Settings } from "./context.ts";
import { recordOf } from "./documents.ts";

const MAX_SORT_KEYS = 3;

function sortKeys(request: SearchRequest, buckets: number): string[] {
  // Buckets let weight and distance reorder matches of near-equal relevance; without either,
  // bucketing would only let the id reorder them, so the plain score is kept.
  const keys = [request.weighted || request.geo ? `_text_match(buckets: ${buckets}):desc` : "_text_match:desc"];
  if (request.weighted) keys.push("weight:desc");
  if (request.geo) keys.push(`location(${request.geo.latitude}, ${request.geo.longitude}):asc`);
  if (keys.length < MAX_SORT_KEYS) keys.push("rid:asc");
  return keys;
}

export function searchParams(
  request: SearchRequest,
  queryText: string,
  filterBy: string,
  settings: Settings,
): SearchParams<DocumentSchema> {
  const all = request.scope === "all";
  return {
    q: queryText,
    // Listed first, the title outranks data, as in the embedded engine (a data match ranks
    // after every title match).
    query_by: all ? "title_text,data_text" : "title_text",
    prefix: !all,
    num_typos: 0,
    typo_tokens_threshold: 0,
    drop_tokens_threshold: 0,
    split_join_tokens: "off",
    // docs/ranking.md: closer and earlier matches win; an exact whole-title match earns no extra.
    prioritize_exact_match: false,
    prioritize_token_position: true,
    text_match_type: "max_score",
    max_candidates: settings.maxCandidates,
    filter_by: filterBy,
    sort_by: sortKeys(request, settings.textMatchBuckets).join(","),
    per_page: request.limit,
    include_fields: "rec",
  };
}

interface Ranked {
  hit: SearchHit;
  /** Exact score: `text_match` is a 64-bit integer that JSON numbers round. */
  textMatch: string;
}

const tie = (a: Ranked, b: Ranked): boolean =>
  a.textMatch === b.textMatch &&
  (a.hit.record.weight ?? 0) === (b.hit.record.weight ?? 0) &&
  a.hit.distanceMeters === b.hit.distanceMeters;

/** Code point order, which is the byte order of the UTF-8 `rid` values Typesense sorts. */
function byId(a: Ranked, b: Ranked): number {
  const x = Array.from(a.hit.record.id, (c) => c.codePointAt(0)!);
  const y = Array.from(b.hit.record.id, (c) => c.codePointAt(0)!);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
  return x.length - y.length;
}

/** Orders each run of adjacent hits that tie on score, weight and distance by record id. */
function stabilise(ranked: Ranked[]): Ranked[] {
  const out: Ranked[] = [];
  for (let start = 0; start < ranked.length; ) {
    let end = start + 1;
    while (end < ranked.length && tie(ranked[start]!, ranked[end]!)) end++;
    out.push(...ranked.slice(start, end).sort(byId));
    start = end;
  }
  return out;
}

export function toHits(
  response: SearchResponse<DocumentSchema>,
  request: SearchRequest,
  settings: Settings,
): SearchHit[] {
  const ranked = (response.hits ?? []).map((raw): Ranked => {
    const record = recordOf(raw.document);
    const hit: SearchHit = { record };
    const distance = raw.geo_distance_meters?.location;
    // Typesense reports a distance for every hit of a geo sort, even without coordinates.
    if (request.geo && record.latitude !== undefined && distance !== undefined) hit.distanceMeters = distance;
    return { hit, textMatch: raw.text_match_info?.score ?? String(raw.text_match) };
  });
  const idSorted = sortKeys(request, settings.textMatchBuckets).includes("rid:asc");
  return (idSorted ? ranked : stabilise(ranked)).map((entry) => entry.hit);
}
