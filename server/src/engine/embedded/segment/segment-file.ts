// The on-disk form of a segment's index: named typed-array sections, each 8-byte aligned, and a
// JSON header. Sections are appended one at a time as a build produces them (so a build never holds
// them all at once) and the header comes last; a file is opened by mapping it (one mmap, zero-copy
// views, nothing resident until searched) or, without the mmap addon, by reading each section.
//
//   SIFTSEG2: "SIFTSEG2" | header offset (f64) | sections… | header JSON   (offsets are absolute)
//   SIFTSEG1: "SIFTSEG1" | header length (u32) | pad | header JSON | sections… (offsets after the header)
import fs from "node:fs";
import { mapFile } from "@sift/mmap";

const MAGIC_V1 = "SIFTSEG1";
const MAGIC_V2 = "SIFTSEG2";
const PREFIX = 16;

/** The element types a section may have, as the header spells them, and their arrays. */
export type ElementType = "u8" | "u32" | "f64";
export interface ElementArrays {
  u8: Uint8Array;
  u32: Uint32Array;
  f64: Float64Array;
}
export type Section = ElementArrays[ElementType];

/** A section as the file knows it: the name stored in the header and the element type. */
export interface SectionKey<T extends ElementType = ElementType> {
  readonly stored: string;
  readonly type: T;
}

interface Header {
  meta: unknown;
  sections: Record<string, { type: ElementType; offset: number; length: number }>;
}

const typeOf = (a: Section): ElementType =>
  a instanceof Float64Array ? "f64" : a instanceof Uint32Array ? "u32" : "u8";
const align8 = (n: number) => Math.ceil(n / 8) * 8;
const BYTES: Record<ElementType, number> = { u8: 1, u32: 4, f64: 8 };

/** Writes one part of a reserved section, starting at element `atElement`. */
export type Put<T extends ElementType> = (part: ElementArrays[T], atElement: number) => Promise<void>;

/** Appends sections to a new segment file; finish() writes the header and fsyncs. */
export class SegmentFileWriter {
  private readonly header: Header = { meta: null, sections: {} };
  private offset = PREFIX;
  private readonly file: fs.promises.FileHandle;

  private constructor(file: fs.promises.FileHandle) {
    this.file = file;
  }

  static async create(path: string): Promise<SegmentFileWriter> {
    // Readable too: later sections of a build are derived from earlier ones read back in passes.
    return new SegmentFileWriter(await fs.promises.open(path, "w+"));
  }

  /** Writes a section now; the caller may drop the array as soon as this resolves. */
  async add<T extends ElementType>(key: SectionKey<T>, array: ElementArrays[T]): Promise<void> {
    const name = key.stored;
    if (name in this.header.sections) throw new Error(`section ${name} written twice`);
    if (typeOf(array) !== key.type)
      throw new Error(`section ${name}: ${typeOf(array)} elements in a ${key.type} section`);
    this.header.sections[name] = { type: key.type, offset: this.offset, length: array.length };
    await writeFully(this.file, new Uint8Array(array.buffer, array.byteOffset, array.byteLength), this.offset);
    this.offset = align8(this.offset + array.byteLength);
  }

  /**
   * Sets aside a section of `length` elements that the caller fills in parts (a window at a time,
   * in any order, several sections side by side), so that a section larger than the memory it may
   * use is never whole in memory. Parts not put stay zero.
   */
  reserve<T extends ElementType>(key: SectionKey<T>, length: number): Put<T> {
    const { stored: name, type } = key;
    if (name in this.header.sections) throw new Error(`section ${name} written twice`);
    const start = this.offset;
    const size = BYTES[type];
    this.header.sections[name] = { type, offset: start, length };
    this.offset = align8(start + length * size);
    return async (part, at) => {
      if (part.BYTES_PER_ELEMENT !== size)
        throw new Error(`section ${name}: a part of ${part.BYTES_PER_ELEMENT}-byte elements in a ${type} section`);
      if (at < 0 || at + part.length > length)
        throw new Error(`section ${name}: part [${at}, ${at + part.length}) out of [0, ${length})`);
      await writeFully(this.file, new Uint8Array(part.buffer, part.byteOffset, part.byteLength), start + at * size);
    };
  }

  /** Reads elements of a section written (or put) earlier into `into`, from element `at`. */
  async read(key: SectionKey<"u32">, at: number, into: Uint32Array): Promise<void> {
    const section = this.header.sections[key.stored];
    if (section?.type !== "u32" || at < 0 || at + into.length > section.length) {
      throw new Error(`section ${key.stored}: cannot read [${at}, ${at + into.length}) as u32`);
    }
    await readFully(this.file, new Uint8Array(into.buffer, into.byteOffset, into.byteLength), section.offset + at * 4);
  }

