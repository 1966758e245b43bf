// A minor version as the net effect of its chain of changes over the major's segment: records
// upserted since the major, ids deleted since, and the segment documents they hide. Changes are
// few between checkpoints, so the overlay's records are searched by a scan: of those that may hold
// a word of the query's rarest token (WordIndex), else of all.
//
// The versions of a chain share one history of what each change did (a line), each reading it as
// of its own place in it (its stamp): a child version adds its change to the line instead of
// copying its parent's overlay, which cost every write a copy of every record changed since the
// major (about a tenth of a replica's CPU at 500 writes/s, bench/RESULTS.md). A version whose
// parent is not the newest of its line (a change made after a roll back, or after a failed
// commit) starts a line of its own, from a copy.
import type { RecordChange, SearchRecord, SearchRequest } from "../../../ports/engine.ts";
import { matchesFilter } from "../../../search/filter.ts";
import { tokenize } from "../../tokenize.ts";
import { editDistance, prefixEditDistance } from "../../typos.ts";
import { walkData } from "../columns/data-fields.ts";
import { haversineMeters } from "../columns/geo.ts";
import { titleLengthKey } from "../columns/title-length.ts";
import { StringMatcher } from "../search/string-matching.ts";
import type { RankedHit } from "../search/ranked.ts";
import type { DocSet } from "../search/segment-search.ts";

/** A major's documents as an overlay hides them: numbered across its layers (layers.ts), found only when not hidden. */
export interface MajorDocs {
  readonly docCount: number;
  findDoc(id: string): number;
}

/** An upserted record with what matching needs, computed once per change. */
export interface OverlayRecord {
  record: SearchRecord;
  titleTokens: string[];
  dataTokens: Set<string>;
  lat: number;
  lon: number;
}

export function overlayRecord(record: SearchRecord): OverlayRecord {
  const dataTokens = new Set<string>();
  walkData(record.data, (text) => {
    for (const t of tokenize(text)) dataTokens.add(t);
  });
  const hasGeo = record.latitude !== undefined && record.longitude !== undefined;
  return {
    record,
    titleTokens: tokenize(record.title),
    dataTokens,
    lat: hasGeo ? Number(record.latitude) : NaN,
    lon: hasGeo ? Number(record.longitude) : NaN,
  };
}

/** What changes did to one id, in stamp order: the record it became, or null once deleted. */
interface History {
  stamps: number[];
  states: (OverlayRecord | null)[];
}

/** The state of an id as of `stamp`: undefined where no change up to it touched the id. */
function stateAt(history: History, stamp: number): OverlayRecord | null | undefined {
  for (let i = history.stamps.length - 1; i >= 0; i--) if (history.stamps[i]! <= stamp) return history.states[i];
  return undefined;
}

/** Word beginnings indexed: a word's first one, two and three UTF-16 units. */
const START_UNITS = 3;

/**
 * Where in a version's changed records the words of a query may be, so that only those records
 * are compared with it: scanning every changed record for every search made a version 1,000
 * changes past its major three to seven times slower to search than its checkpoint, and one
 * 5,000 changes past it twenty times or more (bench/RESULTS.md, D-306). Per beginning of a word
 * (its first one, two and three UTF-16 units), per its second and third characters and per its
 * first and third, the ids of the records that had such a word at any stamp of the line: a
 * superset for every version of it (the match decides).
 *
 * A token that must match exactly, as a whole word or as a word's beginning, needs a word that
 * starts with its own first three units. One that may match with one typo (t0 t1 t2 ...) needs a
 * word whose first two characters are t0 t1 (the edit comes later), t1 t2 (t0 left out), t0 t2
 * (t1 left out, or t1 t2 swapped) or t1 t0 (swapped); or whose second and third are t1 t2 (t0
 * replaced) or t0 t1 (one put before t0); or whose first and third are t0 t2 (t1 replaced) or t0
 * t1 (one put after t0). Pairs, not single characters: a record has many words, and nearly every
 * one had a word starting with an "e" or a "t" (D-310). A token that may match with two typos,
 * or one whose lookups leave many records, is compared with each distinct word of the line
 * instead (`close`, D-312). Lists, not
 * sets: a write adds to them at a fifth of the cost. An id is listed again when a later change of
 * it has such a word too, and is never taken out: a record changed or deleted since is looked at
 * in vain.
 */
