// What one version changed relative to another (SearchEngine.diff), computed on demand from what
// the versions already store; nothing is written at ingest or record-write time (D-237).
//
// Each side is a major (its segment, or a base and a delta: layers.ts) and an overlay (the net
// effect of its chain of changes). Two versions of one major share its documents, so only the ids
// either overlay touched can differ: a handful, looked up one by one. Versions of different majors
// are compared by walking both majors' id tables (sorted in code point order; a layered major's
// two in step, without its hidden documents) side by side, one merge pass: an id on one side only
// was added or deleted, an id on both is compared by its stored JSON, byte for byte first and
// parsed only when the bytes differ (an upload may order a record's keys differently).
// The pass reads every record of both segments once, pausing for searches as a checkpoint does;
// the result (a few bytes per changed id) is kept, so later pages cost a binary search.
import type { DiffCounts, RecordDiff, SearchRecord, VersionDiffPage } from "../../../ports/engine.ts";
import type { Segment } from "../segment/segment.ts";
import { compareCodePoints, type SortedStrings } from "../termdict/sorted-strings.ts";
import { Pacer } from "../util/pacer.ts";
import type { Layers } from "./layers.ts";
import type { Overlay } from "./overlay.ts";

/** A version as the engine reads it; a null major is the empty index (no base). */
export interface DiffSide {
  major: Layers | null;
  overlay: Overlay | null;
}

const KINDS: readonly RecordDiff[] = ["added", "updated", "deleted", "unchanged"];
const ADDED = 0;
const UPDATED = 1;
const DELETED = 2;
const UNCHANGED = 3;

/** Ids between asking the pacer whether searches should get the event loop. */
const CHECK_EVERY = 0x3ff;

/** The string at position i of a sorted string table. */
const stringAt = (table: SortedStrings, i: number) =>
  table.bytes.toString("utf8", table.offsets[i], table.offsets[i + 1]);

/** Strings at positions i of a and j of b compared by their UTF-8 bytes, which is code point order. */
function compareAt(a: SortedStrings, i: number, b: SortedStrings, j: number): number {
  const aStart = a.offsets[i]!;
  const aLength = a.offsets[i + 1]! - aStart;
  const bStart = b.offsets[j]!;
  const bLength = b.offsets[j + 1]! - bStart;
  const n = Math.min(aLength, bLength);
  for (let k = 0; k < n; k++) {
    const d = a.bytes[aStart + k]! - b.bytes[bStart + k]!;
    if (d !== 0) return d;
  }
  return aLength - bLength;
}

/** Whether two JSON values are equal, objects compared key by key whatever their order. */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const other = b as unknown[];
    return a.length === other.length && a.every((item, i) => sameJson(item, other[i]));
  }
  const ak = Object.keys(a);
  const bo = b as Record<string, unknown>;
  if (ak.length !== Object.keys(bo).length) return false;
  return ak.every((k) => Object.hasOwn(bo, k) && sameJson((a as Record<string, unknown>)[k], bo[k]));
}

/** The record a side holds for an id: its overlay decides when it touched the id, else its major. */
function recordOf(side: DiffSide, id: string): SearchRecord | null {
  const upserted = side.overlay?.upserted(id);
  if (upserted !== undefined) return upserted.record;
  if (side.major === null || side.overlay?.deleted(id)) return null;
  const doc = side.major.findDoc(id);
  if (doc < 0) return null;
  const found = side.major.locate(doc);
  return found.layer.segment.records.read(found.doc);
}

/** The ids an overlay upserted or deleted. */
const touchedBy = (overlay: Overlay | null): string[] => (overlay === null ? [] : overlay.touched());

/** A computed diff: counts, and the changed ids in code point order, a page at a time. */
export class VersionDiff {
  readonly counts: DiffCounts;
  /** Changed ids found by the merge: the id table they are in (`tables`) and the position in it. */
  private readonly merged: { kinds: Uint8Array; sides: Uint8Array; ranks: Uint32Array };
  /** Changed ids among those the overlays touched, sorted. */
  private readonly touched: { id: string; kind: number }[];
  /** The id tables of the version's segments, then the base's. */
  private readonly tables: SortedStrings[];

