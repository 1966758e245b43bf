// compileFilter evaluates a FilterExpr over a segment's columns with the semantics of
// src/search/filter.ts: its value columns (value-columns.ts), which hold every number, boolean and
// string of a path. Segments built before D-200 also have filter columns: each numeric or boolean
// data path (data.a.b) a column of a kind and a number per document (sections.ts,
// filterColumnSections), used where their value columns lack the values. Where a segment lacks a
// column (built before value columns, or a path with too many distinct strings) the predicate
// reads the document's record instead.
import type { FilterComparison, FilterExpr, FilterValue } from "../../../ports/engine.ts";
import { compareValue, matchesFilter } from "../../../search/filter.ts";
import type { Segment } from "../segment/segment.ts";
import { NO_VALUE, type ValueColumn } from "./value-columns.ts";

/** A document's kind of value at a filter column's path (its filter{i}Kind section). */
export const KIND_MISSING = 0;
export const KIND_NUMBER = 1;
export const KIND_FALSE = 2;
export const KIND_TRUE = 3;

export type DocPredicate = (doc: number) => boolean;

const never: DocPredicate = () => false;

/** The data of one document, parsed once however many leaves of a filter read it. */
class RecordData {
  private doc = -1;
  private data: unknown;
  private readonly segment: Segment;

  constructor(segment: Segment) {
    this.segment = segment;
  }

  of(doc: number): unknown {
    if (doc !== this.doc) {
      this.data = this.segment.records.read(doc).data ?? {};
      this.doc = doc;
    }
    return this.data;
  }
}

export function compileFilter(expr: FilterExpr, segment: Segment): DocPredicate {
  return compile(expr, segment, new RecordData(segment));
}

function compile(expr: FilterExpr, segment: Segment, records: RecordData): DocPredicate {
  switch (expr.kind) {
    case "and": {
      const args = expr.args.map((a) => compile(a, segment, records));
      return (doc) => args.every((f) => f(doc));
    }
    case "or": {
      const args = expr.args.map((a) => compile(a, segment, records));
      return (doc) => args.some((f) => f(doc));
    }
    case "not": {
      const arg = compile(expr.arg, segment, records);
      return (doc) => !arg(doc);
    }
    default: {
      const found = segment.valueColumn(expr.path);
      if (found.kind === "none") return never;
      if (found.kind === "column") return leafOnColumn(expr, found.column);
      // A column that kept its numbers and booleans but not its strings decides their comparisons.
      if (found.scalars !== undefined && expr.kind === "cmp" && typeof expr.value !== "string") {
        return leafOnColumn(expr, found.scalars);
      }
      // Unindexed: what the filter columns know (scalar numbers and booleans), else the record.
      const fromRecord: DocPredicate = (doc) => matchesFilter(expr, records.of(doc));
      const presence = found.presence;
      const known = presence === undefined ? fromRecord : (doc: number) => presence[doc] !== 0 && fromRecord(doc);
      if (expr.kind === "exists" && presence !== undefined) return (doc) => presence[doc] !== 0;
      if (expr.kind !== "cmp" || typeof expr.value === "string") return known;
      return scalarOrRecord(expr.path, expr.op, expr.value, segment, known);
    }
  }
}

/**
 * A number or boolean comparison from the filter column where the document's value is a scalar;
 * other documents (arrays, objects, missing) are decided by `rest`.
 */
function scalarOrRecord(
  path: string[],
  op: FilterComparison,
  value: number | boolean,
  segment: Segment,
  rest: DocPredicate,
): DocPredicate {
  const key = JSON.stringify(path);
  const column = segment.meta.filterPaths.findIndex((p) => JSON.stringify(p) === key);
  if (column < 0) return rest;
  const kinds = segment.filterKinds[column]!;
  const nums = segment.filterNums[column]!;
  return (doc) => {
    const kind = kinds[doc]!;
    if (kind === KIND_MISSING) return rest(doc);
    if (typeof value === "boolean") return kind !== KIND_NUMBER && compareValue(kind === KIND_TRUE, op, value);
    return kind === KIND_NUMBER && compareValue(nums[doc]!, op, value);
  };
}

type Leaf = Extract<FilterExpr, { kind: "cmp" | "in" | "exists" }>;

function leafOnColumn(expr: Leaf, column: ValueColumn): DocPredicate {
  if (expr.kind === "exists") {
    const present = column.present;
    return (doc) => present[doc] !== 0;
  }
  if (expr.kind === "in") {
    const wanted = [...new Set(expr.values.map((v) => column.idOf(v)).filter((id) => id >= 0))];
    if (wanted.length === 0) return never;
    if (wanted.length === 1) return anyIdIn(column, wanted[0]!, wanted[0]! + 1);
    const mask = new Uint8Array(column.size);
    for (const id of wanted) mask[id] = 1;
    return anyIdWhere(column, (id) => mask[id] === 1);
  }
  const { op, value } = expr;
  const [typeLo, typeHi] = typeRange(column, value);
  if (op === "!=") {
    const equal = column.idOf(value);
    return someOfTypeNoneEqual(column, typeLo, typeHi, equal);
  }
  if (op === "=") {
    const id = column.idOf(value);
    return id < 0 ? never : anyIdIn(column, id, id + 1);
  }
  // Orderings take numbers only (the parser refuses others; anything else matches nothing).
  if (typeof value !== "number") return never;
  const lo = op === ">" ? column.firstNumberAbove(value) : op === ">=" ? column.firstNumberAtLeast(value) : 0;
  const hi =
    op === "<" ? column.firstNumberAtLeast(value) : op === "<=" ? column.firstNumberAbove(value) : column.numberEnd;
  return lo >= hi ? never : anyIdIn(column, lo, hi);
}

