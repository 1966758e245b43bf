// Sorted posting runs and expressions over them: unions (a term's two runs, a prefix spanning
// several terms) and intersections (multi-token queries, leapfrogging with galloping seeks).
// Entries are positions in one of a segment's orders (see segment.ts): the same expression is
// read in weight, id or geo order by building it over that order's runs.
import { lowerBound } from "./arrays.ts";

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
    return ++this.pos < this.end ? this.docs[this.pos]! : ((this.pos = this.end), END);
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
    return (this.current = min);
  }

  seek(target: number): number {
    if (this.current >= target) return this.current;
    const { children, heads } = this;
    let min = END;
    for (let i = 0; i < children.length; i++) {
      if (heads[i]! < target) heads[i] = children[i]!.seek(target);
      if (heads[i]! < min) min = heads[i]!;
    }
    return (this.current = min);
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

  private bound(position: number): number {
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
}

export const EMPTY: Source = { count: () => 0, open: () => EMPTY_ITER };

/** The exact entries of a source as one run (an intersection's counts are only upper bounds). */
export function materialize(source: Source): RunSource {
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