  constructor(
    counts: DiffCounts,
    merged: { kinds: Uint8Array; sides: Uint8Array; ranks: Uint32Array },
    touched: { id: string; kind: number }[],
    tables: SortedStrings[],
  ) {
    this.counts = counts;
    this.merged = merged;
    this.touched = touched;
    this.tables = tables;
  }

  private mergedId(i: number): string {
    return stringAt(this.tables[this.merged.sides[i]!]!, this.merged.ranks[i]!);
  }

  /** The first position of each list whose id comes after `after`. */
  private start(after: string | undefined): [number, number] {
    if (after === undefined) return [0, 0];
    const firstAfter = (n: number, idAt: (i: number) => string) => {
      let lo = 0;
      let hi = n;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (compareCodePoints(idAt(mid), after) <= 0) lo = mid + 1;
        else hi = mid;
      }
      return lo;
    };
    return [
      firstAfter(this.merged.kinds.length, (i) => this.mergedId(i)),
      firstAfter(this.touched.length, (i) => this.touched[i]!.id),
    ];
  }

  page(after: string | undefined, limit: number): VersionDiffPage {
    let [i, j] = this.start(after);
    const changes: VersionDiffPage["changes"] = [];
    const m = this.merged.kinds.length;
    const t = this.touched.length;
    while (changes.length < limit && (i < m || j < t)) {
      const fromMerged = i < m && (j >= t || compareCodePoints(this.mergedId(i), this.touched[j]!.id) < 0);
      if (fromMerged) {
        changes.push({ id: this.mergedId(i), change: KINDS[this.merged.kinds[i]!]! });
        i++;
      } else {
        const { id, kind } = this.touched[j++]!;
        changes.push({ id, change: KINDS[kind]! });
      }
    }
    const page: VersionDiffPage = { counts: { ...this.counts }, changes };
    if ((i < m || j < t) && changes.length > 0) page.next = changes[changes.length - 1]!.id;
    return page;
  }
}

/**
 * Computes what `version` changed relative to `base`. `own`: the ids a record change wrote, when
 * `base` is its parent; those with the content they had are listed as `unchanged`.
 */
export async function computeDiff(base: DiffSide, version: DiffSide, own?: ReadonlySet<string>): Promise<VersionDiff> {
  const counts: DiffCounts = { added: 0, updated: 0, deleted: 0, unchanged: 0 };
  const touched: { id: string; kind: number }[] = [];
  const merged = { kinds: [] as number[], sides: [] as number[], ranks: [] as number[] };
  const pacer = new Pacer();

  // The ids an overlay touched: compared record by record, whatever the segments hold.
  const ids = new Set([...touchedBy(base.overlay), ...touchedBy(version.overlay)]);
  for (const id of ids) {
    const before = recordOf(base, id);
    const after = recordOf(version, id);
    let kind: number;
    if (before === null && after === null) continue;
    else if (before === null) kind = ADDED;
    else if (after === null) kind = DELETED;
    else kind = sameJson(before, after) ? UNCHANGED : UPDATED;
    counts[KINDS[kind]!]++;
    if (kind !== UNCHANGED || own?.has(id)) touched.push({ id, kind });
  }
  touched.sort((a, b) => compareCodePoints(a.id, b.id));

  const target = version.major;
  const tables = [...(target?.layers ?? []), ...(base.major?.layers ?? [])].map((l) => l.segment.ids);
  if (target !== null && base.major !== target) {
    await mergeMajors(base.major, target, ids, counts, merged, pacer);
  } else if (target !== null) {
    // One major under both: a record no overlay touched is the same record on both sides.
    let touchedInMajor = 0;
    for (const id of ids) if (target.findDoc(id) >= 0) touchedInMajor++;
    counts.unchanged += target.docCount - touchedInMajor;
  }
  return new VersionDiff(
    counts,
    {
      kinds: Uint8Array.from(merged.kinds),
      sides: Uint8Array.from(merged.sides),
      ranks: Uint32Array.from(merged.ranks),
    },
    touched,
    tables,
  );
}

