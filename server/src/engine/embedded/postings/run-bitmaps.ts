// Bitmaps of dense posting runs, for counting (search/match-set.ts): a run holding at least a
// 32nd of a segment's documents is no bigger as a bitmap (a bit per document) than as a list (4
// bytes per entry), and a bitmap answers "does the run hold doc?" with one read where a list
// must be read (or galloped through) up to doc. Built from the run on first use and kept, most
// recently used first, within a budget shared by every segment of the process: the runs that are
// dense are the common words and short prefixes, which most queries meet again.
import type { RunSource } from "./sources.ts";

/** Runs with fewer entries are read as lists: their bitmap would cost more than it saves. */
const MIN_DENSE = 1024;
/** Bytes of bitmaps kept in all (a bitmap is documents / 8 bytes: 125 KB at 1M documents). */
const BUDGET_BYTES = 64 << 20;

interface Entry {
  owner: Map<number, Int32Array>;
  start: number;
  end: number;
}

/** Per posting array (a segment's section): run start -> bitmap. Weak: closed segments drop out. */
const byArray = new WeakMap<Uint32Array, Map<number, Int32Array>>();
/** Every kept bitmap, least recently used first (a Map keeps insertion order). */
const recency = new Map<Int32Array, Entry>();
let keptBytes = 0;

/** Whether a run over `documents` documents is worth a bitmap. */
export function isDense(run: RunSource, documents: number): boolean {
  const size = run.end - run.start;
  return size >= MIN_DENSE && size * 32 >= documents;
}

/**
 * The run's documents as a bitmap over [0, documents), from the cache or built (and kept); with
 * `build` false only from the cache (null when not there).
 */
export function runBitmap(run: RunSource, documents: number, build: true): Int32Array;
export function runBitmap(run: RunSource, documents: number, build: boolean): Int32Array | null;
export function runBitmap(run: RunSource, documents: number, build: boolean): Int32Array | null {
  let owner = byArray.get(run.values);
  const found = owner?.get(run.start);
  const entry = found === undefined ? undefined : recency.get(found);
  if (found !== undefined && entry !== undefined && entry.end === run.end) {
    recency.delete(found);
    recency.set(found, entry);
    return found;
  }
  if (!build) return null;
  // Int32: bit 31 set keeps a word a small integer to V8 (a Uint32 above 2^31 is a double).
  const bits = new Int32Array((documents + 31) >>> 5);
  const { values, start, end } = run;
  for (let i = start; i < end; i++) {
    const doc = values[i]!;
    bits[doc >>> 5]! |= 1 << (doc & 31);
  }
  // Another run of the array starting there (not one of a segment's fixed runs) is not kept.
  if (bits.byteLength > BUDGET_BYTES || entry !== undefined) return bits;
  while (keptBytes + bits.byteLength > BUDGET_BYTES) {
    const [oldest, evicted] = recency.entries().next().value!;
    recency.delete(oldest);
    evicted.owner.delete(evicted.start);
    keptBytes -= oldest.byteLength;
  }
  if (owner === undefined) {
    owner = new Map();
    byArray.set(run.values, owner);
  }
  owner.set(run.start, bits);
  recency.set(bits, { owner, start: run.start, end: run.end });
  keptBytes += bits.byteLength;
  return bits;
}
