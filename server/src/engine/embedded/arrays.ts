// Typed-array helpers for building segments: a segment of 10M records is tens of millions of
// integers, which must not live in JS arrays (memory) or be sorted with comparators (time).
import type { Pacer } from "./pacer.ts";

type TypedArrayCtor<T> = { new (length: number): T };

/** An append-only typed array that doubles its capacity. */
export class Growable<T extends Uint32Array | Float64Array | Uint8Array> {
  private data: T;
  private size = 0;
  private readonly ctor: TypedArrayCtor<T>;

  constructor(ctor: TypedArrayCtor<T>, capacity = 1024) {
    this.ctor = ctor;
    this.data = new ctor(capacity);
  }

  get length(): number {
    return this.size;
  }

  push(value: number): void {
    if (this.size === this.data.length) this.grow(this.size + 1);
    this.data[this.size++] = value;
  }

  /** Sets index i, growing (zero-filled) as needed. */
  set(i: number, value: number): void {
    if (i >= this.data.length) this.grow(i + 1);
    this.data[i] = value;
    if (i >= this.size) this.size = i + 1;
  }

  get(i: number): number {
    return this.data[i]!;
  }

  /** The filled part; a view, so callers copy it if the builder keeps growing. */
  view(): T {
    return this.data.subarray(0, this.size) as T;
  }

  /** Frees the memory; the array is empty afterwards. */
  release(): void {
    this.data = new this.ctor(0);
    this.size = 0;
  }

  private grow(min: number): void {
    const next = new this.ctor(Math.max(min, this.data.length * 2));
    next.set(this.data as never);
    this.data = next;
  }
}

/**
 * Stable LSD radix sort of `values` by 32-bit unsigned `keys` (two 16-bit passes).
 * Returns the values in ascending key order; equal keys keep their input order.
 */
export function radixSortByKey(keys: Uint32Array, values: Uint32Array): Uint32Array {
  const n = keys.length;
  const midKeys = new Uint32Array(n);
  const midValues = new Uint32Array(n);
  const sorted = new Uint32Array(n);
  scatter(keys, values, midKeys, midValues, 0);
  scatter(midKeys, midValues, null, sorted, 16);
  return sorted;
}

/** One counting-sort pass on the 16 key bits at `shift`. */
function scatter(
  keys: Uint32Array,
  values: Uint32Array,
  outKeys: Uint32Array | null,
  outValues: Uint32Array,
  shift: number,
): void {
  const counts = new Uint32Array(65537);
  for (let i = 0; i < keys.length; i++) counts[((keys[i]! >>> shift) & 0xffff) + 1]!++;
  for (let b = 1; b <= 65536; b++) counts[b]! += counts[b - 1]!;
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]!;
    const at = counts[(k >>> shift) & 0xffff]!++;
    if (outKeys !== null) outKeys[at] = k;
    outValues[at] = values[i]!;
  }
}

/** The inverse of a permutation. */
export function invert(permutation: Uint32Array): Uint32Array {
  const inverse = new Uint32Array(permutation.length);
  for (let i = 0; i < permutation.length; i++) inverse[permutation[i]!] = i;
  return inverse;
}

/** First index in [lo, hi) of the sorted array whose value is >= target (hi when none). */
export function lowerBound(array: Uint32Array, lo: number, hi: number, target: number): number {
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (array[mid]! < target) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * 0..n-1 sorted by `compare` (stable), pausing for the event loop as it goes: sorted runs of 32k,
 * then bottom-up merges. One native sort of 10M ids would hold the event loop for seconds.
 */
export async function sortIndices(n: number, compare: (a: number, b: number) => number, pacer: Pacer): Promise<Uint32Array> {
  const RUN = 1 << 15;
  let from = new Uint32Array(n);
  for (let i = 0; i < n; i++) from[i] = i;
  for (let lo = 0; lo < n; lo += RUN) {
    from.subarray(lo, Math.min(n, lo + RUN)).sort((a, b) => compare(a, b) || a - b);
    if (pacer.due()) await pacer.pause();
  }
  let to = new Uint32Array(n);
  for (let width = RUN; width < n; width *= 2) {
    for (let lo = 0; lo < n; lo += 2 * width) {
      const mid = Math.min(lo + width, n);
      const hi = Math.min(lo + 2 * width, n);
      let i = lo;
      let j = mid;
      let k = lo;
      while (i < mid && j < hi) {
        // Ties take the left run first, which keeps the sort stable.
        to[k++] = compare(from[j]!, from[i]!) < 0 ? from[j++]! : from[i++]!;
        if ((k & 0x3fff) === 0 && pacer.due()) await pacer.pause();
      }
      while (i < mid) to[k++] = from[i++]!;
      while (j < hi) to[k++] = from[j++]!;
    }
    [from, to] = [to, from];
  }
  return from;
}
