// Sorted posting runs and expressions over them: unions (a term's two runs, a prefix spanning
// several terms) and intersections (multi-token queries, leapfrogging with galloping seeks).
// Entries are positions in one of a segment's orders (see segment/sections.ts): the same
// expression is read in weight, id or geo order by building it over that order's runs.
import { lowerBound } from "../util/arrays.ts";

/** Returned when an iterator is exhausted; larger than any document number. */
export const END = 2 ** 32;

export interface DocIter {
  /** Upper bound of the number of documents this iterator yields. */
  readonly estimate: number;
  /** The next document, or END. */
  next(): number;
  /** The first document >= target at or after the current position, or END. */
  seek(target: number): number;
}

export class RunIter implements DocIter {
  readonly estimate: number;
  private readonly docs: Uint32Array;
  private readonly end: number;
  private pos: number;
  private readonly start: number;

  constructor(docs: Uint32Array, start: number, end: number) {
    this.docs = docs;
    this.start = start;
    this.end = end;
    this.pos = start - 1;
    this.estimate = end - start;
  }

  next(): number {
    if (++this.pos < this.end) return this.docs[this.pos]!;
    this.pos = this.end;
    return END;
  }

  seek(target: number): number {
    const docs = this.docs;
    let lo = Math.max(this.pos, this.start);
    if (lo >= this.end) return END;
    if (docs[lo]! >= target) {
      this.pos = lo;
      return docs[lo]!;
    }
    // Gallop: double the step until past the target, then binary search the last step.
    let step = 1;
    while (lo + step < this.end && docs[lo + step]! < target) {
      lo += step;
      step *= 2;
    }
    let hi = Math.min(lo + step, this.end);
    lo++;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (docs[mid]! < target) lo = mid + 1;
      else hi = mid;
    }
    this.pos = lo;
    return lo < this.end ? docs[lo]! : END;
  }
}

export class UnionIter implements DocIter {
  readonly estimate: number;
  private readonly children: DocIter[];
  private readonly heads: number[];
  private current = -1;

  constructor(children: DocIter[]) {
    this.children = children;
    this.heads = children.map(() => -1);
    this.estimate = children.reduce((sum, c) => sum + c.estimate, 0);
  }

  next(): number {
    const { children, heads } = this;
    let min = END;
    for (let i = 0; i < children.length; i++) {
      if (heads[i]! <= this.current) heads[i] = children[i]!.next();
      if (heads[i]! < min) min = heads[i]!;
    }
    this.current = min;
    return min;
  }

  seek(target: number): number {
    if (this.current >= target) return this.current;
    const { children, heads } = this;
    let min = END;
    for (let i = 0; i < children.length; i++) {
      if (heads[i]! < target) heads[i] = children[i]!.seek(target);
      if (heads[i]! < min) min = heads[i]!;
    }
    this.current = min;
    return min;
  }
}

export class AndIter implements DocIter {
  readonly estimate: number;
  private readonly children: DocIter[];

  /** Children are reordered smallest first: the rarest list drives the intersection. */
  constructor(children: DocIter[]) {
    this.children = [...children].sort((a, b) => a.estimate - b.estimate);
    this.estimate = this.children[0]!.estimate;
  }

  next(): number {
    return this.align(this.children[0]!.next());
  }

  seek(target: number): number {
    return this.align(this.children[0]!.seek(target));
  }

  private align(doc: number): number {
    const children = this.children;
    let i = 1;
    while (doc !== END && i < children.length) {
      const other = children[i]!.seek(doc);
      if (other === doc) i++;
      else {
        doc = children[0]!.seek(other);
        i = 1;
      }
    }
    return doc;
  }
}

const EMPTY_ITER: DocIter = { estimate: 0, next: () => END, seek: () => END };

/** A posting expression that can be opened over any range of positions. */
export interface Source {
  /** Upper bound of the number of entries in [lo, hi). */
  count(lo: number, hi: number): number;
  /** The entries in [lo, hi), ascending. */
  open(lo?: number, hi?: number): DocIter;
  /** Runs whose union is this source, or null when it is not a union of runs (an intersection). */
  runs(): RunSource[] | null;
}

