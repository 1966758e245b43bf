// A sorted table of UTF-8 strings packed in one buffer: the term and prefix dictionaries and the
// id table of a segment. Byte order equals code-point order, and every set of strings sharing a
// prefix is one contiguous range, which is what prefix search needs.
import type { Pacer } from "../util/pacer.ts";

export class SortedStrings {
  readonly bytes: Buffer;
  /** count + 1 entries: string i is bytes[offsets[i], offsets[i+1]). */
  readonly offsets: Uint32Array;

  constructor(bytes: Buffer, offsets: Uint32Array) {
    this.bytes = bytes;
    this.offsets = offsets;
  }

  /** Packs count strings, given in code point order (compareCodePoints) by `at`, pausing as it goes. */
  static async pack(count: number, at: (i: number) => string, pacer: Pacer): Promise<SortedStrings> {
    const offsets = new Uint32Array(count + 1);
    let total = 0;
    for (let i = 0; i < count; i++) {
      if ((i & 0x3fff) === 0 && pacer.due()) await pacer.pause();
      offsets[i] = total;
      total += Buffer.byteLength(at(i));
      if (total > 0xffff_ffff) throw new Error("string table larger than 4 GiB");
    }
    offsets[count] = total;
    const bytes = Buffer.allocUnsafe(total);
    for (let i = 0; i < count; i++) {
      if ((i & 0x3fff) === 0 && pacer.due()) await pacer.pause();
      bytes.write(at(i), offsets[i]!, "utf8");
    }
    return new SortedStrings(bytes, offsets);
  }

  get count(): number {
    return this.offsets.length - 1;
  }

  /**
   * String i compared with key (sign only). A byte loop in JS: lookups compare short strings, and
   * Buffer#compare's call into C++ cost more than the comparison (a fifth of a search's CPU).
   */
  private compareAt(i: number, key: Uint8Array): number {
    const bytes = this.bytes;
    const start = this.offsets[i]!;
    const length = this.offsets[i + 1]! - start;
    const n = Math.min(length, key.length);
    for (let j = 0; j < n; j++) {
      const d = bytes[start + j]! - key[j]!;
      if (d !== 0) return d;
    }
    return length - key.length;
  }

  /** firstByte[b] = index of the first string whose first byte is >= b (257 entries), built on first use. */
  private firstByte: Uint32Array | null = null;

  private firstByteRange(key: Uint8Array): [number, number] {
    if (this.firstByte === null) {
      const table = new Uint32Array(257);
      const { bytes, offsets } = this;
      const count = this.count;
      // Strings are sorted, so their first bytes are non-decreasing (an empty string sorts first).
      let i = 0;
      for (let b = 0; b < 256; b++) {
        while (i < count && (offsets[i]! === offsets[i + 1]! || bytes[offsets[i]!]! < b)) i++;
        table[b] = i;
      }
      table[256] = count;
      this.firstByte = table;
    }
    if (key.length === 0) return [0, this.count];
    return [this.firstByte[key[0]!]!, this.firstByte[key[0]! + 1]!];
  }

  /** First index whose string is >= key. */
  lowerBound(key: Uint8Array): number {
    let [lo, hi] = this.firstByteRange(key);
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.compareAt(mid, key) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  find(key: Uint8Array): number {
    const i = this.lowerBound(key);
    return i < this.count && this.compareAt(i, key) === 0 ? i : -1;
  }

  /** [lo, hi) of the strings that start with prefix. */
  prefixRange(prefix: Uint8Array): [number, number] {
    const lo = this.lowerBound(prefix);
    let a = lo;
    let b = prefix.length === 0 ? this.count : this.firstByteRange(prefix)[1];
    while (a < b) {
      const mid = (a + b) >>> 1;
      if (this.startsWith(mid, prefix)) a = mid + 1;
      else b = mid;
    }
    return [lo, a];
  }

  private startsWith(i: number, prefix: Uint8Array): boolean {
    const start = this.offsets[i]!;
    if (this.offsets[i + 1]! - start < prefix.length) return false;
    const bytes = this.bytes;
    for (let j = 0; j < prefix.length; j++) if (bytes[start + j] !== prefix[j]) return false;
    return true;
  }
}

/** JS strings compared in code point order, the order of SortedStrings (UTF-16 order differs for astral characters). */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointRank(x) - codePointRank(y);
  }
  return a.length - b.length;
}

/** Moves surrogates (astral characters) above U+E000..U+FFFF so code units sort as code points. */
function codePointRank(unit: number): number {
  if (unit < 0xd800) return unit;
  return unit < 0xe000 ? unit + 0x2000 : unit - 0x800;
}
