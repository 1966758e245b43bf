// Writes the value columns (columns/value-columns.ts): a column per data path some record reaches
// through objects, numbered in order of first appearance. While records arrive each column keeps a
// dictionary of its distinct values (the builder's ids, in order of first use) and the slot log
// gets (column, id) pairs; once every record is in, each dictionary is sorted into facet order and
// the columns are written a window of columns per pass over the slot log.
import { VALUES, type SlotPasses } from "../build/slot-codec.ts";
import type { SegmentFileWriter } from "../segment/segment-file.ts";
import { valueColumnSections } from "../segment/sections.ts";
import { Growable, release } from "../util/arrays.ts";
import { compareFacetValues, isFacetValue, type FacetValue } from "./value-columns.ts";

const NONE = 0xffff_ffff;
/** In the slot log: the value at the path is an array (its elements follow as ids). */
const ARRAY = 0xffff_fffe;
/**
 * Bounds on the dictionaries held during a build: a path of unique values (a description per
 * record) would otherwise hold all of them in memory. A column over a bound keeps only presence;
 * filters and facets on it read the records (docs/engine.md, Value columns).
 */
const MAX_DISTINCT_PER_COLUMN = 1 << 20;
const MAX_STRING_UNITS = 64 << 20;

interface ValueColumn {
  path: string[];
  index: number;
  ids: Map<FacetValue, number> | null;
  values: FacetValue[];
}

interface ColumnNode {
  column?: ValueColumn;
  children: Map<string, ColumnNode>;
}

export interface ValueColumnsWritten {
  paths: string[][];
  overflow: number[];
}

export class ValueColumnsWriter {
  private readonly columns: ValueColumn[] = [];
  private readonly tree: ColumnNode = { children: new Map() };
  private stringUnits = 0;

  /** Appends (column, value id) pairs for the value at a data path to `into`. */
  add(path: readonly string[], value: unknown, into: number[]): void {
    const column = this.columnOf(path);
    const before = into.length;
    if (Array.isArray(value)) {
      into.push(column.index, ARRAY);
      for (const item of value) if (isFacetValue(item)) into.push(column.index, this.idOf(column, item));
    } else if (isFacetValue(value)) into.push(column.index, this.idOf(column, value));
    if (into.length === before) into.push(column.index, NONE);
  }

  private columnOf(path: readonly string[]): ValueColumn {
    let node = this.tree;
    for (const key of path) {
      let child = node.children.get(key);
      if (child === undefined) {
        child = { children: new Map() };
        node.children.set(key, child);
      }
      node = child;
    }
    if (node.column === undefined) {
      node.column = { path: [...path], index: this.columns.length, ids: new Map(), values: [] };
      this.columns.push(node.column);
    }
    return node.column;
  }

  private idOf(column: ValueColumn, value: FacetValue): number {
    const ids = column.ids;
    if (ids === null) return NONE;
    let id = ids.get(value);
    if (id === undefined) {
      if (typeof value === "string") this.stringUnits += value.length;
      if (ids.size >= MAX_DISTINCT_PER_COLUMN || this.stringUnits > MAX_STRING_UNITS) {
        column.ids = null;
        column.values = [];
        return NONE;
      }
      id = column.values.length;
      ids.set(value, id);
      column.values.push(value);
    }
    return id;
  }

  /** Writes the columns, as many per pass over the slot log as fit in a window. */
  async write(out: SegmentFileWriter, slots: SlotPasses, n: number, windowBytes: number): Promise<ValueColumnsWritten> {
    const columns = this.columns;
    const overflow = columns.filter((c) => c.ids === null).map((c) => c.index);
    // The builder's ids to final ids (positions in facet order), and the sorted dictionaries.
    const finalOf: Uint32Array[] = [];
    const sorted: FacetValue[][] = [];
    for (const column of columns) {
      const order = column.values
        .map((_, i) => i)
        .sort((a, b) => compareFacetValues(column.values[a]!, column.values[b]!));
      const final = new Uint32Array(order.length);
      order.forEach((temp, position) => {
        final[temp] = position;
      });
      finalOf.push(final);
      sorted.push(order.map((temp) => column.values[temp]!));
      column.ids = null;
      column.values = [];
    }
    const perPass = Math.max(1, Math.floor(windowBytes / (13 * Math.max(1, n))));
    for (let first = 0; first < columns.length; first += perPass) {
      const count = Math.min(perPass, columns.length - first);
      const present = Array.from({ length: count }, () => new Uint8Array(n));
      const docs = Array.from({ length: count }, () => new Growable(Uint32Array));
      const ids = Array.from({ length: count }, () => new Growable(Uint32Array));
      await slots.forEach(VALUES, (d, slot) => {
        if (d === NONE) return;
        const { valueColumns, valueIds } = slot;
        for (let i = 0, entries = slot.valueCount; i < entries; i++) {
          const c = valueColumns[i]! - first;
          if (c < 0 || c >= count) continue;
          const id = valueIds[i]!;
          if (id === ARRAY) present[c]![d] = 2;
          else if (present[c]![d] === 0) present[c]![d] = 1;
          if (id === NONE || id === ARRAY) continue;
          docs[c]!.push(d);
          ids[c]!.push(finalOf[first + c]![id]!);
        }
      });
      for (let c = 0; c < count; c++) {
        const sections = valueColumnSections(first + c);
        await out.add(sections.present, present[c]!);
        release(present[c]!);
        const { offsets, values } = docRuns(docs[c]!.view(), ids[c]!.view(), n);
        docs[c]!.release();
        ids[c]!.release();
        await out.add(sections.offsets, offsets);
        await out.add(sections.ids, values);
        await writeDictionary(out, first + c, sorted[first + c]!);
        const postings = valuePostings(offsets, values, n, sorted[first + c]!.length);
        release(values);
        await out.add(sections.postingOffsets, postings.offsets);
        await out.add(sections.postingDocs, postings.docs);
        release(postings.docs);
      }
    }
    return { paths: columns.map((c) => c.path), overflow };
  }
}

