// SearchRequest -> Typesense search parameters, and hits back to SearchHits, in the rank order of
// docs/ranking.md as far as Typesense allows (docs/DECISIONS.md, D-125 to D-127).
//
// Matching: every query token must match (no dropped tokens, no split/join), whole tokens except
// the last one with scope=title (`prefix` applies to the last token only).
//
// Order: a search is one or two requests. The first asks for exact matches only (`num_typos=0`)
// and sorts them by the lexical tiers (tiers.ts), weight, distance and title length; when there
// are none and typos are allowed, a second asks again with typos, fewest typos first. So a match
// with typos never outranks an exact one, whatever Typesense's text match does with weight. Typesense sorts on at
// most three keys (27.0 to 30.x: "Only upto 3 sort_by fields"); every page is then put in the
// full rank order here, from the same keys computed on the returned records.
import type { DocumentSchema, SearchParams, SearchResponse } from "typesense";
import type { SearchHit, SearchRecord, SearchRequest } from "../../ports/engine.ts";
import { tokenize } from "../tokenize.ts";
import {
  allowedTypos,
  editDistance,
  MAX_TYPOS_PER_TOKEN,
  MIN_LENGTH_ONE_TYPO,
  MIN_LENGTH_TWO_TYPOS,
  prefixEditDistance,
} from "../typos.ts";
import type { Settings } from "./context.ts";
import { dataTexts, recordOf, titleLength } from "./documents.ts";
import { evalClause, evalScore, type Entry, lexicalEntries, type Signals, signals } from "./tiers.ts";

/** `enable_typos_for_numerical_tokens` (Typesense 26.0) is missing from the client's types. */
export type Params = SearchParams<DocumentSchema> & { enable_typos_for_numerical_tokens?: boolean };

const MAX_SORT_KEYS = 3;
/** Typesense refuses a GET search whose query string is longer (http_server.cpp, 27.0 to 30.x). */
const MAX_QUERY_STRING = 4000;

const location = (request: SearchRequest): string | null =>
  request.geo ? `location(${request.geo.latitude}, ${request.geo.longitude}):asc` : null;

/** Fills the sort up to Typesense's three keys with the next ones of the rank order it can take. */
function withTail(keys: string[], tail: string[]): string[] {
  return [...keys, ...tail].slice(0, MAX_SORT_KEYS);
}

/** What the plan takes besides the request: the fields it facets and sorts by (reads.ts). */
export interface PlanExtras {
  /** `facet_by` fields; their values are asked for up to `maxFacetValues` each. */
  facetBy?: string[];
  maxFacetValues?: number;
  /** `sort_by` keys for request.sort, in place of weight: numbers, then strings, missing last. */
  sortKeys?: string[];
}

/**
 * The page: `per_page` from the start (the requests of the first page are unchanged), or
 * `offset` and `limit` (Typesense 0.25 and later) for a later one.
 */
const paging = (request: SearchRequest): Params =>
  request.offset ? { offset: request.offset, limit: request.limit } : { per_page: request.limit };

function baseParams(
  request: SearchRequest,
  tokens: readonly string[],
  filterBy: string,
  settings: Settings,
  extras: PlanExtras,
): Params {
  const all = request.scope === "all";
  const facets: Params = extras.facetBy?.length
    ? { facet_by: extras.facetBy.join(","), max_facet_values: extras.maxFacetValues ?? 10 }
    : {};
  return {
    q: tokens.join(" "),
    // Listed first, the title outranks data in the text match (the second request's order).
    query_by: all ? "title_text,data_text" : "title_text",
    prefix: !all,
    num_typos: 0,
    typo_tokens_threshold: 0,
    drop_tokens_threshold: 0,
    split_join_tokens: "off",
    // The text match orders the second request (and layout-1 collections): an exact whole-title
    // match earns no extra there (a fine tie-break in docs/ranking.md), earlier positions do.
    prioritize_exact_match: false,
    prioritize_token_position: true,
    text_match_type: "max_score",
    max_candidates: settings.maxCandidates,
    filter_by: filterBy,
    ...paging(request),
    ...facets,
    include_fields: "rec",
  };
}