class WordIndex {
  /** Title words, which every search matches. */
  private readonly title = new WordLists();
  /** Data words, which whole-word searches (not title searches) match too. */
  private readonly data = new WordLists();

  add(item: OverlayRecord): void {
    const id = item.record.id;
    for (const word of item.titleTokens) this.title.add(word, id);
    for (const word of item.dataTokens) this.data.add(word, id);
  }

  /** Lists of the ids whose records may hold a word that `token` matches with up to one typo. */
  candidates(token: string, typos: number, titleOnly: boolean): Candidates {
    const lists: string[][] = [];
    for (const words of titleOnly ? [this.title] : [this.title, this.data]) words.collect(token, typos, lists);
    return sized(lists);
  }

  /**
   * Lists of the ids whose records held a word `token` matches with up to `typos` typos (as a
   * typed beginning with `prefix`): every distinct word of the line compared with it.
   */
  close(token: string, typos: number, titleOnly: boolean, prefix: boolean): Candidates {
    const lists: string[][] = [];
    for (const words of titleOnly ? [this.title] : [this.title, this.data]) words.close(token, typos, prefix, lists);
    return sized(lists);
  }
}

interface Candidates {
  lists: string[][];
  size: number;
}

function sized(lists: string[][]): Candidates {
  let size = 0;
  for (const ids of lists) size += ids.length;
  return { lists, size };
}

class WordLists {
  /** By the word's first one, two and three UTF-16 units. */
  private readonly starts = new Map<string, string[]>();
  /** By the word's second and third characters (`pairKey`). */
  private readonly middles = new Map<number, string[]>();
  /** By the word's first and third characters (`pairKey`). */
  private readonly skips = new Map<number, string[]>();
  /** By the whole word: the line's distinct words, compared with typo tokens (`close`). */
  private readonly words = new Map<string, string[]>();

  add(word: string, id: string): void {
    listId(this.words, word, id);
    for (let units = 1; units <= Math.min(START_UNITS, word.length); units++)
      listId(this.starts, word.slice(0, units), id);
    const [c0, c1, c2] = firstCodePoints(word);
    if (c2 === undefined) return;
    listId(this.middles, pairKey(c1!, c2), id);
    listId(this.skips, pairKey(c0!, c2), id);
  }

  collect(token: string, typos: number, into: string[][]): void {
    const add = (ids: string[] | undefined) => {
      if (ids !== undefined && !into.includes(ids)) into.push(ids);
    };
    if (typos === 0) {
      add(this.starts.get(token.slice(0, START_UNITS)));
      return;
    }
    // A token that may have a typo has at least four characters. A pair of characters is looked
    // up among the starts by its first three units at most (a superset where it has more).
    const [p0, p1, p2] = firstCodePoints(token) as [number, number, number];
    for (const [a, b] of [
      [p0, p1],
      [p1, p2],
      [p0, p2],
      [p1, p0],
    ] as const)
      add(this.starts.get(String.fromCodePoint(a, b).slice(0, START_UNITS)));
    add(this.middles.get(pairKey(p1, p2)));
    add(this.middles.get(pairKey(p0, p1)));
    add(this.skips.get(pairKey(p0, p2)));
    add(this.skips.get(pairKey(p0, p1)));
  }

  close(token: string, typos: number, prefix: boolean, into: string[][]): void {
    for (const [word, ids] of this.words) {
      const d = prefix ? prefixEditDistance(token, word, typos) : editDistance(token, word, typos);
      if (d <= typos) into.push(ids);
    }
  }
}

/** A word's first three code points (fewer for a shorter word). */
function firstCodePoints(word: string): [number?, number?, number?] {
  const c0 = word.codePointAt(0);
  if (c0 === undefined) return [];
  const at1 = c0 > 0xffff ? 2 : 1;
  const c1 = word.codePointAt(at1);
  if (c1 === undefined) return [c0];
  return [c0, c1, word.codePointAt(at1 + (c1 > 0xffff ? 2 : 1))];
}

