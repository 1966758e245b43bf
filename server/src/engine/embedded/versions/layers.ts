// A major's documents. Most majors are one segment. The checkpoint of a large index is layered
// instead (D-351): the segment of an earlier major as its base, with the documents hidden that
// were changed or deleted since, and a delta segment holding the records changed since that base.
// A checkpoint then writes the records changed since the base, not every record again; the base's
// files are hard links to the earlier major's, so they take no space or write of their own.
//
//   <major dir>/index.bin, records.bin            the delta (a segment like any other)
//   <major dir>/base-index.bin, base-records.bin  the base's files, linked
//   <major dir>/base-hidden.bin                   the base's hidden documents, sorted (uint32 LE)
//   <major dir>/base-ref.json                     which segment the base is (its index's size, digest)
//
// With replication a layered major is published without its base's files: the other nodes hold
// that segment already and link it from their own copy, found by base-ref.json (D-353).
//
// Documents are numbered across the layers (the base's first, then the delta's): the overlays of
// the major's minor versions hide them by that number, as they hide a plain segment's.
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { syncDirectory, syncFile } from "../../../durable.ts";
import { MissingBaseError } from "../../../ports/engine.ts";
import { INDEX_FILE, RECORDS_FILE } from "../segment/meta.ts";
import { Segment } from "../segment/segment.ts";
import type { DocSet, HiddenDocs } from "../search/segment-search.ts";

export const BASE_PREFIX = "base-";
export const HIDDEN_FILE = "base-hidden.bin";
export const BASE_REF_FILE = "base-ref.json";
/** The base's own files, which a node links from its copy of that segment (see linkBase). */
export const BASE_FILES = [BASE_PREFIX + INDEX_FILE, BASE_PREFIX + RECORDS_FILE];

/**
 * The names of a major's files that replication publishes: a layered major's without its base's
 * when its reference names that base, for the importing node to link (D-353).
 */
export function publishedNames(names: string[]): string[] {
  return names.includes(BASE_REF_FILE) ? names.filter((n) => !BASE_FILES.includes(n)) : names;
}

/**
 * Which segment a base is: its index file's size and SHA-256. The index numbers the documents, so
 * a segment with the same index file numbers them as the base's hidden list does; a purge's
 * erasure rewrites records in place, never the index, and a rebuild makes another segment.
 */
export interface BaseRef {
  indexBytes: number;
  indexSha256: string;
}

/**
 * A segment's reference, by the path of its index file: computed once per file (about 0.3 s for a
 * million records), kept while its size and modification time hold.
 */
const refs = new Map<string, { size: number; mtimeMs: number; ref: BaseRef }>();

async function refOfIndex(file: string): Promise<BaseRef> {
  const stat = await fs.promises.stat(file);
  const known = refs.get(file);
  if (known && known.size === stat.size && known.mtimeMs === stat.mtimeMs) return known.ref;
  const hash = createHash("sha256");
  // Read into one buffer: a new buffer per chunk (a read stream's) is hundreds of MB of external
  // memory for a large index, which made V8 collect a heap holding a million records again and
  // again (a first layered checkpoint at 1M records: 2.4 s instead of 0.9).
  const buffer = Buffer.allocUnsafe(4 << 20);
  const handle = await fs.promises.open(file, "r");
  try {
    for (let at = 0; at < stat.size; ) {
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, at);
      if (bytesRead === 0) break;
      hash.update(buffer.subarray(0, bytesRead));
      at += bytesRead;
    }
  } finally {
    await handle.close();
  }
  const ref = { indexBytes: stat.size, indexSha256: hash.digest("hex") };
  // Bounded: one entry per major folder a node has held since it started, at most.
  if (refs.size >= 1_000) refs.clear();
  refs.set(file, { size: stat.size, mtimeMs: stat.mtimeMs, ref });
  return ref;
}

async function readRef(dir: string): Promise<BaseRef | null> {
  try {
    return JSON.parse(await fs.promises.readFile(path.join(dir, BASE_REF_FILE), "utf8")) as BaseRef;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw error;
  }
}

/** Where a segment's files are: a folder, and the prefix of their names there. */
export interface SegmentFiles {
  dir: string;
  prefix: string;
}

/** The segment a major's folder holds first: a layered major's base, or a plain major's only one. */
export function firstSegmentIn(dir: string): SegmentFiles {
  return { dir, prefix: fs.existsSync(path.join(dir, BASE_PREFIX + INDEX_FILE)) ? BASE_PREFIX : "" };
}

/** The reference of a segment, a plain major's or a layered one's base (its recorded one, if any). */
async function refOf(segment: SegmentFiles): Promise<BaseRef> {
  if (segment.prefix === BASE_PREFIX) {
    const recorded = await readRef(segment.dir);
    if (recorded !== null) return recorded;
  }
  return refOfIndex(path.join(segment.dir, segment.prefix + INDEX_FILE));
}

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
   * Adds a base to the delta segment built in `dir`: links to `base`'s files, the list of its
   * hidden documents and its reference, flushed before the caller records the major.
   */
  static async addBase(dir: string, base: Segment, hidden: Uint32Array): Promise<void> {
    await linkSegment(base, dir);
    await writeDurably(path.join(dir, HIDDEN_FILE), Buffer.from(hidden.buffer, hidden.byteOffset, hidden.byteLength));
    await writeDurably(path.join(dir, BASE_REF_FILE), Buffer.from(JSON.stringify(await refOf(base))));
    await syncDirectory(dir);
  }

  /** False when `dir` holds a layered major without its base's files (published so: linkBase). */
  static hasBase(dir: string): boolean {
    if (!fs.existsSync(path.join(dir, HIDDEN_FILE))) return true;
    return BASE_FILES.every((name) => fs.existsSync(path.join(dir, name)));
  }

  /**
   * Completes a layered major published without its base: links the files of the first of
   * `candidates` (segments this node holds) that is the base its reference names.
   */
  static async linkBase(dir: string, candidates: Iterable<SegmentFiles>): Promise<void> {
    const wanted = await readRef(dir);
    if (wanted === null) throw new MissingBaseError(`${dir} names no base segment`);
    for (const segment of candidates) {
      const size = fs.statSync(path.join(segment.dir, segment.prefix + INDEX_FILE), { throwIfNoEntry: false })?.size;
      // Only a file of the same size is read through.
      if (size !== wanted.indexBytes) continue;
      try {
        const ref = await refOf(segment);
        if (ref.indexSha256 !== wanted.indexSha256) continue;
        await linkSegment(segment, dir);
      } catch (error) {
        // A major dropped meanwhile (its folder removed) is not a candidate.
        if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
        for (const name of BASE_FILES) await fs.promises.rm(path.join(dir, name), { force: true });
        continue;
      }
      await syncDirectory(dir);
      return;
    }
    throw new MissingBaseError(`no segment held here is the base of ${dir} (${wanted.indexSha256})`);
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

/** Links a segment's files into `dir` as a base's. */
async function linkSegment(segment: SegmentFiles, dir: string): Promise<void> {
  for (const name of [INDEX_FILE, RECORDS_FILE]) {
    await fs.promises.link(path.join(segment.dir, segment.prefix + name), path.join(dir, BASE_PREFIX + name));
  }
}

async function writeDurably(file: string, bytes: Buffer): Promise<void> {
  await fs.promises.writeFile(file, bytes);
  await syncFile(file);
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