/** Upper bound of the query string the client sends (it escapes no more than this). */
function queryStringLength(params: Params): number {
  let length = 0;
  for (const [key, value] of Object.entries(params)) {
    length += encodeURIComponent(key).length + encodeURIComponent(String(value)).length + 2;
  }
  return length;
}

/** A hit with every key the rank order needs, computed from the returned record. */
interface Ranked {
  hit: SearchHit;
  /** Exact score: `text_match` is a 64-bit integer that JSON numbers round. */
  textMatch: bigint;
  tier: number;
  fine: number;
  length: number;
  typos: number;
  /** request.sort's value: [0, number], [1, string] or [2] when missing or of another type. */
  sortValue: [0, number] | [1, string] | [2];
}

type Compare = (a: Ranked, b: Ranked) => number;

/** Code point order, which is the byte order of the UTF-8 `rid` values Typesense sorts. */
function byId(a: Ranked, b: Ranked): number {
  const x = Array.from(a.hit.record.id, (c) => c.codePointAt(0)!);
  const y = Array.from(b.hit.record.id, (c) => c.codePointAt(0)!);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
  return x.length - y.length;
}

const byWeight: Compare = (a, b) => (b.hit.record.weight ?? 0) - (a.hit.record.weight ?? 0);
/** Nearest first; records without coordinates (no distance) after every record with them. */
const byDistance: Compare = (a, b) =>
  (a.hit.distanceMeters ?? Number.POSITIVE_INFINITY) - (b.hit.distanceMeters ?? Number.POSITIVE_INFINITY) || 0;
const byTextMatch: Compare = (a, b) => (a.textMatch === b.textMatch ? 0 : a.textMatch > b.textMatch ? -1 : 1);

/** The sort field's value in a record, as sort_by sees it (sn/ss fields: scalars only). */
export function sortValueOf(record: SearchRecord, path: readonly string[] | undefined): Ranked["sortValue"] {
  if (!path) return [2];
  let value: unknown = record.data;
  for (const segment of path) {
    if (typeof value !== "object" || value === null || Array.isArray(value)) return [2];
    value = (value as Record<string, unknown>)[segment];
  }
  if (typeof value === "number" && Number.isFinite(value)) return [0, value];
  if (typeof value === "string") return [1, value];
  return [2];
}

/** request.sort: numbers before strings in both directions, records without a value last. */
const bySort =
  (direction: "asc" | "desc"): Compare =>
  (a, b) => {
    const [x, y] = [a.sortValue, b.sortValue];
    if (x[0] !== y[0]) return x[0] - y[0];
    if (x[0] === 2 || y[0] === 2) return 0;
    const order = x[1]! < y[1]! ? -1 : x[1]! > y[1]! ? 1 : 0;
    return direction === "asc" ? order : -order;
  };

const chain =
  (...compares: (Compare | null)[]): Compare =>
  (a, b) => {
    for (const compare of compares) {
      const order = compare ? compare(a, b) : 0;
      if (order !== 0) return order;
    }
    return 0;
  };

/**
 * Typos of a record against query tokens under Sift's rules (typos.ts), summed over the tokens,
 * or null when some token matches nothing within its allowance. Typesense counts typos in bytes
 * (min_len_1typo, edit distance), so a token outside ASCII may match there and not here.
 */
export function typoCount(record: SearchRecord, q: readonly string[], scope: "title" | "all"): number | null {
  const words = tokenize(record.title);
  if (scope === "all") for (const text of dataTexts(record)) words.push(...tokenize(text));
  let total = 0;
  for (const [i, token] of q.entries()) {
    const allowed = allowedTypos(token);
    const asPrefix = scope === "title" && i === q.length - 1;
    let best = allowed + 1;
    for (const candidate of words) {
      const distance = asPrefix
        ? prefixEditDistance(token, candidate, allowed)
        : editDistance(token, candidate, allowed);
      if (distance < best) best = distance;
      if (best === 0) break;
    }
    if (best > allowed) return null;
    total += best;
  }
  return total;
}

