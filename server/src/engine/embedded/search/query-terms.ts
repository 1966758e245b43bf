// The query's tokens resolved in a segment's term dictionary, at one of two levels:
//   exact   each token's own term (the last one, scope=title, as the range of terms it prefixes)
//   typos   every term within the token's allowed typos (engine/typos.ts), found by a fuzzy walk
//           over the dictionary (termdict/fuzzy.ts), with its distance
// Each level gives the posting sources its streams read (planning.ts) and the distance of any
// title term to each token, which the matcher needs to rank a document (matching.ts).
// One file of some 420 lines on purpose: both levels share the candidate bookkeeping and the
// memoized sources; split apart, those internals would become exports of their own.
import { MAX_TYPOS_PER_TOKEN, allowedTypos, editDistance } from "../../typos.ts";
import { EMPTY, ExceptSource, RunSource, UnionSource, mergeRuns, type Source } from "../postings/sources.ts";
import type { Segment, SplitPostings } from "../segment/segment.ts";
import { type FuzzyRange, fuzzyPrefixesAndTerms, fuzzyTerms } from "../termdict/fuzzy.ts";
import { NO_MATCH } from "./lexical.ts";
import type { SearchTuning } from "./segment-search.ts";

/** The orders a stream can be read in: document numbers, length ranks, geo positions. */
export type Order = "weight" | "length" | "geo";

/** Where a token must occur in the title: as its first token, elsewhere, or anywhere. */
export type Where = "start" | "else" | "all";

/** A term (or, for a prefix, a whole range of terms) a token matches, at a distance. */
interface Candidate {
  lo: number;
  hi: number;
  distance: number;
  /**
   * A prefix id whose postings are exactly the range's (prefixes of at most maxPrefix code points),
   * NO_TITLE_TERMS when no title term has that prefix, or -1: read the range's term runs.
   */
  prefix: number;
}

const NO_TITLE_TERMS = -2;

export class QueryTerms {
  /** True at the typo level. */
  readonly typos: boolean;
  readonly n: number;
  readonly prefixLast: boolean;
  /**
   * Whole-word candidates per token, closest first. For the last token with prefixLast (its
   * complete words) they are found on first use: only purely lexical searches read them as
   * postings, every other order needs the distance of the few terms it reads (lastWholeDistance).
   */
  private readonly whole: (Candidate[] | null)[];
  /** The last token's prefix candidates (prefixLast only), in term order, disjoint. */
  private readonly prefixes: Candidate[];
  /** Exact level: each token's term id, -1 when absent. */
  readonly ids: Int32Array;
  /** Exact level: the last token's prefix range [lo, hi). */
  readonly lo: number;
  readonly hi: number;
  /** Typo level: term -> distance to each token (NO_MATCH none); the last token's entry is as a whole word. */
  readonly byTerm: Map<number, Uint8Array> | null;
  private readonly prefixLo: Int32Array;
  private readonly prefixHi: Int32Array;
  private readonly prefixDistance: Uint8Array;
  private readonly segment: Segment;
  private readonly tuning: SearchTuning;
  private readonly tokens: readonly string[];
  private readonly lastAllowed: number;
  private readonly lastWholeMemo = new Map<number, number>();
  private readonly sources = new Map<string, Source>();

  private constructor(
    segment: Segment,
    tuning: SearchTuning,
    typos: boolean,
    prefixLast: boolean,
    tokens: readonly string[],
    whole: (Candidate[] | null)[],
    prefixes: Candidate[],
  ) {
    this.segment = segment;
    this.tuning = tuning;
    this.typos = typos;
    this.n = whole.length;
    this.prefixLast = prefixLast;
    this.tokens = tokens;
    this.lastAllowed = typos ? allowedTypos(tokens[tokens.length - 1]!) : 0;
    this.whole = whole;
    this.prefixes = prefixes;
    this.ids = Int32Array.from(whole, (list) => (list?.[0]?.distance === 0 ? list[0].lo : -1));
    this.lo = prefixes[0]?.lo ?? 0;
    this.hi = prefixes[0]?.hi ?? 0;
    this.prefixLo = Int32Array.from(prefixes, (c) => c.lo);
    this.prefixHi = Int32Array.from(prefixes, (c) => c.hi);
    this.prefixDistance = Uint8Array.from(prefixes, (c) => c.distance);
    this.byTerm = typos ? termDistances(whole) : null;
  }