/** The ids of the column's values of the literal's type. */
function typeRange(column: ValueColumn, value: FilterValue): [number, number] {
  if (typeof value === "number") return [0, column.numberEnd];
  if (typeof value === "boolean") return [column.numberEnd, column.booleanEnd];
  return [column.booleanEnd, column.size];
}

/** Some value of the document has an id in [lo, hi). */
function anyIdIn(column: ValueColumn, lo: number, hi: number): DocPredicate {
  const { ids, offsets } = column;
  if (!column.multiValued) {
    // NO_VALUE is above every id, so it never falls in [lo, hi).
    return (doc) => {
      const id = ids[doc]!;
      return id >= lo && id < hi;
    };
  }
  return (doc) => {
    for (let i = offsets[doc]!, end = offsets[doc + 1]!; i < end; i++) {
      const id = ids[i]!;
      if (id >= lo && id < hi) return true;
    }
    return false;
  };
}

function anyIdWhere(column: ValueColumn, test: (id: number) => boolean): DocPredicate {
  const { ids, offsets } = column;
  if (!column.multiValued) {
    return (doc) => {
      const id = ids[doc]!;
      return id !== NO_VALUE && test(id);
    };
  }
  return (doc) => {
    for (let i = offsets[doc]!, end = offsets[doc + 1]!; i < end; i++) if (test(ids[i]!)) return true;
    return false;
  };
}

/** `!=`: some value of the type ([lo, hi)) and none equal to the literal (id `equal`, -1 if no document has it). */
function someOfTypeNoneEqual(column: ValueColumn, lo: number, hi: number, equal: number): DocPredicate {
  const { ids, offsets } = column;
  if (!column.multiValued) {
    return (doc) => {
      const id = ids[doc]!;
      return id >= lo && id < hi && id !== equal;
    };
  }
  return (doc) => {
    let typed = false;
    for (let i = offsets[doc]!, end = offsets[doc + 1]!; i < end; i++) {
      const id = ids[i]!;
      if (id === equal) return false;
      if (id >= lo && id < hi) typed = true;
    }
    return typed;
  };
}

/** A superset of the documents a filter passes, from value postings, ascending and distinct. */
export interface FilterCandidates {
  size: number;
  docs(): Uint32Array;
}

const NO_CANDIDATES: FilterCandidates = { size: 0, docs: () => new Uint32Array(0) };

/**
 * Where a filter needs = or IN on an indexed value (alone, in an AND, or on every branch of an OR),
 * the documents holding those values: a selective filter is cheaper to start from than a query
 * that matches much (match-set.ts). Null when the filter gives no such bound.
 */
export function filterCandidates(expr: FilterExpr, segment: Segment): FilterCandidates | null {
  switch (expr.kind) {
    case "and": {
      let best: FilterCandidates | null = null;
      for (const arg of expr.args) {
        const c = filterCandidates(arg, segment);
        if (c !== null && (best === null || c.size < best.size)) best = c;
      }
      return best;
    }
    case "or": {
      const parts: FilterCandidates[] = [];
      for (const arg of expr.args) {
        const c = filterCandidates(arg, segment);
        if (c === null) return null;
        parts.push(c);
      }
      return union(parts);
    }
    case "not":
    case "exists":
      return null;
    default: {
      if (expr.kind === "cmp" && expr.op !== "=") return null;
      const found = segment.valueColumn(expr.path);
      if (found.kind === "none") return NO_CANDIDATES;
      if (found.kind !== "column") return null;
      const column = found.column;
      const values = expr.kind === "cmp" ? [expr.value] : expr.values;
      const ids = [...new Set(values.map((v) => column.idOf(v)).filter((id) => id >= 0))];
      return union(ids.map((id) => ({ size: column.postingSize(id), docs: () => column.postings(id) })));
    }
  }
}

function union(parts: FilterCandidates[]): FilterCandidates {
  if (parts.length <= 1) return parts[0] ?? NO_CANDIDATES;
  return {
    size: parts.reduce((sum, p) => sum + p.size, 0),
    // Pairwise merges of ascending runs (linear, unlike a sort), dropping documents in both.
    docs: () => parts.map((p) => p.docs()).reduce(mergeDistinct),
  };
}

function mergeDistinct(a: Uint32Array, b: Uint32Array): Uint32Array {
  const out = new Uint32Array(a.length + b.length);
  let i = 0;
  let j = 0;
  let n = 0;
  while (i < a.length && j < b.length) {
    const x = a[i]!;
    const y = b[j]!;
    if (x <= y) i++;
    if (y <= x) j++;
    out[n++] = x <= y ? x : y;
  }
  while (i < a.length) out[n++] = a[i++]!;
  while (j < b.length) out[n++] = b[j++]!;
  return out.subarray(0, n);
}