export interface SearchPlan {
  /** The first request: exact matches only. */
  exact: Params;
  /** The second request, given how many exact matches there are; null when not needed. */
  typos(exactFound: number): Params | null;
  /**
   * The page: exact hits, or (when nothing matched exactly) the hits with typos, in rank order;
   * `dropped` counts the typo matches Typesense made that Sift's typo rules refuse.
   */
  hits(
    exact: SearchResponse<DocumentSchema>,
    typos?: SearchResponse<DocumentSchema>,
  ): SearchHit[] & { dropped?: number };
}

interface ExactOrder {
  params: Params;
  /** The `_eval` entries sent (or, for the fine ones, applied here): what `tier` and `fine` score. */
  tiers: Entry[];
  fine: Entry[];
  /** Puts Typesense's page in the rank order. */
  order(ranked: Ranked[]): Ranked[];
}

/** Collections of layout 1 (no tags, no title length) are ranked as before D-126. */
function legacyOrder(request: SearchRequest, base: Params, settings: Settings, sortKeys: string[]): ExactOrder {
  // Buckets let weight and distance reorder matches of near-equal relevance; without either,
  // bucketing would only let the id reorder them, so the plain score is kept.
  const point = location(request);
  const ranked = request.sort ? sortKeys : request.weighted ? ["weight:desc"] : [];
  const keys = withTail(
    [
      ranked.length > 0 || point ? `_text_match(buckets: ${settings.textMatchBuckets}):desc` : "_text_match:desc",
      ...ranked,
      ...(point ? [point] : []),
    ],
    ["rid:asc"],
  );
  // With weight and distance both, rid does not fit: each run of hits that tie on the exact
  // score, weight and distance is ordered by id here (the buckets are not returned).
  const tie = chain(byTextMatch, request.sort ? bySort(request.sort.direction) : byWeight, byDistance);
  const order = (ranked: Ranked[]): Ranked[] => {
    if (keys.includes("rid:asc")) return ranked;
    const out: Ranked[] = [];
    for (let start = 0; start < ranked.length; ) {
      let end = start + 1;
      while (end < ranked.length && tie(ranked[start]!, ranked[end]!) === 0) end++;
      out.push(...ranked.slice(start, end).sort(byId));
      start = end;
    }
    return out;
  };
  return { params: { ...base, sort_by: keys.join(",") }, tiers: [], fine: [], order };
}

function exactOrder(request: SearchRequest, tokens: readonly string[], base: Params, sortKeys: string[]): ExactOrder {
  const lexical = lexicalEntries(tokens, request.scope);
  // Weight (or the sort field in its place) and distance come before the fine keys, so the
  // entries that tell a whole last token from a prefix go into `_eval` only when none is asked
  // for; otherwise they order ties here.
  const ranked = request.sort ? sortKeys : request.weighted ? ["weight:desc"] : [];
  const plain = !request.sort && !request.weighted && !request.geo;
  const after = [...ranked, ...(location(request) ? [location(request)!] : [])];
  // A long query with a long filter could pass Typesense's query string limit: the finer
  // entries give way first, then the consecutive-in-order tier, then `_eval` altogether.
  const choices: [Entry[], Entry[]][] = [
    [lexical.tiers, lexical.fine],
    [lexical.tiers, lexical.tiers],
    [lexical.startOnly, lexical.startOnly],
    [[], []],
  ];
  let chosen: { params: Params; tiers: Entry[]; fine: Entry[] } | undefined;
  for (const [tiers, fine] of choices) {
    const sent = plain ? fine : tiers;
    const keys = withTail([...(sent.length > 0 ? [evalClause(sent)] : []), ...after], ["title_length:asc", "rid:asc"]);
    chosen = { params: { ...base, sort_by: keys.join(",") }, tiers, fine };
    if (queryStringLength(chosen.params) <= MAX_QUERY_STRING) break;
  }
  const compare = chain(
    (a, b) => b.tier - a.tier,
    request.sort ? bySort(request.sort.direction) : request.weighted ? byWeight : null,
    request.geo ? byDistance : null,
    (a, b) => b.fine - a.fine,
    (a, b) => a.length - b.length,
    byId,
  );
  // Typesense sorted by a prefix of these keys, computed from the same records: sorting the
  // page again keeps its order and settles what the three keys left tied.
  return { ...chosen!, order: (ranked) => ranked.sort(compare) };
}