  async finish(meta: unknown): Promise<void> {
    try {
      this.header.meta = meta;
      await writeFully(this.file, Buffer.from(JSON.stringify(this.header)), this.offset);
      const prefix = Buffer.alloc(PREFIX);
      prefix.write(MAGIC_V2, 0, "latin1");
      prefix.writeDoubleLE(this.offset, 8);
      await writeFully(this.file, prefix, 0);
      await this.file.sync();
    } finally {
      await this.file.close();
    }
  }

  /** Closes the file without finishing it (the caller removes it). */
  async close(): Promise<void> {
    // Only a failed build closes this way, and it rethrows its own error and removes the file:
    // an error from close() would only hide that one.
    // biome-ignore lint/plugin: the build's own error is rethrown by the caller.
    await this.file.close().catch(() => {});
  }
}

/** Writes a whole segment file at once (tests and small tools). */
export async function writeSegmentFile(path: string, meta: unknown, sections: Record<string, Section>): Promise<void> {
  const writer = await SegmentFileWriter.create(path);
  for (const [name, array] of Object.entries(sections)) await writer.add({ stored: name, type: typeOf(array) }, array);
  await writer.finish(meta);
}

interface Layout {
  meta: unknown;
  /** Absolute byte offset, type and length of each section. */
  sections: Record<string, { type: ElementType; offset: number; length: number }>;
}

async function readLayout(file: fs.promises.FileHandle, path: string, size: number): Promise<Layout> {
  const prefix = Buffer.alloc(PREFIX);
  await readFully(file, prefix, 0);
  const magic = prefix.toString("latin1", 0, 8);
  if (magic === MAGIC_V2) {
    const at = prefix.readDoubleLE(8);
    if (!(at >= PREFIX && at <= size)) throw new Error(`${path}: segment file is truncated`);
    const headerBytes = Buffer.alloc(size - at);
    await readFully(file, headerBytes, at);
    return JSON.parse(headerBytes.toString("utf8")) as Header;
  }
  if (magic === MAGIC_V1) {
    const headerBytes = Buffer.alloc(prefix.readUInt32LE(8));
    await readFully(file, headerBytes, PREFIX);
    const header = JSON.parse(headerBytes.toString("utf8")) as Header;
    const base = align8(PREFIX + headerBytes.length);
    for (const s of Object.values(header.sections)) s.offset += base;
    return header;
  }
  throw new Error(`${path}: not a segment file`);
}

function checkBounds(layout: Layout, path: string, size: number): void {
  for (const s of Object.values(layout.sections)) {
    if (s.offset + s.length * BYTES[s.type] > size) throw new Error(`${path}: segment file is truncated`);
  }
}

/**
 * Opens a segment file. With `map` (and the addon built) the sections are views into one read-only
 * mapping of the file: resident memory is only the pages searches touch, and the kernel may drop
 * them again. Otherwise each section is read into its own array; with `only`, just those sections
 * are read (never mapped).
 */
export async function openSegmentFile(
  path: string,
  map: boolean,
  only?: readonly string[],
): Promise<{ meta: unknown; sections: Record<string, Section>; mapped: boolean }> {
  const file = await fs.promises.open(path, "r");
  try {
    const { size } = await file.stat();
    const layout = await readLayout(file, path, size);
    checkBounds(layout, path, size);
    const mapping = map && only === undefined ? mapFile(file.fd, size) : null;
    const sections: Record<string, Section> = {};
    for (const [name, s] of Object.entries(layout.sections)) {
      if (only !== undefined && !only.includes(name)) continue;
      const ctor = s.type === "f64" ? Float64Array : s.type === "u32" ? Uint32Array : Uint8Array;
      if (mapping !== null) {
        sections[name] = new ctor(mapping, s.offset, s.length);
      } else {
        const array = new ctor(s.length);
        await readFully(file, new Uint8Array(array.buffer), s.offset);
        sections[name] = array;
      }
    }
    return { meta: layout.meta, sections, mapped: mapping !== null };
  } finally {
    await file.close();
  }
}

/** The section `key` names, which must exist with the key's element type. */
export function sectionOf<T extends ElementType>(
  sections: Record<string, Section>,
  key: SectionKey<T>,
): ElementArrays[T] {
  const array = sections[key.stored];
  if (array === undefined || typeOf(array) !== key.type)
    throw new Error(`segment file has no ${key.type} section ${key.stored}`);
  // Checked just above: the one place a section's array type is asserted.
  return array as ElementArrays[T];
}

const CHUNK = 1 << 28;

async function writeFully(file: fs.promises.FileHandle, bytes: Uint8Array, position: number): Promise<void> {
  for (let done = 0; done < bytes.length; ) {
    const { bytesWritten } = await file.write(bytes, done, Math.min(CHUNK, bytes.length - done), position + done);
    done += bytesWritten;
  }
}

async function readFully(file: fs.promises.FileHandle, into: Uint8Array, position: number): Promise<void> {
  for (let done = 0; done < into.length; ) {
    const { bytesRead } = await file.read(into, done, Math.min(CHUNK, into.length - done), position + done);
    if (bytesRead === 0) throw new Error("segment file is truncated");
    done += bytesRead;
  }
}
