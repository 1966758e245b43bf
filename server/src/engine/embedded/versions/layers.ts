// A major's documents. Most majors are one segment. The checkpoint of a large index is layered
// instead (D-351): the segment of an earlier major as its base, with the documents hidden that
// were changed or deleted since, and a delta segment holding the records changed since that base.
// A checkpoint then writes the records changed since the base, not every record again; the base's
// files are hard links to the earlier major's, so they take no space or write of their own.
//
//   <major dir>/index.bin, records.bin            the delta (a segment like any other)
//   <major dir>/base-index.bin, base-records.bin  the base's files, linked
//   <major dir>/base-hidden.bin                   the base's hidden documents, sorted (uint32 LE)
//
// Documents are numbered across the layers (the base's first, then the delta's): the overlays of
// the major's minor versions hide them by that number, as they hide a plain segment's.
import fs from "node:fs";
import path from "node:path";
import { syncDirectory, syncFile } from "../../../durable.ts";
import { INDEX_FILE, RECORDS_FILE } from "../segment/meta.ts";
import { Segment } from "../segment/segment.ts";
import type { DocSet, HiddenDocs } from "../search/segment-search.ts";

export const BASE_PREFIX = "base-";
export const HIDDEN_FILE = "base-hidden.bin";

/** A layer's documents hidden by the major itself (a base's changed or deleted ones). */
export class FixedDocs implements DocSet, Iterable<number> {
  private readonly marks: Uint8Array;
  readonly docs: Uint32Array;

  constructor(docs: Uint32Array, docCount: number) {
    this.docs = docs;
    this.marks = new Uint8Array(docCount);
    for (const doc of docs) this.marks[doc] = 1;
  }

  get size(): number {
    return this.docs.length;
  }

  has(doc: number): boolean {
    return this.marks[doc] === 1;
  }

  [Symbol.iterator](): Iterator<number> {
    return this.docs[Symbol.iterator]();
  }
}

export interface Layer {
  segment: Segment;
  /** The number of its first document across the layers. */
  offset: number;
  /** Its documents the major hides; null when none. */
  hidden: FixedDocs | null;
}

export class Layers {
  readonly layers: readonly Layer[];
  /** Documents not hidden. */
  readonly docCount: number;
  /** Per overlay (one per version), each layer's hidden documents. */
  private readonly hiddenPerOverlay = new WeakMap<HiddenDocs, HiddenDocs[]>();

  private constructor(layers: Layer[]) {
    this.layers = layers;
    let count = 0;
    for (const layer of layers) count += layer.segment.docCount - (layer.hidden?.size ?? 0);
    this.docCount = count;
  }

  static single(segment: Segment): Layers {
    return new Layers([{ segment, offset: 0, hidden: null }]);
  }

  /** A layered major from its parts (their files in one folder, as `write` put them). */
  static layered(base: Segment, hidden: Uint32Array, delta: Segment): Layers {
    return new Layers([
      { segment: base, offset: 0, hidden: new FixedDocs(hidden, base.docCount) },
      { segment: delta, offset: base.docCount, hidden: null },
    ]);
  }

  /** Opens the major in `dir`: layered when it has a base's hidden documents. */
  static async open(dir: string, map: boolean): Promise<Layers> {
    let hidden: Buffer;
    try {
      hidden = await fs.promises.readFile(path.join(dir, HIDDEN_FILE));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
      return Layers.single(await Segment.load(dir, map));
    }
    const base = await Segment.load(dir, map, BASE_PREFIX);
    try {
      const delta = await Segment.load(dir, map);
      const docs = new Uint32Array(hidden.buffer.slice(hidden.byteOffset, hidden.byteOffset + hidden.byteLength));
      return Layers.layered(base, docs, delta);
    } catch (error) {
      base.close();
      throw error;
    }
  }

  /**
   * Adds a base to the delta segment built in `dir`: links to `base`'s files and the list of its
   * hidden documents, flushed before the caller records the major.
   */
  static async addBase(dir: string, base: Segment, hidden: Uint32Array): Promise<void> {
    for (const name of [INDEX_FILE, RECORDS_FILE]) {
      await fs.promises.link(path.join(base.dir, base.prefix + name), path.join(dir, BASE_PREFIX + name));
    }
    const file = path.join(dir, HIDDEN_FILE);
    await fs.promises.writeFile(file, Buffer.from(hidden.buffer, hidden.byteOffset, hidden.byteLength));
    await syncFile(file);
    await syncDirectory(dir);
  }

  get layered(): boolean {
    return this.layers.length > 1;
  }

  /** The base of a layered major, or the only segment of a plain one. */
  get base(): Segment {
    return this.layers[0]!.segment;
  }

  /** The document an id has across the layers, if not hidden; -1 otherwise. */
  findDoc(id: string): number {
    for (let i = this.layers.length - 1; i >= 0; i--) {
      const layer = this.layers[i]!;
      const doc = layer.segment.findDoc(id);
      if (doc >= 0 && !layer.hidden?.has(doc)) return layer.offset + doc;
    }
    return -1;
  }

  /** The layer (and its position) and its document of a number across the layers. */
  locate(doc: number): { layer: Layer; index: number; doc: number } {
    for (let i = this.layers.length - 1; i >= 0; i--) {
      const layer = this.layers[i]!;
      if (doc >= layer.offset) return { layer, index: i, doc: doc - layer.offset };
    }
    throw new Error(`document ${doc} is in no layer`);
  }

  /**
   * Per layer, the documents a version hides: the layer's own and those its changes hid
   * (`shadowed`, numbered across the layers). A plain major's are `shadowed` itself.
   */
  hidden(shadowed: HiddenDocs): HiddenDocs[] {
    if (!this.layered) return [shadowed];
    const cached = this.hiddenPerOverlay.get(shadowed);
    if (cached !== undefined) return cached;
    const own = this.layers.map(() => [] as number[]);
    for (const doc of shadowed) {
      const { index, doc: local } = this.locate(doc);
      own[index]!.push(local);
    }
    const sets = this.layers.map((layer, i) => union(layer.hidden, new Set(own[i])));
    this.hiddenPerOverlay.set(shadowed, sets);
    return sets;
  }

  close(): void {
    for (const layer of this.layers) layer.segment.close();
  }
}

/** A layer's own hidden documents and a version's: disjoint (a hidden document is never found again). */
function union(fixed: FixedDocs | null, changed: Set<number>): HiddenDocs {
  if (fixed === null) return changed;
  return {
    size: fixed.size + changed.size,
    has: (doc) => fixed.has(doc) || changed.has(doc),
    *[Symbol.iterator]() {
      yield* fixed;
      yield* changed;
    },
  };
}
