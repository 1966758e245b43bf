// A brute-force reference of docs/ranking.md "Rank order", written directly over strings (no index,
// no bit tricks, none of the engine's ranking code): engine results must equal it exactly.
// Used by the embedded engine's tests and by bench/search.bench.ts to verify samples.
import type { SearchRecord, SearchRequest } from "../../src/ports/engine.ts";
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
  };
}

/** Matches with typos count only when nothing matches exactly (docs/ranking.md, Typos). */
export function withoutTyposIfExact(scores: ReferenceScore[]): ReferenceScore[] {
  return scores.some((s) => s.bucket < 4) ? scores.filter((s) => s.bucket < 4) : scores;
}

export function compareScores(weighted: boolean): (a: ReferenceScore, b: ReferenceScore) => number {
  return (a, b) =>
    a.bucket - b.bucket ||
    (weighted ? b.weight - a.weight : 0) ||
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
  const query = queryTokens(request);
  if (query.length === 0) return [];
  const scored: ReferenceScore[] = [];
  for (const record of records) {
    const score = scoreRecord(prepareRecord(record), query, request);
    if (score !== null) scored.push(score);
  }
  return toHits(withoutTyposIfExact(scored).sort(compareScores(request.weighted)).slice(0, request.limit));
}