/** Two code points as one number (21 bits each): a key that costs no string. */
function pairKey(a: number, b: number): number {
  return a * 0x200000 + b;
}

function listId<K>(lists: Map<K, string[]>, key: K, id: string): void {
  const ids = lists.get(key);
  if (ids === undefined) lists.set(key, [id]);
  // A record's words are added one after the other: once per record is enough.
  else if (ids[ids.length - 1] !== id) ids.push(id);
}

/** The history shared by the versions of one chain; stamp 0 is where the line starts. */
class Line {
  readonly ids = new Map<string, History>();
  readonly words = new WordIndex();
  /** Per hidden segment document, the stamp from which it is hidden. */
  readonly hiddenFrom = new Map<number, number>();
  /** Per stamp: ids upserted and documents hidden as of it. */
  readonly upserted: number[] = [0];
  readonly hidden: number[] = [0];

  get tip(): number {
    return this.upserted.length - 1;
  }
}

/** The major's documents a version hides. */
class HiddenDocs implements DocSet, Iterable<number> {
  private readonly line: Line;
  private readonly stamp: number;

  constructor(line: Line, stamp: number) {
    this.line = line;
    this.stamp = stamp;
  }

  get size(): number {
    return this.line.hidden[this.stamp]!;
  }

  has(doc: number): boolean {
    const from = this.line.hiddenFrom.get(doc);
    return from !== undefined && from <= this.stamp;
  }

  *[Symbol.iterator](): Iterator<number> {
    for (const [doc, from] of this.line.hiddenFrom) if (from <= this.stamp) yield doc;
  }
}

export class Overlay {
  private readonly line: Line;
  private readonly stamp: number;
  /** The major's documents whose id was upserted or deleted. */
  readonly shadowed: DocSet & Iterable<number>;

  private constructor(line: Line, stamp: number) {
    this.line = line;
    this.stamp = stamp;
    this.shadowed = new HiddenDocs(line, stamp);
  }

  /** The overlay of a major itself: nothing changed. */
  static empty(): Overlay {
    return new Overlay(new Line(), 0);
  }

  /** The record the version's changes upserted for `id`, if they did. */
  upserted(id: string): OverlayRecord | undefined {
    const history = this.line.ids.get(id);
    return history === undefined ? undefined : (stateAt(history, this.stamp) ?? undefined);
  }

  /** Whether the version's changes deleted `id` (and did not upsert it since). */
  deleted(id: string): boolean {
    const history = this.line.ids.get(id);
    return history !== undefined && stateAt(history, this.stamp) === null;
  }

  /** How many records the version's changes upserted. */
  get upsertedCount(): number {
    return this.line.upserted[this.stamp]!;
  }

  /** The records the version's changes upserted. */
  records(): OverlayRecord[] {
    const out: OverlayRecord[] = [];
    for (const history of this.line.ids.values()) {
      const state = stateAt(history, this.stamp);
      if (state) out.push(state);
    }
    return out;
  }

  /** The ids the version's changes upserted or deleted. */
  touched(): string[] {
    const out: string[] = [];
    for (const [id, history] of this.line.ids) if (stateAt(history, this.stamp) !== undefined) out.push(id);
    return out;
  }