/**
 * A major's ids in code point order: each segment's id table walked in step, without the
 * documents the major hides and the ids an overlay touched (compared already). A live id is in one
 * of its segments only (a delta's ids hide the base's documents).
 */
class IdWalk {
  private readonly layers: Layers;
  /** The index of its first segment's table among the diff's tables. */
  private readonly first: number;
  private readonly skip: Set<number>[];
  private readonly positions: number[];
  /** The segment whose id comes next; -1 once done. */
  at = -1;

  constructor(layers: Layers, first: number, touched: Buffer[]) {
    this.layers = layers;
    this.first = first;
    this.skip = layers.layers.map((layer) => {
      const ranks = new Set<number>();
      for (const key of touched) {
        const rank = layer.segment.ids.find(key);
        if (rank >= 0) ranks.add(rank);
      }
      return ranks;
    });
    this.positions = layers.layers.map(() => 0);
    for (let l = 0; l < this.positions.length; l++) this.settle(l);
    this.choose();
  }

  get table(): number {
    return this.first + this.at;
  }

  get rank(): number {
    return this.positions[this.at]!;
  }

  get segment(): Segment {
    return this.layers.layers[this.at]!.segment;
  }

  get doc(): number {
    return this.segment.rankToDoc[this.rank]!;
  }

  get ids(): SortedStrings {
    return this.segment.ids;
  }

  advance(): void {
    this.positions[this.at]!++;
    this.settle(this.at);
    this.choose();
  }

  /** Moves a segment's position past what the walk leaves out. */
  private settle(l: number): void {
    const { segment, hidden } = this.layers.layers[l]!;
    const skip = this.skip[l]!;
    let i = this.positions[l]!;
    while (i < segment.ids.count && (skip.has(i) || hidden?.has(segment.rankToDoc[i]!))) i++;
    this.positions[l] = i;
  }

  private choose(): void {
    this.at = -1;
    for (let l = 0; l < this.positions.length; l++) {
      const ids = this.layers.layers[l]!.segment.ids;
      if (this.positions[l]! >= ids.count) continue;
      if (this.at < 0 || compareAt(ids, this.positions[l]!, this.ids, this.rank) < 0) this.at = l;
    }
  }
}

/** Walks both majors' ids in step, without the ids an overlay touched (compared already). */
async function mergeMajors(
  base: Layers | null,
  version: Layers,
  touched: Set<string>,
  counts: DiffCounts,
  merged: { kinds: number[]; sides: number[]; ranks: number[] },
  pacer: Pacer,
): Promise<void> {
  const keys = [...touched].map((id) => Buffer.from(id, "utf8"));
  const b = new IdWalk(version, 0, keys);
  const a = base === null ? null : new IdWalk(base, version.layers.length, keys);
  const push = (kind: number, side: number, rank: number) => {
    counts[KINDS[kind]!]++;
    if (kind === UNCHANGED) return;
    merged.kinds.push(kind);
    merged.sides.push(side);
    merged.ranks.push(rank);
  };
  let steps = 0;
  while ((a !== null && a.at >= 0) || b.at >= 0) {
    if ((++steps & CHECK_EVERY) === 0 && pacer.due()) await pacer.pause();
    const order = a === null || a.at < 0 ? 1 : b.at < 0 ? -1 : compareAt(a.ids, a.rank, b.ids, b.rank);
    if (order < 0) {
      push(DELETED, a!.table, a!.rank);
      a!.advance();
    } else if (order > 0) {
      push(ADDED, b.table, b.rank);
      b.advance();
    } else {
      push(sameDocs(a!.segment, a!.doc, b.segment, b.doc) ? UNCHANGED : UPDATED, b.table, b.rank);
      a!.advance();
      b.advance();
    }
  }
}

/** Whether two stored records are the same: equal JSON, or equal values in another key order. */
function sameDocs(a: Segment, docA: number, b: Segment, docB: number): boolean {
  const x = a.records.readJson(docA);
  const y = b.records.readJson(docB);
  return x === y || sameJson(JSON.parse(x), JSON.parse(y));
}