  /** The exact level, or null when some token matches nothing exactly. */
  static exact(
    segment: Segment,
    tokens: readonly string[],
    prefixLast: boolean,
    tuning: SearchTuning,
  ): QueryTerms | null {
    const n = tokens.length;
    const whole: Candidate[][] = tokens.map((token) => {
      const t = segment.terms.find(Buffer.from(token, "utf8"));
      return t < 0 ? [] : [{ lo: t, hi: t + 1, distance: 0, prefix: -1 }];
    });
    let prefixes: Candidate[] = [];
    if (prefixLast) {
      const last = tokens[n - 1]!;
      const bytes = Buffer.from(last, "utf8");
      const [lo, hi] = segment.terms.prefixRange(bytes);
      if (lo === hi) return null;
      const short = Array.from(last).length <= segment.meta.maxPrefix;
      prefixes = [{ lo, hi, distance: 0, prefix: short ? prefixOrNone(segment.prefixes.find(bytes)) : -1 }];
    }
    const required = prefixLast ? n - 1 : n;
    for (let i = 0; i < required; i++) if (whole[i]!.length === 0) return null;
    return new QueryTerms(segment, tuning, false, prefixLast, tokens, whole, prefixes);
  }

  /** The typo level, or null when no token may have typos (or some token matches nothing). */
  static withTypos(
    segment: Segment,
    tokens: readonly string[],
    prefixLast: boolean,
    tuning: SearchTuning,
    completeWords: boolean,
  ): QueryTerms | null {
    const allowed = tokens.map(allowedTypos);
    if (allowed.every((a) => a === 0)) return null;
    const n = tokens.length;
    const dict = segment.terms;
    const whole = tokens.map((token, i) =>
      prefixLast && i === n - 1 ? null : wholeCandidates(segment, token, allowed[i]!),
    );
    let prefixes: Candidate[] = [];
    if (prefixLast) {
      const last = tokens[n - 1]!;
      // A purely lexical order reads the last token's complete words as postings: one walk finds
      // them with its beginnings; otherwise only the distances of terms read are needed, later.
      let walked: FuzzyRange[];
      if (completeWords) {
        const both = fuzzyPrefixesAndTerms(dict, last, allowed[n - 1]!);
        walked = both.prefixes;
        whole[n - 1] = candidatesOf(both.whole);
      } else {
        walked = fuzzyTerms(dict, last, allowed[n - 1]!, true);
      }
      prefixes = walked.map((r) => ({
        lo: r.lo,
        hi: r.hi,
        distance: r.distance,
        prefix: r.subtree && r.depth <= segment.meta.maxPrefix ? prefixOrNone(prefixIdOf(segment, r.lo, r.depth)) : -1,
      }));
      if (prefixes.length === 0) return null;
    }
    const required = prefixLast ? n - 1 : n;
    for (let i = 0; i < required; i++) if (whole[i]!.length === 0) return null;
    return new QueryTerms(segment, tuning, true, prefixLast, tokens, whole, prefixes);
  }

  /** Token i's whole-word candidates (the last token's computed on first use). */
  private wholeOf(i: number): Candidate[] {
    let list = this.whole[i];
    if (list === null || list === undefined) {
      list = wholeCandidates(this.segment, this.tokens[i]!, this.lastAllowed);
      this.whole[i] = list;
    }
    return list;
  }

