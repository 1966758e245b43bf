// Writes records.bin: each record's JSON, appended as records arrive, and once every record is in,
// the store's sections (where each document's JSON lies), from the JSON lengths in the slot log.
import fs from "node:fs";
import path from "node:path";
import type { SearchRecord } from "../../../ports/engine.ts";
import type { SlotPasses } from "../build/slot-codec.ts";
import { RECORDS_FILE } from "../segment/meta.ts";
import type { SegmentFileWriter } from "../segment/segment-file.ts";
import { SECTIONS } from "../segment/sections.ts";
import { release } from "../util/arrays.ts";

const NONE = 0xffff_ffff;
const WRITE_CHUNK = 4 << 20;

export class RecordsWriter {
  /** -1 once closed: a closed descriptor's number may already belong to another file. */
  private fd: number;
  /** Records encoded but not yet written to records.bin. */
  private pending = Buffer.allocUnsafe(WRITE_CHUNK);
  private pendingBytes = 0;
  private fileOffset = 0;

  /** Creates records.bin in `dir`. */
  constructor(dir: string) {
    this.fd = fs.openSync(path.join(dir, RECORDS_FILE), "w");
  }

  /** Appends a record; returns the length of its JSON in bytes. */
  append(record: SearchRecord): number {
    const json = JSON.stringify(record);
    // UTF-8 needs at most 3 bytes per UTF-16 unit: flush first unless the record surely fits.
    if (this.pendingBytes + json.length * 3 > this.pending.length) {
      this.flush();
      if (json.length * 3 > this.pending.length) this.pending = Buffer.allocUnsafe(json.length * 3);
    }
    const bytes = this.pending.write(json, this.pendingBytes, "utf8");
    this.pendingBytes += bytes;
    return bytes;
  }

  private flush(): void {
    let written = 0;
    while (written < this.pendingBytes) {
      written += fs.writeSync(this.fd, this.pending, written, this.pendingBytes - written, this.fileOffset + written);
    }
    this.fileOffset += this.pendingBytes;
    this.pendingBytes = 0;
  }

  /** Writes what is pending, makes the file durable and closes it. */
  async finish(): Promise<void> {
    this.flush();
    // Asynchronous: flushing hundreds of megabytes to disk must not hold the event loop.
    await new Promise<void>((resolve, reject) => fs.fsync(this.fd, (error) => (error ? reject(error) : resolve())));
    this.close();
  }

  /** Closes the file unless finish() did. */
  abort(): void {
    this.close();
  }

  private close(): void {
    if (this.fd < 0) return;
    const fd = this.fd;
    this.fd = -1;
    fs.closeSync(fd);
  }

  /** One pass over the slot log: where each document's record lies in records.bin (recordOffsets, recordLengths). */
  async writeLocations(out: SegmentFileWriter, slots: SlotPasses, n: number): Promise<void> {
    const offsets = new Float64Array(n);
    const lengths = new Uint32Array(n);
    let offset = 0;
    await slots.forEach(0, (d, slot) => {
      const length = slot.jsonLength;
      if (d !== NONE) {
        offsets[d] = offset;
        lengths[d] = length;
      }
      offset += length;
    });
    await out.add(SECTIONS.recordOffsets, offsets);
    await out.add(SECTIONS.recordLengths, lengths);
    release(offsets);
    release(lengths);
  }
}
