// The on-disk form of a segment's index: named typed-array sections behind a JSON header, each
// 8-byte aligned so that loading is one read plus zero-copy views (fast reload on open()).
import fs from "node:fs";

const MAGIC = "SIFTSEG1";

export type Section = Uint8Array | Uint32Array | Float64Array;
type SectionType = "u8" | "u32" | "f64";

interface Header {
  meta: unknown;
  sections: Record<string, { type: SectionType; offset: number; length: number }>;
}

const typeOf = (a: Section): SectionType =>
  a instanceof Float64Array ? "f64" : a instanceof Uint32Array ? "u32" : "u8";
const align8 = (n: number) => Math.ceil(n / 8) * 8;

/** Writes and fsyncs the file. */
export async function writeSegmentFile(path: string, meta: unknown, sections: Record<string, Section>): Promise<void> {
  const header: Header = { meta, sections: {} };
  // Offsets are relative to the end of the header, whose own length is not known yet.
  let offset = 0;
  for (const [name, array] of Object.entries(sections)) {
    header.sections[name] = { type: typeOf(array), offset, length: array.length };
    offset = align8(offset + array.byteLength);
  }
  const headerBytes = Buffer.from(JSON.stringify(header));
  const prefix = Buffer.alloc(align8(16 + headerBytes.length));
  prefix.write(MAGIC, 0, "latin1");
  prefix.writeUInt32LE(headerBytes.length, 8);
  headerBytes.copy(prefix, 16);

  const file = await fs.promises.open(path, "w");
  try {
    await writeFully(file, prefix, 0);
    for (const [name, array] of Object.entries(sections)) {
      const at = prefix.length + header.sections[name]!.offset;
      await writeFully(file, new Uint8Array(array.buffer, array.byteOffset, array.byteLength), at);
    }
    await file.sync();
  } finally {
    await file.close();
  }
}

/** Reads each section into its own typed array (files can exceed what one read may return). */
export async function readSegmentFile(path: string): Promise<{ meta: unknown; sections: Record<string, Section> }> {
  const file = await fs.promises.open(path, "r");
  try {
    const prefix = Buffer.alloc(16);
    await readFully(file, prefix, 0);
    if (prefix.toString("latin1", 0, 8) !== MAGIC) throw new Error(`${path}: not a segment file`);
    const headerBytes = Buffer.alloc(prefix.readUInt32LE(8));
    await readFully(file, headerBytes, 16);
    const header = JSON.parse(headerBytes.toString("utf8")) as Header;
    const base = align8(16 + headerBytes.length);
    const sections: Record<string, Section> = {};
    for (const [name, s] of Object.entries(header.sections)) {
      const array =
        s.type === "f64" ? new Float64Array(s.length) : s.type === "u32" ? new Uint32Array(s.length) : new Uint8Array(s.length);
      await readFully(file, new Uint8Array(array.buffer), base + s.offset);
      sections[name] = array;
    }
    return { meta: header.meta, sections };
  } finally {
    await file.close();
  }
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
