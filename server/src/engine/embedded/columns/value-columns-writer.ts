// Writes the value columns (columns/value-columns.ts): a column per data path some record reaches
// through objects, numbered in order of first appearance. While records arrive each column keeps a
// dictionary of its distinct strings (the builder's ids, in order of first use) and the slot log
// gets (column, code) pairs: a string's id, or a number (itself), false, true, an array, nothing.
// Numbers and booleans need no dictionary then: once every record is in, the columns are written a
// window of columns per pass over the slot log, each column's numbers sorted into its dictionary
// there, and each string dictionary sorted into facet order. One column per path serves filters,
// facets and sort (there are no separate filter columns: D-200).
import {
  VALUE_ARRAY,
  VALUE_FALSE,
  VALUE_NONE,
  VALUE_NUMBER,
  VALUE_TRUE,
  VALUES,
  type SlotPasses,
} from "../build/slot-codec.ts";
import type { SegmentFileWriter } from "../segment/segment-file.ts";
import { valueColumnSections } from "../segment/sections.ts";
import { Growable, release } from "../util/arrays.ts";
import { NO_VALUE } from "./value-columns.ts";

/** A slot replaced by a later record of the same id (slot-codec.ts). */
const NO_DOC = 0xffff_ffff;

/**
 * Bounds on the string dictionaries held during a build: a path of unique strings (a description
 * per record) would otherwise hold all of them in memory. A column over a bound keeps presence,
 * numbers and booleans; string filters, facets and sort on it read the records (docs/engine.md,
 * Value columns). Numbers are not held while records arrive, so they have no bound.
 */
const MAX_DISTINCT_PER_COLUMN = 1 << 20;
const MAX_STRING_UNITS = 64 << 20;

interface ValueColumn {
  path: string[];
  index: number;
  ids: Map<string, number> | null;
  strings: string[];
}

interface ColumnNode {
  column?: ValueColumn;
  children: Map<string, ColumnNode>;
}

export interface ValueColumnsWritten {
  paths: string[][];
  /** Columns whose strings were not kept (their numbers and booleans were). */
  overflow: number[];
}

export class ValueColumnsWriter {
  private readonly columns: ValueColumn[] = [];
  private readonly tree: ColumnNode = { children: new Map() };
  private stringUnits = 0;

  /** Appends (column, code[, number]) entries for the value at a data path to `into`. */
  add(path: readonly string[], value: unknown, into: number[]): void {
    const column = this.columnOf(path);
    const index = column.index;
    if (Array.isArray(value)) {
      into.push(index, VALUE_ARRAY);
      for (const item of value) this.addValue(column, item, into);
    } else if (!this.addValue(column, value, into)) into.push(index, VALUE_NONE);
  }