  /** Typo level, prefixLast: the distance of term t to the last token as a whole word, or NO_MATCH. */
  lastWholeDistance(t: number): number {
    let d = this.lastWholeMemo.get(t);
    if (d === undefined) {
      const { bytes, offsets } = this.segment.terms;
      const word = bytes.toString("utf8", offsets[t]!, offsets[t + 1]!);
      const last = this.tokens[this.n - 1]!;
      d = word === last ? 0 : editDistance(last, word, this.lastAllowed);
      if (d > this.lastAllowed) d = NO_MATCH;
      this.lastWholeMemo.set(t, d);
    }
    return d;
  }

  /** Distance of term t to the last token as a prefix (prefixLast only). */
  lastPrefixDistance(t: number): number {
    if (!this.typos) return t >= this.lo && t < this.hi ? 0 : NO_MATCH;
    const lo = this.prefixLo;
    let a = 0;
    let b = lo.length;
    while (a < b) {
      const mid = (a + b) >>> 1;
      if (lo[mid]! <= t) a = mid + 1;
      else b = mid;
    }
    return a > 0 && t < this.prefixHi[a - 1]! ? this.prefixDistance[a - 1]! : NO_MATCH;
  }

  /** The closest distance at which token i occurs in document doc's data text only (scope=all), or NO_MATCH. */
  dataDistance(i: number, doc: number, below: number): number {
    const { offsets, docs } = this.segment.dataPostings;
    for (const c of this.wholeOf(i)) {
      if (c.distance >= below) break;
      for (let t = c.lo; t < c.hi; t++) {
        let a = offsets[t]!;
        let b = offsets[t + 1]!;
        while (a < b) {
          const mid = (a + b) >>> 1;
          if (docs[mid]! < doc) a = mid + 1;
          else b = mid;
        }
        if (a < offsets[t + 1]! && docs[a] === doc) return c.distance;
      }
    }
    return NO_MATCH;
  }

  /** Documents with token i as a whole word in the title (for the last token with prefixLast: a complete word). */
  wholeSource(i: number, where: Where, order: Order): Source {
    return this.memo(`w${i}:${where}:${order}`, () => this.buildWholeSource(i, where, order));
  }

  private buildWholeSource(i: number, where: Where, order: Order): Source {
    const runs: RunSource[] = [];
    for (const c of this.wholeOf(i)) {
      for (let t = c.lo; t < c.hi; t++) pushRuns(runs, this.segment.titlePostings, order, t, where);
    }
    return this.union(runs);
  }

  /**
   * Documents whose last-token match is a complete word (a fine value of 0 or 1): some title word
   * is as close to the last token, whole, as the closest beginning of any title word. At the exact
   * level that is "has the token as a word"; with typos, a word one edit away counts only where no
   * title word begins with the token exactly, and so on for two.
   */
  completeSource(order: Order): Source {
    return this.memo(`c:${order}`, () => this.buildCompleteSource(order));
  }

  private buildCompleteSource(order: Order): Source {
    if (!this.typos) return this.wholeSource(this.n - 1, "all", order);
    const parts: Source[] = [];
    const closer: RunSource[] = [];
    for (let d = 0; d <= MAX_TYPOS_PER_TOKEN; d++) {
      const words: RunSource[] = [];
      for (const c of this.wholeOf(this.n - 1)) {
        if (c.distance === d)
          for (let t = c.lo; t < c.hi; t++) pushRuns(words, this.segment.titlePostings, order, t, "all");
      }
      if (words.length > 0) {
        const atD = this.union(words);
        parts.push(closer.length === 0 ? atD : new ExceptSource(atD, this.union([...closer])));
      }
      for (const c of this.prefixes) if (c.distance === d) this.pushPrefixRuns(closer, c, "all", order);
    }
    return parts.length === 1 ? parts[0]! : parts.length === 0 ? EMPTY : new UnionSource(parts);
  }

  /** Documents with a title token the last token prefixes (within its typos at the typo level). */
  prefixSource(where: Where, order: Order): Source {
    return this.memo(`p:${where}:${order}`, () => this.buildPrefixSource(where, order));
  }