  /**
   * The overlay of a child version: this one plus the change. Added to this line when this is its
   * newest version; otherwise a line of its own starts from a copy of this version.
   */
  child(change: RecordChange, upserted: readonly OverlayRecord[], major: MajorDocs): Overlay {
    const line = this.stamp === this.line.tip ? this.line : this.copyLine();
    const stamp = line.tip + 1;
    let upserts = line.upserted[stamp - 1]!;
    let hidden = line.hidden[stamp - 1]!;
    const set = (id: string, state: OverlayRecord | null) => {
      let history = line.ids.get(id);
      if (history === undefined) {
        history = { stamps: [], states: [] };
        line.ids.set(id, history);
      }
      const last = history.stamps.length - 1;
      const before = last >= 0 ? history.states[last] : undefined;
      if (before) upserts--;
      if (state) upserts++;
      if (last >= 0 && history.stamps[last] === stamp) history.states[last] = state;
      else {
        history.stamps.push(stamp);
        history.states.push(state);
      }
      const doc = major.findDoc(id);
      if (doc >= 0 && !line.hiddenFrom.has(doc)) {
        line.hiddenFrom.set(doc, stamp);
        hidden++;
      }
    };
    for (const item of upserted) {
      set(item.record.id, item);
      line.words.add(item);
    }
    for (const id of change.deletes) set(id, null);
    line.upserted.push(upserts);
    line.hidden.push(hidden);
    return new Overlay(line, stamp);
  }

  /** A line whose start (stamp 0) is this version. */
  private copyLine(): Line {
    const line = new Line();
    for (const [id, history] of this.line.ids) {
      const state = stateAt(history, this.stamp);
      if (state === undefined) continue;
      line.ids.set(id, { stamps: [0], states: [state] });
      if (state) line.words.add(state);
    }
    for (const [doc, from] of this.line.hiddenFrom) if (from <= this.stamp) line.hiddenFrom.set(doc, 0);
    line.upserted[0] = this.line.upserted[this.stamp]!;
    line.hidden[0] = this.line.hidden[this.stamp]!;
    return line;
  }

  count(major: MajorDocs): number {
    return major.docCount - this.shadowed.size + this.upsertedCount;
  }

  /** The overlay's hits ranked like the segment's (all of them; callers merge and cut). */
  search(tokens: string[], prefixLast: boolean, request: SearchRequest): RankedHit[] {
    const typos = request.typoTolerance !== false;
    const matcher = new StringMatcher(tokens, prefixLast, typos);
    const hits: RankedHit[] = [];
    const consider = (history: History) => {
      const item = stateAt(history, this.stamp);
      if (!item) return;
      const packed = matcher.match(item);
      if (packed < 0) return;
      if (request.filter && !matchesFilter(request.filter, item.record.data ?? {})) return;
      const distance =
        request.geo && !Number.isNaN(item.lat)
          ? haversineMeters(request.geo.latitude, request.geo.longitude, item.lat, item.lon)
          : Infinity;
      hits.push({
        bucket: packed >>> 2,
        fine: packed & 3,
        lengthKey: titleLengthKey(item.titleTokens.length, item.record.title.length),
        weight: item.record.weight ?? 0,
        distance,
        id: item.record.id,
        record: item.record,
      });
    };
    // Only the records that may hold a word of the rarest token (WordIndex), unless those are
    // most of them (looking each up costs more than going through them all).
    const { words, ids } = this.line;
    const fewer = (found: Candidates | undefined, share: number) =>
      found !== undefined && found.size * share < ids.size;
    let fewest: Candidates | undefined;
    for (const [i, token] of tokens.entries()) {
      if (matcher.allowed[i]! > 1) continue;
      const found = words.candidates(token, matcher.allowed[i]!, prefixLast);
      if (fewest === undefined || found.size < fewest.size) fewest = found;
    }
    // Tokens that may have typos are compared with every distinct word when no lookup left
    // fewer than an eighth of the records (two typos are not looked up): that costs more than a
    // lookup, and less than matching that many records (bench/RESULTS.md, D-312).
    for (const [i, token] of tokens.entries()) {
      if (matcher.allowed[i]! === 0 || fewer(fewest, 8)) continue;
      const found = words.close(token, matcher.allowed[i]!, prefixLast, prefixLast && i === tokens.length - 1);
      if (fewest === undefined || found.size < fewest.size) fewest = found;
    }
    if (fewest !== undefined && fewer(fewest, 2)) {
      const seen = new Set<string>();
      for (const list of fewest.lists) {
        for (const id of list) {
          if (seen.has(id)) continue;
          seen.add(id);
          consider(ids.get(id)!);
        }
      }
      return hits;
    }
    for (const history of ids.values()) consider(history);
    return hits;
  }
}