  /** Appends a scalar's entry; false when the value is none (an object, a non-finite number). */
  private addValue(column: ValueColumn, value: unknown, into: number[]): boolean {
    if (typeof value === "number") {
      if (!Number.isFinite(value)) return false;
      // -0 is 0 to a filter and a facet, as the dictionary's Map made it before.
      into.push(column.index, VALUE_NUMBER, value === 0 ? 0 : value);
    } else if (typeof value === "boolean") into.push(column.index, value ? VALUE_TRUE : VALUE_FALSE);
    else if (typeof value === "string") into.push(column.index, this.idOf(column, value));
    else return false;
    return true;
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
      node.column = { path: [...path], index: this.columns.length, ids: new Map(), strings: [] };
      this.columns.push(node.column);
    }
    return node.column;
  }

  private idOf(column: ValueColumn, value: string): number {
    const ids = column.ids;
    if (ids === null) return VALUE_NONE;
    let id = ids.get(value);
    if (id === undefined) {
      this.stringUnits += value.length;
      if (ids.size >= MAX_DISTINCT_PER_COLUMN || this.stringUnits > MAX_STRING_UNITS) {
        column.ids = null;
        column.strings = [];
        return VALUE_NONE;
      }
      id = column.strings.length;
      ids.set(value, id);
      column.strings.push(value);
    }
    return id;
  }

  /** Writes the columns, as many per pass over the slot log as fit in a window. */
  async write(out: SegmentFileWriter, slots: SlotPasses, n: number, windowBytes: number): Promise<ValueColumnsWritten> {
    const columns = this.columns;
    const overflow = columns.filter((c) => c.ids === null).map((c) => c.index);
    // The builder's string ids to positions in code unit order, and the sorted strings.
    const finalOf: Uint32Array[] = [];
    const sorted: string[][] = [];
    for (const column of columns) {
      const strings = column.strings;
      const order = strings.map((_, i) => i).sort((a, b) => (strings[a]! < strings[b]! ? -1 : 1));
      const final = new Uint32Array(order.length);
      order.forEach((temp, position) => {
        final[temp] = position;
      });
      finalOf.push(final);
      sorted.push(order.map((temp) => strings[temp]!));
      column.ids = null;
      column.strings = [];
    }
    // Per entry held in a pass: document and code (8 bytes), a number (8 more), presence per document.
    const perPass = Math.max(1, Math.floor(windowBytes / (17 * Math.max(1, n))));
    for (let first = 0; first < columns.length; first += perPass) {
      const count = Math.min(perPass, columns.length - first);
      const present = Array.from({ length: count }, () => new Uint8Array(n));
      const docs = Array.from({ length: count }, () => new Growable(Uint32Array));
      const codes = Array.from({ length: count }, () => new Growable(Uint32Array));
      const numbers = Array.from({ length: count }, () => new Growable(Float64Array));
      const dropStrings = Array.from({ length: count }, (_, c) => overflow.includes(first + c));
      await slots.forEach(VALUES, (d, slot) => {
        if (d === NO_DOC) return;
        const { valueColumns, valueCodes, valueNumbers } = slot;
        for (let i = 0, entries = slot.valueCount; i < entries; i++) {
          const c = valueColumns[i]! - first;
          if (c < 0 || c >= count) continue;
          const code = valueCodes[i]!;
          if (code === VALUE_ARRAY) present[c]![d] = 2;
          else if (present[c]![d] === 0) present[c]![d] = 1;
          if (code === VALUE_NONE || code === VALUE_ARRAY) continue;
          // Strings of a column that overflowed (ids given before it did) are not kept.
          if (code < VALUE_NUMBER && dropStrings[c]) continue;
          docs[c]!.push(d);
          codes[c]!.push(code);
          if (code === VALUE_NUMBER) numbers[c]!.push(valueNumbers[i]!);
        }
      });
      for (let c = 0; c < count; c++) {
        const sections = valueColumnSections(first + c);
        await out.add(sections.present, present[c]!);
        release(present[c]!);
        const dictionary = finalIds(codes[c]!.view(), numbers[c]!.view(), finalOf[first + c]!);
        numbers[c]!.release();
        codes[c]!.release();
        const { offsets, values } = docRuns(docs[c]!.view(), dictionary.ids, n);
        docs[c]!.release();
        release(dictionary.ids);
        await out.add(sections.offsets, offsets);
        await out.add(sections.ids, values);
        await writeDictionary(out, first + c, dictionary.numbers, dictionary.booleans, sorted[first + c]!);
        const size = dictionary.numbers.length + dictionary.booleans.length + sorted[first + c]!.length;
        const postings = valuePostings(offsets, values, n, size);
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
 * The final id of each entry of a column (codes as in the slot log, numbers in entry order) and
 * its dictionary in facet order: the distinct numbers ascending, false, true, then the strings
 * (`stringIds`: the builder's string id -> position among the sorted strings).
 */
function finalIds(
  codes: Uint32Array,
  numbers: Float64Array,
  stringIds: Uint32Array,
): { ids: Uint32Array; numbers: Float64Array; booleans: Uint8Array } {
  const sorted = numbers.slice().sort();
  let distinct = 0;
  for (let i = 0; i < sorted.length; i++) if (i === 0 || sorted[i] !== sorted[i - 1]) sorted[distinct++] = sorted[i]!;
  const dictionary = sorted.slice(0, distinct);
  release(sorted);
  let hasFalse = false;
  let hasTrue = false;
  for (let i = 0; i < codes.length; i++) {
    if (codes[i] === VALUE_FALSE) hasFalse = true;
    else if (codes[i] === VALUE_TRUE) hasTrue = true;
  }
  const booleans = Uint8Array.from([...(hasFalse ? [0] : []), ...(hasTrue ? [1] : [])]);
  const falseId = distinct;
  const trueId = distinct + (hasFalse ? 1 : 0);
  const stringBase = distinct + booleans.length;
  const ids = new Uint32Array(codes.length);
  let next = 0;
  for (let i = 0; i < codes.length; i++) {
    const code = codes[i]!;
    if (code === VALUE_NUMBER) ids[i] = lowerBoundF64(dictionary, numbers[next++]!);
    else if (code === VALUE_FALSE) ids[i] = falseId;
    else if (code === VALUE_TRUE) ids[i] = trueId;
    else ids[i] = stringBase + stringIds[code]!;
  }
  return { ids, numbers: dictionary, booleans };
}

function lowerBoundF64(values: Float64Array, target: number): number {
  let lo = 0;
  let hi = values.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (values[mid]! < target) lo = mid + 1;
    else hi = mid;
  }
  return lo;
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
  const single = new Uint32Array(n).fill(NO_VALUE);
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
        if (ids[d] !== NO_VALUE) visit(d, ids[d]!);
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

async function writeDictionary(
  out: SegmentFileWriter,
  column: number,
  numbers: Float64Array,
  booleans: Uint8Array,
  strings: string[],
): Promise<void> {
  const sections = valueColumnSections(column);
  await out.add(sections.numbers, numbers);
  await out.add(sections.booleans, booleans);
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
