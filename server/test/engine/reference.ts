// A brute-force reference of docs/ranking.md "Rank order", written directly over strings (no index,
// no bit tricks, none of the engine's ranking code): engine results must equal it exactly.
// Used by the embedded engine's tests and by bench/search.bench.ts to verify samples.
import type { FacetResult, SearchRecord, SearchRequest } from "../../src/ports/engine.ts";
import { tokenize } from "../../src/engine/tokenize.ts";
import { allowedTypos, editDistance, prefixEditDistance } from "../../src/engine/typos.ts";
import { matchesFilter } from "../../src/search/filter.ts";

export interface ReferenceHit {
  id: string;
  distanceMeters?: number;
}

const MAX_TOKENS = 30;

function textsOf(value: unknown, out: string[]): string[] {
  if (typeof value === "string") out.push(value);
  else if (Array.isArray(value)) for (const v of value) textsOf(v, out);
  else if (typeof value === "object" && value !== null) for (const v of Object.values(value)) textsOf(v, out);
  return out;
}

export function distanceMeters(lat1: number, lon1: number, lat2: number, lon2: number): number {
  const r = Math.PI / 180;
  const a =
    Math.sin(((lat2 - lat1) * r) / 2) ** 2 +
    Math.cos(lat1 * r) * Math.cos(lat2 * r) * Math.sin(((lon2 - lon1) * r) / 2) ** 2;
  return 2 * 6_371_008.8 * Math.asin(Math.min(1, Math.sqrt(a)));
}

const MAX_TYPO_TIER = 6;
const NONE = Number.POSITIVE_INFINITY;

/**
 * The rank key of docs/ranking.md (tokens, typos, tiers, fine tie-breaks), computed the slow and
 * obvious way over strings: [bucket, fine], or null when the title does not match.
 *   bucket = min(typos, 6) * 4 + tier (0 start, 1 phrase later, 2 scattered, 3 data only)
 *   fine   = 0 title equals the query, 1 last token complete, 2 last token a prefix only
 */
export function referenceTitleRank(
  title: string[],
  query: string[],
  prefixLast: boolean,
  typoTolerance: boolean,
): [number, number] | null {
  const n = query.length;
  const allowed = query.map((q) => (typoTolerance ? allowedTypos(q) : 0));
  const whole = (i: number, w: string) => {
    if (w === query[i]) return 0;
    const d = allowed[i]! > 0 ? editDistance(query[i]!, w, allowed[i]!) : NONE;
    return d <= allowed[i]! ? d : NONE;
  };
  const matchAt = (i: number, w: string) => {
    if (!(prefixLast && i === n - 1)) return whole(i, w);
    if (w.startsWith(query[i]!)) return 0;
    const d = allowed[i]! > 0 ? prefixEditDistance(query[i]!, w, allowed[i]!) : NONE;
    return d <= allowed[i]! ? d : NONE;
  };
  const closest = query.map((_, i) => Math.min(...title.map((w) => matchAt(i, w))));
  if (closest.some((d) => d === NONE)) return null;
  const typos = closest.reduce((a, b) => a + b, 0);
  const phraseAt = (j: number) =>
    j + n <= title.length && query.every((_, i) => matchAt(i, title[j + i]!) === closest[i]);
  let tier = 2;
  if (phraseAt(0)) tier = 0;
  else if (title.some((_, j) => j > 0 && phraseAt(j))) tier = 1;
  let fine = 1;
  if (prefixLast && !title.some((w) => whole(n - 1, w) === closest[n - 1])) fine = 2;
  const lastWhole = !prefixLast || title[n - 1] === query[n - 1];
  if (typos === 0 && title.length === n && tier === 0 && lastWhole) fine = 0;
  return [Math.min(typos, MAX_TYPO_TIER) * 4 + tier, fine];
}