/**
 * Each document's distinct ids, ascending: one id per document (NONE for none) and no offsets
 * when no document has two, else runs with N+1 offsets.
 */
function docRuns(docs: Uint32Array, ids: Uint32Array, n: number): { offsets: Uint32Array; values: Uint32Array } {
  const starts = new Uint32Array(n + 1);
  for (let i = 0; i < docs.length; i++) starts[docs[i]! + 1]!++;
  for (let d = 0; d < n; d++) starts[d + 1]! += starts[d]!;
  const runs = new Uint32Array(docs.length);
  const fill = starts.slice(0, n);
  for (let i = 0; i < docs.length; i++) runs[fill[docs[i]!]!++] = ids[i]!;
  release(fill);
  // Sort and de-duplicate each run in place (runs are an array's elements: short).
  let out = 0;
  let multi = false;
  for (let d = 0; d < n; d++) {
    const from = starts[d]!;
    const to = starts[d + 1]!;
    starts[d] = out;
    if (to - from > 1) runs.subarray(from, to).sort();
    for (let i = from; i < to; i++) if (i === from || runs[i] !== runs[i - 1]) runs[out++] = runs[i]!;
    if (out - starts[d]! > 1) multi = true;
  }
  starts[n] = out;
  if (multi) return { offsets: starts, values: runs.slice(0, out) };
  const single = new Uint32Array(n).fill(NONE);
  for (let d = 0; d < n; d++) if (starts[d + 1]! > starts[d]!) single[d] = runs[starts[d]!]!;
  release(starts);
  release(runs);
  return { offsets: new Uint32Array(0), values: single };
}

/** Each value's documents, ascending: the inversion of the per-document runs. */
function valuePostings(
  offsets: Uint32Array,
  ids: Uint32Array,
  n: number,
  size: number,
): { offsets: Uint32Array; docs: Uint32Array } {
  const starts = new Uint32Array(size + 1);
  const single = offsets.length === 0;
  const forEach = (visit: (doc: number, id: number) => void) => {
    for (let d = 0; d < n; d++) {
      if (single) {
        if (ids[d] !== NONE) visit(d, ids[d]!);
      } else for (let i = offsets[d]!; i < offsets[d + 1]!; i++) visit(d, ids[i]!);
    }
  };
  forEach((_, id) => {
    starts[id + 1]!++;
  });
  for (let v = 0; v < size; v++) starts[v + 1]! += starts[v]!;
  const docs = new Uint32Array(starts[size]!);
  const fill = starts.slice(0, size);
  forEach((doc, id) => {
    docs[fill[id]!++] = doc;
  });
  return { offsets: starts, docs };
}

async function writeDictionary(out: SegmentFileWriter, column: number, values: FacetValue[]): Promise<void> {
  const sections = valueColumnSections(column);
  const numbers = values.filter((v): v is number => typeof v === "number");
  const booleans = values.filter((v): v is boolean => typeof v === "boolean");
  const strings = values.filter((v): v is string => typeof v === "string");
  await out.add(sections.numbers, Float64Array.from(numbers));
  await out.add(
    sections.booleans,
    Uint8Array.from(booleans, (b) => (b ? 1 : 0)),
  );
  const offsets = new Uint32Array(strings.length + 1);
  let total = 0;
  for (let i = 0; i < strings.length; i++) {
    offsets[i] = total;
    total += Buffer.byteLength(strings[i]!);
  }
  offsets[strings.length] = total;
  const bytes = Buffer.allocUnsafe(total);
  for (let i = 0; i < strings.length; i++) bytes.write(strings[i]!, offsets[i]!, "utf8");
  await out.add(sections.stringBytes, new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  await out.add(sections.stringOffsets, offsets);
}
