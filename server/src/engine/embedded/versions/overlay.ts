// A minor version as the net effect of its chain of changes over the major's segment: records
// upserted since the major, ids deleted since, and the segment documents they hide. Changes are
// few between checkpoints, so the overlay's records are searched by a linear scan.
import type { RecordChange, SearchRecord, SearchRequest } from "../../../ports/engine.ts";
import { matchesFilter } from "../../../search/filter.ts";
import { tokenize } from "../../tokenize.ts";
import { walkData } from "../columns/data-fields.ts";
import { haversineMeters } from "../columns/geo.ts";
import { titleLengthKey } from "../columns/title-length.ts";
import { StringMatcher } from "../search/string-matching.ts";
import type { RankedHit } from "../search/ranked.ts";
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

export class Overlay {
  readonly upserts: Map<string, OverlayRecord>;
  readonly deletes: Set<string>;
  /** Segment documents whose id was upserted or deleted. */
  readonly shadowed: Set<number>;

  constructor(upserts = new Map<string, OverlayRecord>(), deletes = new Set<string>(), shadowed = new Set<number>()) {
    this.upserts = upserts;
    this.deletes = deletes;
    this.shadowed = shadowed;
  }

  /** The overlay of a child version: this one plus the change. */
  extend(change: RecordChange, upserted: readonly OverlayRecord[], segment: Segment): Overlay {
    const next = this.copy();
    next.apply(change, upserted, segment);
    return next;
  }

  /**
   * A copy to apply changes to in place: a batch of changes copies the overlay once, not once per
   * change (each copy is of every record changed since the major, up to SIFT_COALESCE_AFTER).
   */
  copy(): Overlay {
    return new Overlay(new Map(this.upserts), new Set(this.deletes), new Set(this.shadowed));
  }

  /** Applies a change to this overlay itself: only to a copy no version has yet. */
  apply(change: RecordChange, upserted: readonly OverlayRecord[], segment: Segment): void {
    const shadow = (id: string) => {
      const doc = segment.findDoc(id);
      if (doc >= 0) this.shadowed.add(doc);
    };
    for (const item of upserted) {
      this.upserts.set(item.record.id, item);
      this.deletes.delete(item.record.id);
      shadow(item.record.id);
    }
    for (const id of change.deletes) {
      this.upserts.delete(id);
      this.deletes.add(id);
      shadow(id);
    }
  }

  count(segment: Segment): number {
    return segment.docCount - this.shadowed.size + this.upserts.size;
  }

  /** The overlay's hits ranked like the segment's (all of them; callers merge and cut). */
  search(tokens: string[], prefixLast: boolean, request: SearchRequest): RankedHit[] {
    const matcher = new StringMatcher(tokens, prefixLast, request.typoTolerance !== false);
    const hits: RankedHit[] = [];
    for (const item of this.upserts.values()) {
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