/** scope=all: the better of the title match and a match where tokens may be found in data text. */
function referenceAllRank(prepared: PreparedRecord, query: string[], typoTolerance: boolean): [number, number] | null {
  const titleRank = referenceTitleRank(prepared.title, query, false, typoTolerance);
  const words = [...prepared.words];
  const allowed = query.map((q) => (typoTolerance ? allowedTypos(q) : 0));
  let typos = 0;
  for (let i = 0; i < query.length; i++) {
    let best = NONE;
    for (const w of words) {
      const d = w === query[i] ? 0 : allowed[i]! > 0 ? editDistance(query[i]!, w, allowed[i]!) : NONE;
      if (d <= allowed[i]! && d < best) best = d;
    }
    if (best === NONE) return titleRank;
    typos += best;
  }
  const viaData: [number, number] = [Math.min(typos, MAX_TYPO_TIER) * 4 + 3, 1];
  if (titleRank === null) return viaData;
  return titleRank[0] * 4 + titleRank[1] < viaData[0] * 4 + viaData[1] ? titleRank : viaData;
}

function codePointCompare(a: string, b: string): number {
  const x = Array.from(a, (c) => c.codePointAt(0)!);
  const y = Array.from(b, (c) => c.codePointAt(0)!);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
  return x.length - y.length;
}

/** A record with its tokens computed once (the bench scores many queries per record). */
export interface PreparedRecord {
  record: SearchRecord;
  title: string[];
  words: Set<string>;
}

export function prepareRecord(record: SearchRecord): PreparedRecord {
  const title = tokenize(record.title);
  return { record, title, words: new Set([...title, ...textsOf(record.data, []).flatMap((t) => tokenize(t))]) };
}

export interface ReferenceScore {
  id: string;
  bucket: number;
  fine: number;
  weight: number;
  distance: number;
  titleTokens: number;
  titleUnits: number;
  /** The sort field's value when the request sorts: a number or string, else null (last). */
  sortValue: number | string | null;
}

export function queryTokens(request: SearchRequest): string[] {
  return tokenize(request.query).slice(0, MAX_TOKENS);
}

export function scoreRecord(prepared: PreparedRecord, query: string[], request: SearchRequest): ReferenceScore | null {
  const { record } = prepared;
  const typoTolerance = request.typoTolerance !== false;
  const rank =
    request.scope === "title"
      ? referenceTitleRank(prepared.title, query, true, typoTolerance)
      : referenceAllRank(prepared, query, typoTolerance);
  if (rank === null) return null;
  if (request.filter && !matchesFilter(request.filter, record.data ?? {})) return null;
  const distance =
    request.geo && record.latitude !== undefined && record.longitude !== undefined
      ? distanceMeters(request.geo.latitude, request.geo.longitude, Number(record.latitude), Number(record.longitude))
      : Infinity;
  return {
    id: record.id,
    bucket: rank[0],
    fine: rank[1],
    weight: record.weight ?? 0,
    distance,
    titleTokens: Math.min(prepared.title.length, 255),
    titleUnits: Math.min(record.title.length, 0xff_ffff),
    sortValue: request.sort ? sortValueAt(record.data, request.sort.path) : null,
  };
}

/** Matches with typos count only when nothing matches exactly (docs/ranking.md, Typos). */
export function withoutTyposIfExact(scores: ReferenceScore[]): ReferenceScore[] {
  return scores.some((s) => s.bucket < 4) ? scores.filter((s) => s.bucket < 4) : scores;
}

