// Typed-array helpers for building segments: a segment of 10M records is tens of millions of
// integers, which must not live in JS arrays (memory) or be sorted with comparators (time).
import type { Pacer } from "./pacer.ts";

type TypedArrayCtor<T> = { new (length: number): T };

/**
 * Frees a typed array's memory now instead of whenever the garbage collector gets to it: a segment
 * build drops arrays of 80 to 300 MB phase after phase, and the collector, which sees only small
 * JS objects, leaves several of them resident at once. The buffer is detached (transferred to an
 * empty one), so every view of it, subarrays included, reads as empty afterwards: a use after
 * release finds nothing instead of stale data. Only for arrays the caller allocated itself.
 */
export function release(array: Uint8Array | Uint32Array | Float64Array): void {
  const buffer = array.buffer as ArrayBuffer;
  if (!buffer.detached) buffer.transfer(0);
}

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

  /** Frees the memory (views taken earlier read as empty); the array is empty afterwards. */
  release(): void {
    release(this.data);
    this.data = new this.ctor(0);
    this.size = 0;
  }

  private grow(min: number): void {
    const next = new this.ctor(Math.max(min, this.data.length * 2));
    next.set(this.data as never);
    // Not buffer.transfer(larger): that writes the zeros of the new half, making all of it resident
    // at once, where a fresh array's untouched pages cost nothing until used.
    release(this.data);
    this.data = next;
  }
}

/**
 * Stable LSD radix sort of `values` by 32-bit unsigned `keys` (two 16-bit passes).
 * Returns the values in ascending key order; equal keys keep their input order.
 */
export function radixSortByKey(keys: Uint32Array, values: Uint32Array): Uint32Array {
  const order = sortByKey(keys.length, (i) => keys[i]!);
  for (let i = 0; i < order.length; i++) order[i] = values[order[i]!]!;
  return order;
}

/**
 * 0..n-1 in ascending order of a 32-bit unsigned key (stable: two 16-bit counting passes). The key
 * is asked for, not passed as an array, so that a caller deriving it (a weight through a
 * permutation) does not hold another array of n keys at its peak.
 */
export function sortByKey(n: number, keyOf: (i: number) => number): Uint32Array {
  const midKeys = new Uint32Array(n);
  const midOrder = new Uint32Array(n);
  let counts = new Uint32Array(65537);
  for (let i = 0; i < n; i++) counts[(keyOf(i) & 0xffff) + 1]!++;
  for (let b = 1; b <= 65536; b++) counts[b]! += counts[b - 1]!;
  for (let i = 0; i < n; i++) {
    const k = keyOf(i) >>> 0;
    const at = counts[k & 0xffff]!++;
    midKeys[at] = k;
    midOrder[at] = i;
  }
  const sorted = new Uint32Array(n);
  counts = new Uint32Array(65537);
  for (let i = 0; i < n; i++) counts[(midKeys[i]! >>> 16) + 1]!++;
  for (let b = 1; b <= 65536; b++) counts[b]! += counts[b - 1]!;
  for (let i = 0; i < n; i++) sorted[counts[midKeys[i]! >>> 16]!++] = midOrder[i]!;
  release(midKeys);
  release(midOrder);
  return sorted;
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
export async function sortIndices(
  n: number,
  compare: (a: number, b: number) => number,
  pacer: Pacer,
): Promise<Uint32Array> {
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
  release(to);
  return from;
}
