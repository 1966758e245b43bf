// A minor version as the net effect of its chain of changes over the major's segment: records
// upserted since the major, ids deleted since, and the segment documents they hide. Changes are
// few between checkpoints, so the overlay's records are searched by a linear scan.
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
import { walkData } from "../columns/data-fields.ts";
import { haversineMeters } from "../columns/geo.ts";
import { titleLengthKey } from "../columns/title-length.ts";
import { StringMatcher } from "../search/string-matching.ts";
import type { RankedHit } from "../search/ranked.ts";
import type { DocSet } from "../search/segment-search.ts";
import type { Segment } from "../segment/segment.ts";

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

/** The history shared by the versions of one chain; stamp 0 is where the line starts. */
class Line {
  readonly ids = new Map<string, History>();
  /** Per hidden segment document, the stamp from which it is hidden. */
  readonly hiddenFrom = new Map<number, number>();
  /** Per stamp: ids upserted and documents hidden as of it. */
  readonly upserted: number[] = [0];
  readonly hidden: number[] = [0];

  get tip(): number {
    return this.upserted.length - 1;
  }
}

/** The segment documents a version hides. */
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
  /** Segment documents whose id was upserted or deleted. */
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
  child(change: RecordChange, upserted: readonly OverlayRecord[], segment: Segment): Overlay {
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
      const doc = segment.findDoc(id);
      if (doc >= 0 && !line.hiddenFrom.has(doc)) {
        line.hiddenFrom.set(doc, stamp);
        hidden++;
      }
    };
    for (const item of upserted) set(item.record.id, item);
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
      if (state !== undefined) line.ids.set(id, { stamps: [0], states: [state] });
    }
    for (const [doc, from] of this.line.hiddenFrom) if (from <= this.stamp) line.hiddenFrom.set(doc, 0);
    line.upserted[0] = this.line.upserted[this.stamp]!;
    line.hidden[0] = this.line.hidden[this.stamp]!;
    return line;
  }

  count(segment: Segment): number {
    return segment.docCount - this.shadowed.size + this.upsertedCount;
  }

  /** The overlay's hits ranked like the segment's (all of them; callers merge and cut). */
  search(tokens: string[], prefixLast: boolean, request: SearchRequest): RankedHit[] {
    const matcher = new StringMatcher(tokens, prefixLast, request.typoTolerance !== false);
    const hits: RankedHit[] = [];
    for (const history of this.line.ids.values()) {
      const item = stateAt(history, this.stamp);
      if (!item) continue;
      const packed = matcher.match(item);
      if (packed < 0) continue;
      if (request.filter && !matchesFilter(request.filter, item.record.data ?? {})) continue;
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
    }
    return hits;
  }
}
