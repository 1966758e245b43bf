// The version tree of one index in memory: majors (a segment, or layers of two: layers.ts; loaded
// on first use) and the minor changes on top of them, with a small cache of overlays (the net
// effect of a chain of changes).
import { isMajorVersion, parseVersion, type VersionId } from "../../../domain/version-id.ts";
import type { RecordChange } from "../../../ports/engine.ts";
import type { ChangeRow, MajorRow } from "../catalog/catalog.ts";
import { Layers } from "./layers.ts";
import { Overlay, overlayRecord, type MajorDocs, type OverlayRecord } from "./overlay.ts";

const OVERLAY_CACHE = 32;

export class MajorVersion {
  readonly row: MajorRow;
  readonly dir: string;
  private readonly map: boolean;
  private layers: Layers | null = null;
  private loading: Promise<Layers> | null = null;

  constructor(row: MajorRow, dir: string, map: boolean, layers: Layers | null = null) {
    this.row = row;
    this.dir = dir;
    this.map = map;
    this.layers = layers;
  }

  async load(): Promise<Layers> {
    if (this.layers !== null) return this.layers;
    this.loading ??= Layers.open(this.dir, this.map).then((l) => (this.layers = l));
    return this.loading;
  }

  close(): void {
    this.layers?.close();
    // A load still in flight closes what it opens; one that failed opened nothing, and its error
    // went to whoever asked for the segment.
    void this.loading?.then(
      (s) => s.close(),
      () => undefined,
    );
  }
}

export class ChangeVersion {
  readonly row: ChangeRow;
  readonly major: number;
  private parsed: { change: RecordChange; upserted: OverlayRecord[] } | null = null;

  constructor(row: ChangeRow, major: number) {
    this.row = row;
    this.major = major;
  }

  /** The change with its upserted records tokenised, computed once. */
  get content(): { change: RecordChange; upserted: OverlayRecord[] } {
    if (this.parsed === null) {
      const body = JSON.parse(this.row.body) as Pick<RecordChange, "upserts" | "deletes">;
      const change: RecordChange = { version: this.row.version, parent: this.row.parent, ...body };
      this.parsed = { change, upserted: change.upserts.map(overlayRecord) };
    }
    return this.parsed;
  }

  static fromChange(change: RecordChange, upserted: OverlayRecord[], records: number, major: number): ChangeVersion {
    const body = JSON.stringify({ upserts: change.upserts, deletes: change.deletes });
    const node = new ChangeVersion({ version: change.version, parent: change.parent, records, body }, major);
    node.parsed = { change, upserted };
    return node;
  }
}

export class IndexVersions {
  readonly majors = new Map<number, MajorVersion>();
  readonly changes = new Map<VersionId, ChangeVersion>();
  /** Majors whose bulk build is in progress. */
  readonly building = new Set<number>();
  private readonly overlays = new Map<VersionId, Overlay>();

  has(version: VersionId): boolean {
    const { major, minor } = parseVersion(version);
    return minor === 0 ? this.majors.has(major) : this.changes.has(version);
  }

  /** The overlay of a version of a loaded major (empty for the major itself). */
  overlay(version: VersionId, major: MajorDocs): Overlay {
    const cached = this.overlays.get(version);
    if (cached !== undefined) {
      // Re-insert: the cache evicts in insertion order, so this keeps hot versions.
      this.overlays.delete(version);
      this.overlays.set(version, cached);
      return cached;
    }
    // Walk up to the major or a cached ancestor, then apply the changes downwards.
    const chain: ChangeVersion[] = [];
    let overlay = Overlay.empty();
    for (let v = version; !isMajorVersion(v); ) {
      const hit = this.overlays.get(v);
      if (hit !== undefined) {
        overlay = hit;
        break;
      }
      const node = this.changes.get(v);
      if (node === undefined) throw new Error(`unknown version ${v}`);
      chain.push(node);
      v = node.row.parent;
    }
    for (let i = chain.length - 1; i >= 0; i--) {
      const { change, upserted } = chain[i]!.content;
      overlay = overlay.child(change, upserted, major);
    }
    this.remember(version, overlay);
    return overlay;
  }

  remember(version: VersionId, overlay: Overlay): void {
    this.overlays.set(version, overlay);
    if (this.overlays.size > OVERLAY_CACHE) this.overlays.delete(this.overlays.keys().next().value!);
  }

  /** The versions and every change descending from them, from one pass over the changes. */
  descendantsOf(roots: readonly VersionId[]): VersionId[] {
    const children = new Map<VersionId, VersionId[]>();
    for (const node of this.changes.values()) {
      const list = children.get(node.row.parent) ?? [];
      list.push(node.row.version);
      children.set(node.row.parent, list);
    }
    const out = new Set<VersionId>();
    const stack = [...roots];
    while (stack.length > 0) {
      const v = stack.pop()!;
      if (out.has(v)) continue;
      out.add(v);
      stack.push(...(children.get(v) ?? []));
    }
    return [...out];
  }

  /** The version and every change descending from it. */
  descendants(version: VersionId): VersionId[] {
    const children = new Map<VersionId, VersionId[]>();
    for (const node of this.changes.values()) {
      const list = children.get(node.row.parent) ?? [];
      list.push(node.row.version);
      children.set(node.row.parent, list);
    }
    const out: VersionId[] = [];
    const stack = [version];
    while (stack.length > 0) {
      const v = stack.pop()!;
      out.push(v);
      stack.push(...(children.get(v) ?? []));
    }
    return out;
  }

  /** Forgets every cached overlay (after a purge rewrote the changes and segments they were made of). */
  clearOverlays(): void {
    this.overlays.clear();
  }

  forget(versions: readonly VersionId[]): void {
    for (const v of versions) {
      this.changes.delete(v);
      this.overlays.delete(v);
    }
  }
}