  private buildPrefixSource(where: Where, order: Order): Source {
    const runs: RunSource[] = [];
    for (const c of this.postingCover()) this.pushPrefixRuns(runs, c, where, order);
    return this.union(runs);
  }

  /**
   * The last token's prefix candidates for reading postings: where consecutive candidates beyond
   * the prefix index (deeper than maxPrefix) together hold every term of one indexed prefix,
   * that prefix's single run replaces their term runs. A typo walk around "beaut" returns each
   * child of "beau" as its own subtree (one at distance 0, the rest at 1): their union is "beau",
   * one run instead of dozens to merge. Distances still come from the candidates themselves.
   */
  private postingCover(): Candidate[] {
    const segment = this.segment;
    const L = segment.meta.maxPrefix;
    const { bytes, offsets } = segment.terms;
    const out: Candidate[] = [];
    const list = this.prefixes;
    for (let i = 0; i < list.length; ) {
      const c = list[i]!;
      // The first L code points of term c.lo, when it has that many.
      let at = offsets[c.lo]!;
      let points = 0;
      while (points < L && at < offsets[c.lo + 1]!) {
        const lead = bytes[at]!;
        at += lead < 0x80 ? 1 : lead < 0xe0 ? 2 : lead < 0xf0 ? 3 : 4;
        points++;
      }
      if (c.prefix !== -1 || points < L) {
        out.push(c);
        i++;
        continue;
      }
      const key = bytes.subarray(offsets[c.lo]!, at);
      const [a, b] = segment.terms.prefixRange(key);
      let j = i;
      let next = a;
      let distance = c.distance;
      while (j < list.length && list[j]!.lo < b && list[j]!.lo === next) {
        next = list[j]!.hi;
        if (list[j]!.distance < distance) distance = list[j]!.distance;
        j++;
      }
      if (next === b && j > i + 1) {
        out.push({ lo: a, hi: b, distance, prefix: prefixOrNone(segment.prefixes.find(key)) });
        i = j;
      } else {
        out.push(c);
        i++;
      }
    }
    return out;
  }

  private pushPrefixRuns(runs: RunSource[], c: Candidate, where: Where, order: Order): void {
    if (c.prefix >= 0) pushRuns(runs, this.segment.prefixPostings, order, c.prefix, where);
    else if (c.prefix !== NO_TITLE_TERMS) {
      for (let t = c.lo; t < c.hi; t++) pushRuns(runs, this.segment.titlePostings, order, t, where);
    }
  }

  /** Documents with token i in data text only (scope=all), in weight order. */
  dataSource(i: number): Source {
    return this.memo(`d${i}`, () => this.buildDataSource(i));
  }

  private buildDataSource(i: number): Source {
    const { offsets, docs } = this.segment.dataPostings;
    const runs: RunSource[] = [];
    for (const c of this.wholeOf(i)) {
      for (let t = c.lo; t < c.hi; t++)
        if (offsets[t + 1]! > offsets[t]!) runs.push(new RunSource(docs, offsets[t]!, offsets[t + 1]!));
    }
    return this.union(runs);
  }

  /**
   * Sources are built once per query: several streams share them, and a union of many runs is
   * merged into one (mergeRuns), which costs as much as the postings it copies.
   */
  /**
   * The runs whose union is token i's matches (the last as a prefix with prefixLast; scope=all:
   * title or data text) at `where`, in weight order, unmerged: counting reads them in place
   * (search/match-set.ts), where building the merged source would copy every entry.
   */
  matchRuns(i: number, where: Where): RunSource[] {
    const runs: RunSource[] = [];
    if (this.prefixLast && i === this.n - 1) {
      for (const c of this.postingCover()) this.pushPrefixRuns(runs, c, where, "weight");
      return runs;
    }
    for (const c of this.wholeOf(i)) {
      for (let t = c.lo; t < c.hi; t++) pushRuns(runs, this.segment.titlePostings, "weight", t, where);
    }
    if (!this.prefixLast) {
      const { offsets, docs } = this.segment.dataPostings;
      for (const c of this.wholeOf(i)) {
        for (let t = c.lo; t < c.hi; t++)
          if (offsets[t + 1]! > offsets[t]!) runs.push(new RunSource(docs, offsets[t]!, offsets[t + 1]!));
      }
    }
    return runs;
  }

