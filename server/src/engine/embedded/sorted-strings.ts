// A sorted table of UTF-8 strings packed in one buffer: the term and prefix dictionaries and the
// id table of a segment. Byte order equals code-point order, and every set of strings sharing a
// prefix is one contiguous range, which is what prefix search needs.
import type { Pacer } from "./pacer.ts";

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

  private compareAt(i: number, key: Buffer): number {
    return this.bytes.compare(key, 0, key.length, this.offsets[i]!, this.offsets[i + 1]!);
  }

  /** First index whose string is >= key. */
  lowerBound(key: Buffer): number {
    let lo = 0;
    let hi = this.count;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.compareAt(mid, key) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  find(key: Buffer): number {
    const i = this.lowerBound(key);
    return i < this.count && this.compareAt(i, key) === 0 ? i : -1;
  }

  /** [lo, hi) of the strings that start with prefix. */
  prefixRange(prefix: Buffer): [number, number] {
    const lo = this.lowerBound(prefix);
    let a = lo;
    let b = this.count;
    while (a < b) {
      const mid = (a + b) >>> 1;
      const start = this.offsets[mid]!;
      const len = Math.min(prefix.length, this.offsets[mid + 1]! - start);
      if (len === prefix.length && this.bytes.compare(prefix, 0, len, start, start + len) === 0) a = mid + 1;
      else b = mid;
    }
    return [lo, a];
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
