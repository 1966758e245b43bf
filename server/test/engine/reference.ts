// A brute-force reference of docs/ranking.md "Rank order" with the engine's lexical buckets, written
// directly over strings (no index, no bit tricks): engine results must equal it exactly.
// Used by the embedded engine's tests and by bench/search.bench.ts to verify samples.
import type { SearchRecord, SearchRequest } from "../../src/ports/engine.ts";
import { tokenize } from "../../src/engine/tokenize.ts";
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

/** Lexical bucket (lower is better) of a title for query tokens, or -1 when it does not match. */
export function referenceTitleBucket(title: string[], query: string[], prefixLast: boolean): number {
  const n = query.length;
  const rest = query.slice(0, n - 1);
  const last = query[n - 1]!;
  if (!rest.every((q) => title.includes(q))) return -1;
  const whole = title.includes(last);
  if (!whole && !(prefixLast && title.some((t) => t.startsWith(last)))) return -1;
  const phraseAt = (j: number, wholeLast: boolean) =>
    j + n <= title.length &&
    rest.every((q, i) => title[j + i] === q) &&
    (wholeLast ? title[j + n - 1] === last : title[j + n - 1]!.startsWith(last));
  // docs/ranking.md: whole-token before prefix-only; then together-and-in-order before scattered; then at the start.
  const w = whole ? 0 : 4;
  if (title.some((_, j) => phraseAt(j, whole))) return w + (phraseAt(0, whole) ? 0 : 1);
  return w + 2 + (title[0] === query[0] ? 0 : 1);
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
  weight: number;
  distance: number;
}

export function queryTokens(request: SearchRequest): string[] {
  return tokenize(request.query).slice(0, MAX_TOKENS);
}

export function scoreRecord(prepared: PreparedRecord, query: string[], request: SearchRequest): ReferenceScore | null {
  const { record } = prepared;
  const prefixLast = request.scope === "title";
  let bucket = referenceTitleBucket(prepared.title, query, prefixLast);
  if (!prefixLast && bucket < 0) bucket = query.every((q) => prepared.words.has(q)) ? 6 : -1;
  if (bucket < 0) return null;
  if (request.filter && !matchesFilter(request.filter, record.data ?? {})) return null;
  const distance =
    request.geo && record.latitude !== undefined && record.longitude !== undefined
      ? distanceMeters(request.geo.latitude, request.geo.longitude, Number(record.latitude), Number(record.longitude))
      : Infinity;
  return { id: record.id, bucket, weight: record.weight ?? 0, distance };
}

export function compareScores(weighted: boolean): (a: ReferenceScore, b: ReferenceScore) => number {
  return (a, b) =>
    a.bucket - b.bucket ||
    (weighted ? b.weight - a.weight : 0) ||
    (a.distance === b.distance ? 0 : a.distance < b.distance ? -1 : 1) ||
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
  return toHits(scored.sort(compareScores(request.weighted)).slice(0, request.limit));
}
