// What the segment builder learns about each record but needs only once every record is in: its
// title and data term ids, filter values and JSON length. Kept in memory that was about 60 bytes
// per record (over a gigabyte for a 2 GB upload of small records), so it is appended to a
// temporary file in arrival order instead and read back in sequential passes, each of which costs
// about a second per 20M records and no resident memory beyond its buffer. This file moves 32-bit
// words to and from the file; slot-codec.ts is the layout of a slot in them.
import fs from "node:fs";

const BUFFER_WORDS = 1 << 20;
/** The buffer starts this small and doubles up to BUFFER_WORDS: most builds are small. */
const FIRST_BUFFER_WORDS = 1 << 14;

export class SlotLog {
  readonly path: string;
  private fd: number;
  private buffer = new Uint32Array(FIRST_BUFFER_WORDS);
  private used = 0;
  private written = 0;
  private readonly f64 = new Float64Array(1);
  private readonly f64Words = new Uint32Array(this.f64.buffer);

  constructor(path: string) {
    this.path = path;
    this.fd = fs.openSync(path, "w+");
  }

  push(word: number): void {
    if (this.used === this.buffer.length) {
      if (this.buffer.length < BUFFER_WORDS) {
        const larger = new Uint32Array(this.buffer.length * 2);
        larger.set(this.buffer);
        this.buffer = larger;
      } else this.flush();
    }
    this.buffer[this.used++] = word;
  }

  pushNumber(value: number): void {
    this.f64[0] = value;
    this.push(this.f64Words[0]!);
    this.push(this.f64Words[1]!);
  }

  private flush(): void {
    const bytes = new Uint8Array(this.buffer.buffer, 0, this.used * 4);
    for (let done = 0; done < bytes.length; )
      done += fs.writeSync(this.fd, bytes, done, bytes.length - done, this.written + done);
    this.written += bytes.length;
    this.used = 0;
  }

  /** A reader from the first word; the log must not be written to any more. */
  reader(): SlotLogReader {
    if (this.used > 0) this.flush();
    return new SlotLogReader(this.fd, this.written / 4, this.buffer);
  }

  /** Closes and deletes the file. */
  remove(): void {
    if (this.fd >= 0) fs.closeSync(this.fd);
    this.fd = -1;
    fs.rmSync(this.path, { force: true });
  }
}

export class SlotLogReader {
  private readonly fd: number;
  private readonly words: number;
  private readonly buffer: Uint32Array;
  private filled = 0;
  private at = 0;
  private consumed = 0;
  private readonly f64 = new Float64Array(1);
  private readonly f64Words = new Uint32Array(this.f64.buffer);

  constructor(fd: number, words: number, buffer: Uint32Array) {
    this.fd = fd;
    this.words = words;
    this.buffer = buffer;
  }

  next(): number {
    if (this.at === this.filled) this.refill();
    return this.buffer[this.at++]!;
  }

  nextNumber(): number {
    this.f64Words[0] = this.next();
    this.f64Words[1] = this.next();
    return this.f64[0]!;
  }

  skip(count: number): void {
    for (let i = 0; i < count; i++) this.next();
  }

  private refill(): void {
    const want = Math.min(this.buffer.length, this.words - this.consumed);
    if (want <= 0) throw new Error("slot log read past its end");
    const bytes = new Uint8Array(this.buffer.buffer, 0, want * 4);
    for (let done = 0; done < bytes.length; ) {
      const read = fs.readSync(this.fd, bytes, done, bytes.length - done, this.consumed * 4 + done);
      if (read === 0) throw new Error("slot log is truncated");
      done += read;
    }
    this.consumed += want;
    this.filled = want;
    this.at = 0;
  }
}
