// Reads records from records.bin: each document's JSON at the offset and length the store's
// sections give, one read per record, with a cache of the records recently returned by searches.
import fs from "node:fs";
import path from "node:path";
import type { SearchRecord } from "../../../ports/engine.ts";
import { RECORDS_FILE } from "../segment/meta.ts";

/** JSON length (UTF-16 units) of the recently returned records kept per segment; see readHot. */
const HOT_RECORD_UNITS = 4 * 1024 * 1024;

/** Freezes value and everything in it: the records readHot hands out are shared. */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object") {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}

export class RecordStore {
  /** The records file. */
  private readonly file: string;
  private readonly offsets: Float64Array;
  private readonly lengths: Uint32Array;
  private fd: number;
  private readBuffer = Buffer.alloc(64 * 1024);
  private readonly hot = new Map<number, { record: SearchRecord; units: number }>();
  private hotUnits = 0;

  /**
   * Opens the records.bin of the segment in `dir` (its files' names start with `prefix`: a
   * layered major's base, versions/layers.ts); `offsets`, `lengths`: its recordOffsets and recordLengths.
   */
  constructor(dir: string, offsets: Float64Array, lengths: Uint32Array, prefix = "") {
    this.file = path.join(dir, prefix + RECORDS_FILE);
    this.offsets = offsets;
    this.lengths = lengths;
    this.fd = fs.openSync(this.file, "r");
  }

  /** Reads a record from disk, as the caller's own object; for scans (checkpoints), which must not churn the cache. */
  read(doc: number): SearchRecord {
    return JSON.parse(this.readJson(doc)) as SearchRecord;
  }

  /**
   * Reads a record for a search hit or a lookup. Autocomplete traffic returns the same popular
   * records again and again, and each read is a system call plus a JSON parse (together about a
   * quarter of a search request's CPU under load), so recently returned records are kept, up to
   * HOT_RECORD_UNITS of JSON per segment. They are deeply frozen: every caller shares them.
   */
  readHot(doc: number): SearchRecord {
    const cached = this.hot.get(doc);
    if (cached !== undefined) {
      // Most recently used last, so eviction (from the front) drops the least recently used.
      this.hot.delete(doc);
      this.hot.set(doc, cached);
      return cached.record;
    }
    const json = this.readJson(doc);
    const record = deepFreeze(JSON.parse(json) as SearchRecord);
    this.hot.set(doc, { record, units: json.length });
    this.hotUnits += json.length;
    for (const [old, entry] of this.hot) {
      if (this.hotUnits <= HOT_RECORD_UNITS) break;
      this.hot.delete(old);
      this.hotUnits -= entry.units;
    }
    return record;
  }

  /** A document's JSON as stored, uncached (diffs compare it byte for byte before parsing). */
  readJson(doc: number): string {
    const length = this.lengths[doc]!;
    if (length > this.readBuffer.length) this.readBuffer = Buffer.alloc(length * 2);
    const read = fs.readSync(this.fd, this.readBuffer, 0, length, this.offsets[doc]!);
    if (read !== length) throw new Error(`${this.file}: short read of record ${doc}`);
    return this.readBuffer.toString("utf8", 0, length);
  }

  /**
   * Overwrites a document's JSON in records.bin with zeros and makes that durable (purge: the
   * segment is about to be deleted, and this keeps its bytes from lingering in freed blocks).
   */
  async erase(doc: number): Promise<void> {
    const entry = this.hot.get(doc);
    if (entry !== undefined) {
      this.hot.delete(doc);
      this.hotUnits -= entry.units;
    }
    const file = await fs.promises.open(this.file, "r+");
    try {
      await file.write(Buffer.alloc(this.lengths[doc]!), 0, this.lengths[doc]!, this.offsets[doc]!);
      await file.sync();
    } finally {
      await file.close();
    }
  }

  close(): void {
    if (this.fd >= 0) fs.closeSync(this.fd);
    this.fd = -1;
  }
}