  private memo(key: string, build: () => Source): Source {
    let source = this.sources.get(key);
    if (source === undefined) {
      source = build();
      this.sources.set(key, source);
    }
    return source;
  }

  private union(runs: RunSource[]): Source {
    if (runs.length === 0) return EMPTY;
    if (runs.length === 1) return runs[0]!;
    if (runs.length <= this.tuning.maxUnionTerms) return new UnionSource(runs);
    // Merging copies every entry; a union of a few hundred runs is read lazily instead, unless it
    // is small enough that copying costs little.
    const entries = runs.reduce((sum, r) => sum + r.size, 0);
    if (this.typos && runs.length <= 8 * this.tuning.maxUnionTerms && entries > 16 * runs.length) {
      return new UnionSource(runs);
    }
    return mergeRuns(runs);
  }
}

/** Terms within `max` edits of a whole token, closest first (a lookup when no typo is allowed). */
function wholeCandidates(segment: Segment, token: string, max: number): Candidate[] {
  if (max === 0) {
    const t = segment.terms.find(Buffer.from(token, "utf8"));
    return t < 0 ? [] : [{ lo: t, hi: t + 1, distance: 0, prefix: -1 }];
  }
  return candidatesOf(fuzzyTerms(segment.terms, token, max, false));
}

function candidatesOf(ranges: FuzzyRange[]): Candidate[] {
  return ranges
    .map((r) => ({ lo: r.lo, hi: r.hi, distance: r.distance, prefix: -1 }))
    .sort((a, b) => a.distance - b.distance);
}

/** term -> per-token distances, from each token's whole-word candidates. */
function termDistances(whole: (Candidate[] | null)[]): Map<number, Uint8Array> {
  const n = whole.length;
  const map = new Map<number, Uint8Array>();
  whole.forEach((list, i) => {
    for (const c of list ?? []) {
      for (let t = c.lo; t < c.hi; t++) {
        let row = map.get(t);
        if (row === undefined) {
          row = new Uint8Array(n).fill(NO_MATCH);
          map.set(t, row);
        }
        if (c.distance < row[i]!) row[i] = c.distance;
      }
    }
  });
  return map;
}

const prefixOrNone = (p: number): number => (p < 0 ? NO_TITLE_TERMS : p);

/** The prefix id of the first `depth` code points of term lo (a prefix every term of its range shares). */
function prefixIdOf(segment: Segment, lo: number, depth: number): number {
  const { bytes, offsets } = segment.terms;
  let at = offsets[lo]!;
  for (let k = 0; k < depth; k++) {
    const lead = bytes[at]!;
    at += lead < 0x80 ? 1 : lead < 0xe0 ? 2 : lead < 0xf0 ? 3 : 4;
  }
  return segment.prefixes.find(bytes.subarray(offsets[lo]!, at));
}

/** Adds key k's title runs: at the first title token, elsewhere, or both. */
function pushRuns(runs: RunSource[], postings: SplitPostings, order: Order, key: number, where: Where): void {
  const offsets = order === "geo" ? postings.geoOffsets : postings.offsets;
  const values = order === "weight" ? postings.docs : order === "length" ? postings.ranks : postings.geoPositions;
  const a = offsets[2 * key]!;
  const b = offsets[2 * key + 1]!;
  const c = offsets[2 * key + 2]!;
  if (where !== "else" && b > a) runs.push(new RunSource(values, a, b));
  if (where !== "start" && c > b) runs.push(new RunSource(values, b, c));
}