/** The value at a path of data, following own properties of plain objects only (no shared code). */
function valueAt(data: unknown, path: readonly string[]): unknown {
  let value: unknown = data;
  for (const key of path) {
    if (value === null || typeof value !== "object" || Array.isArray(value)) return undefined;
    if (!Object.hasOwn(value, key)) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

function sortValueAt(data: unknown, path: readonly string[]): number | string | null {
  const v = valueAt(data, path);
  return typeof v === "string" || (typeof v === "number" && Number.isFinite(v)) ? v : null;
}

/** Numbers before strings in both directions, missing (null) last. */
function compareSort(a: number | string | null, b: number | string | null, direction: "asc" | "desc"): number {
  if (a === null || b === null) return a === b ? 0 : a === null ? 1 : -1;
  if (typeof a !== typeof b) return typeof a === "number" ? -1 : 1;
  if (a === b) return 0;
  return (a < b ? -1 : 1) * (direction === "asc" ? 1 : -1);
}

export function compareScores(
  weighted: boolean,
  sort?: SearchRequest["sort"],
): (a: ReferenceScore, b: ReferenceScore) => number {
  return (a, b) =>
    a.bucket - b.bucket ||
    (sort ? compareSort(a.sortValue, b.sortValue, sort.direction) : weighted ? b.weight - a.weight : 0) ||
    (a.distance === b.distance ? 0 : a.distance < b.distance ? -1 : 1) ||
    a.fine - b.fine ||
    a.titleTokens - b.titleTokens ||
    a.titleUnits - b.titleUnits ||
    codePointCompare(a.id, b.id);
}

export function toHits(scores: ReferenceScore[]): ReferenceHit[] {
  return scores.map((s) => (Number.isFinite(s.distance) ? { id: s.id, distanceMeters: s.distance } : { id: s.id }));
}

export function referenceSearch(records: Iterable<SearchRecord>, request: SearchRequest): ReferenceHit[] {
  return referencePage([...records].map(prepareRecord), request).hits;
}

export interface ReferencePage {
  hits: ReferenceHit[];
  totalHits: number;
  facets?: FacetResult[];
}

/**
 * A whole page: every match scored and ranked, the page cut at offset, the total, and facets
 * counted over every match: per record the distinct strings, booleans and finite numbers at the
 * path (a scalar or an array's elements), count descending, then numbers, booleans, strings, each
 * ascending (strings by UTF-16 code units); stats over the numbers.
 */
export function referencePage(records: Iterable<PreparedRecord>, request: SearchRequest): ReferencePage {
  const query = queryTokens(request);
  const scored: ReferenceScore[] = [];
  const byId = new Map<string, PreparedRecord>();
  if (query.length > 0) {
    for (const prepared of records) {
      const score = scoreRecord(prepared, query, request);
      if (score !== null) {
        scored.push(score);
        byId.set(score.id, prepared);
      }
    }
  }
  const matched = withoutTyposIfExact(scored).sort(compareScores(request.weighted, request.sort));
  const offset = request.offset ?? 0;
  const page: ReferencePage = {
    hits: toHits(matched.slice(offset, offset + request.limit)),
    totalHits: matched.length,
  };
  if (request.facets) {
    page.facets = request.facets.map((facet) => {
      const counts = new Map<string, { value: string | number | boolean; count: number }>();
      const numbers: number[] = [];
      for (const s of matched) {
        const v = valueAt(byId.get(s.id)!.record.data, facet.path);
        const elements = Array.isArray(v) ? v : [v];
        const seen = new Set<string>();
        for (const e of elements) {
          const ok = typeof e === "string" || typeof e === "boolean" || (typeof e === "number" && Number.isFinite(e));
          if (!ok) continue;
          const key = `${typeof e}:${String(e)}`;
          if (seen.has(key)) continue;
          seen.add(key);
          if (typeof e === "number") numbers.push(e);
          const entry = counts.get(key) ?? { value: e as string | number | boolean, count: 0 };
          entry.count++;
          counts.set(key, entry);
        }
      }
      const rank = (v: unknown) => (typeof v === "number" ? 0 : typeof v === "boolean" ? 1 : 2);
      const values = [...counts.values()].sort(
        (a, b) =>
          b.count - a.count || rank(a.value) - rank(b.value) || (a.value === b.value ? 0 : a.value < b.value ? -1 : 1),
      );
      const result: FacetResult = { path: facet.path, values: values.slice(0, facet.maxValues) };
      if (numbers.length > 0) result.stats = { min: Math.min(...numbers), max: Math.max(...numbers) };
      return result;
    });
  }
  return page;
}