export class RunSource implements Source {
  readonly values: Uint32Array;
  readonly start: number;
  readonly end: number;

  constructor(values: Uint32Array, start: number, end: number) {
    this.values = values;
    this.start = start;
    this.end = end;
  }

  get size(): number {
    return this.end - this.start;
  }

  count(lo: number, hi: number): number {
    return this.bound(hi) - this.bound(lo);
  }

  open(lo = 0, hi = END): RunIter {
    return new RunIter(this.values, this.bound(lo), this.bound(hi));
  }

  runs(): RunSource[] {
    return [this];
  }

  bound(position: number): number {
    if (position <= 0) return this.start;
    if (position >= END) return this.end;
    return lowerBound(this.values, this.start, this.end, position);
  }
}

export class UnionSource implements Source {
  private readonly children: Source[];

  constructor(children: Source[]) {
    this.children = children;
  }

  count(lo: number, hi: number): number {
    return this.children.reduce((sum, c) => sum + c.count(lo, hi), 0);
  }

  open(lo = 0, hi = END): DocIter {
    return new UnionIter(this.children.map((c) => c.open(lo, hi)));
  }

  runs(): RunSource[] | null {
    const all: RunSource[] = [];
    for (const child of this.children) {
      const runs = child.runs();
      if (runs === null) return null;
      all.push(...runs);
    }
    return all;
  }
}

export class AndSource implements Source {
  private readonly children: Source[];

  constructor(children: Source[]) {
    this.children = children;
  }

  count(lo: number, hi: number): number {
    return this.children.reduce((min, c) => Math.min(min, c.count(lo, hi)), Infinity);
  }

  open(lo = 0, hi = END): DocIter {
    return new AndIter(this.children.map((c) => c.open(lo, hi)));
  }

  runs(): null {
    return null;
  }

  /** Each input as a union of runs, or null when an input is itself an intersection. */
  inputRuns(): RunSource[][] | null {
    const inputs: RunSource[][] = [];
    for (const child of this.children) {
      const runs = child.runs();
      if (runs === null) return null;
      inputs.push(runs);
    }
    return inputs;
  }
}

/**
 * The entries of one source that are not in another: the documents of a stream that belong to
 * another stream are skipped here by a seek, without matching them (search/planning.ts).
 */
export class ExceptSource implements Source {
  readonly include: Source;
  readonly exclude: Source;

  constructor(include: Source, exclude: Source) {
    this.include = include;
    this.exclude = exclude;
  }

  /** An upper bound: the included entries' count. */
  count(lo: number, hi: number): number {
    return this.include.count(lo, hi);
  }

  open(lo = 0, hi = END): DocIter {
    return new ExceptIter(this.include.open(lo, hi), this.exclude.open(lo, hi));
  }

  runs(): null {
    return null;
  }
}

class ExceptIter implements DocIter {
  readonly estimate: number;
  private readonly include: DocIter;
  private readonly exclude: DocIter;
  /** The exclude iterator's current entry (it only ever moves forward). */
  private excluded = -1;

  constructor(include: DocIter, exclude: DocIter) {
    this.include = include;
    this.exclude = exclude;
    this.estimate = include.estimate;
  }

  next(): number {
    return this.skip(this.include.next());
  }

  seek(target: number): number {
    return this.skip(this.include.seek(target));
  }

  private skip(doc: number): number {
    while (doc !== END) {
      if (this.excluded < doc) this.excluded = this.exclude.seek(doc);
      if (this.excluded !== doc) return doc;
      doc = this.include.next();
    }
    return END;
  }
}

export const EMPTY: Source = { count: () => 0, open: () => EMPTY_ITER, runs: () => [] };

/**
 * An intersection of unions of runs is computed with bitmaps (intersectWithBitmap) when marking
 * them costs at most this many entries per entry of the smallest input.
 */
const BITMAP_RATIO = 64;