export function planSearch(
  request: SearchRequest,
  tokens: readonly string[],
  filterBy: string,
  layout: number,
  settings: Settings,
  extras: PlanExtras = {},
): SearchPlan {
  const base = baseParams(request, tokens, filterBy, settings, extras);
  const point = location(request);
  const sortKeys = extras.sortKeys ?? [];
  const first =
    layout >= 2 ? exactOrder(request, tokens, base, sortKeys) : legacyOrder(request, base, settings, sortKeys);
  const ranked = request.sort ? sortKeys : request.weighted ? ["weight:desc"] : [];

  // Second request: typo matches, fewest typos first; then as the text match has them (which
  // puts whole-word, closer and earlier matches first), weight (or the sort field), distance,
  // title length.
  const typoKeys = withTail(
    ["_text_match:desc", ...ranked, ...(point ? [point] : [])],
    layout >= 2 ? ["title_length:asc", "rid:asc"] : ["rid:asc"],
  );
  const typoCompare = chain(
    (a, b) => a.typos - b.typos,
    byTextMatch,
    request.sort ? bySort(request.sort.direction) : request.weighted ? byWeight : null,
    request.geo ? byDistance : null,
    (a, b) => a.length - b.length,
    byId,
  );
  const tolerant = request.typoTolerance !== false && tokens.some((token) => allowedTypos(token) > 0);

  const rank = (raw: NonNullable<SearchResponse<DocumentSchema>["hits"]>[number]): Ranked => {
    const record = recordOf(raw.document);
    const hit: SearchHit = { record };
    const distance = raw.geo_distance_meters?.location;
    // Typesense reports a distance for every hit of a geo sort, even without coordinates.
    if (request.geo && record.latitude !== undefined && distance !== undefined) hit.distanceMeters = distance;
    const titleTokens = tokenize(record.title);
    const doc: Signals = signals(titleTokens);
    return {
      hit,
      textMatch: BigInt(raw.text_match_info?.score ?? Math.trunc(raw.text_match ?? 0)),
      tier: evalScore(first.tiers, doc),
      fine: evalScore(first.fine, doc),
      length: titleLength(record.title, titleTokens.length),
      typos: 0,
      sortValue: sortValueOf(record, request.sort?.path),
    };
  };

  return {
    exact: first.params,
    typos(exactFound) {
      // Matches with typos count only when nothing matches exactly (docs/ranking.md, Typos).
      if (!tolerant || exactFound > 0) return null;
      return {
        ...base,
        num_typos: MAX_TYPOS_PER_TOKEN,
        min_len_1typo: MIN_LENGTH_ONE_TYPO,
        min_len_2typo: MIN_LENGTH_TWO_TYPOS,
        // Typesense 26.0+; it looks at ASCII digits only, Sift at every \p{N} (typoCount agrees).
        enable_typos_for_numerical_tokens: false,
        // Typesense tries typo variants while fewer than this many records match: up to this page's end.
        typo_tokens_threshold: (request.offset ?? 0) + request.limit,
        sort_by: typoKeys.join(","),
      };
    },
    hits(exactResponse, typoResponse) {
      const exactHits = first.order((exactResponse.hits ?? []).map(rank));
      const seen = new Set(exactHits.map((entry) => entry.hit.record.id));
      const typoHits: Ranked[] = [];
      let dropped = 0;
      for (const raw of typoResponse?.hits ?? []) {
        const entry = rank(raw);
        if (seen.has(entry.hit.record.id)) continue;
        const typos = typoCount(entry.hit.record, tokens, request.scope);
        // Typesense's byte-based rules can admit a match Sift's do not.
        if (typos === null) {
          dropped++;
          continue;
        }
        entry.typos = typos;
        typoHits.push(entry);
      }
      typoHits.sort(typoCompare);
      const page = [...exactHits, ...typoHits].slice(0, request.limit).map((entry) => entry.hit);
      return dropped > 0 ? Object.assign(page, { dropped }) : page;
    },
  };
}