/** The exact entries of a source as one run (an intersection's counts are only upper bounds). */
export function materialize(source: Source): RunSource {
  const viaBitmap = source instanceof AndSource ? intersectionByBitmap(source) : null;
  if (viaBitmap !== null) return viaBitmap;
  const it = source.open();
  const out = new Uint32Array(it.estimate);
  let n = 0;
  for (let p = it.next(); p !== END; p = it.next()) out[n++] = p;
  return new RunSource(out, 0, n);
}

/** Many runs (a short prefix beyond the prefix index) merged into one sorted, de-duplicated run. */
export function mergeRuns(runs: RunSource[]): RunSource {
  const all = new Uint32Array(runs.reduce((s, r) => s + r.size, 0));
  let at = 0;
  for (const run of runs) {
    all.set(run.values.subarray(run.start, run.end), at);
    at += run.size;
  }
  all.sort();
  let unique = 0;
  for (let i = 0; i < all.length; i++) if (i === 0 || all[i] !== all[i - 1]) all[unique++] = all[i]!;
  return new RunSource(all, 0, unique);
}

/**
 * Intersects unions of runs with bitmaps over the range they share: each input is marked in its
 * own bitmap and the bitmaps are ANDed, then read out in order. Leapfrogging seeks through
 * iterator objects cost about 0.2 µs per step; marking is a few nanoseconds per entry, so for
 * inputs of similar sizes (two common words, for example) this is an order of magnitude faster.
 * Entries in [from, to) only. Null when the inputs are so much larger than the smallest that
 * leapfrogging costs less, or when an input is itself an intersection.
 */
export function intersectionByBitmap(source: AndSource, from = 0, to = END): RunSource | null {
  const whole = source.inputRuns();
  if (whole === null || whole.length < 2) return null;
  const inputs =
    from === 0 && to === END
      ? whole
      : whole.map((runs) => runs.map((r) => new RunSource(r.values, r.bound(from), r.bound(to))));
  let min = 0;
  let max = END - 1;
  let smallest = Infinity;
  for (const runs of inputs) {
    let lo = END;
    let hi = -1;
    let size = 0;
    for (const r of runs) {
      if (r.size === 0) continue;
      lo = Math.min(lo, r.values[r.start]!);
      hi = Math.max(hi, r.values[r.end - 1]!);
      size += r.size;
    }
    min = Math.max(min, lo);
    max = Math.min(max, hi);
    smallest = Math.min(smallest, size);
  }
  if (max < min) return new RunSource(new Uint32Array(0), 0, 0);
  // Only the entries within the shared range are marked.
  const ranges = inputs.map((runs) => runs.map((r) => [r.values, r.bound(min), r.bound(max + 1)] as const));
  const toMark = ranges.reduce((sum, runs) => sum + runs.reduce((s, [, lo, hi]) => s + hi - lo, 0), 0);
  const words = ((max - min) >>> 5) + 1;
  if (toMark + words * inputs.length > BITMAP_RATIO * smallest) return null;
  const all = new Uint32Array(words);
  const one = new Uint32Array(words);
  ranges.forEach((runs, k) => {
    const bits = k === 0 ? all : one;
    if (k > 0) one.fill(0);
    for (const [values, lo, hi] of runs) {
      for (let i = lo; i < hi; i++) {
        const offset = values[i]! - min;
        bits[offset >>> 5]! |= 1 << (offset & 31);
      }
    }
    if (k > 0) for (let w = 0; w < words; w++) all[w]! &= one[w]!;
  });
  let n = 0;
  for (let w = 0; w < words; w++) n += popcount(all[w]!);
  const out = new Uint32Array(n);
  let at = 0;
  for (let w = 0; w < words; w++) {
    for (let word = all[w]!; word !== 0; word &= word - 1) out[at++] = min + w * 32 + (31 - Math.clz32(word & -word));
  }
  return new RunSource(out, 0, n);
}

function popcount(v: number): number {
  v -= (v >>> 1) & 0x55555555;
  v = (v & 0x33333333) + ((v >>> 2) & 0x33333333);
  return (((v + (v >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
}
