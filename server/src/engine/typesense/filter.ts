// FilterExpr -> filter_by, with the semantics of search/filter.ts: a comparison (`!=` too)
// holds only when the field is present with the literal's type, an array field satisfies a
// comparison or IN when one element does, `!=` when it has a value of the type and none equals,
// and `!` negates. Typesense's `!=` and `![…]` are the complements of `=` and `[…]` (a document
// without the field passes), and it has no general NOT; so negations are pushed down to the
// comparisons, and presence is read from the `fpresent` and `fexists` tokens documents carry.
//
// Majors of layout 3 (documents.ts) hold every value at a path: `<`, `<=` read the least number,
// `>`, `>=` the greatest (any element below v ⟺ the least is below v, which negates exactly);
// `=`, `!=` and IN read the value lists; strings are compared as hash tokens (names.ts). Older
// majors hold scalar numbers and booleans only: strings and EXISTS find no field there.
import type { FilterComparison, FilterExpr, FilterValue } from "../../ports/engine.ts";
import { existsToken, filterField, presenceToken, stringToken } from "./names.ts";

/** `true`: no constraint. `false`: nothing can match. A string: a filter_by expression. */
export type Clause = string | boolean;

/** The first layout whose documents carry the value lists (documents.ts, DOCUMENT_LAYOUT). */
export const VALUE_LAYOUT = 3;

const NEGATED: Record<FilterComparison, FilterComparison> = {
  "=": "!=",
  "!=": "=",
  "<": ">=",
  "<=": ">",
  ">": "<=",
  ">=": "<",
};

const holds = (a: number, op: FilterComparison, b: number): boolean =>
  op === "="
    ? a === b
    : op === "!="
      ? a !== b
      : op === "<"
        ? a < b
        : op === "<="
          ? a <= b
          : op === ">"
            ? a > b
            : a >= b;

function combine(kind: "and" | "or", clauses: Clause[]): Clause {
  const absorbing = kind === "or";
  if (clauses.includes(absorbing)) return absorbing;
  const parts = clauses.filter((c): c is string => typeof c === "string");
  if (parts.length === 0) return !absorbing;
  if (parts.length === 1) return parts[0]!;
  return `(${parts.join(kind === "and" ? " && " : " || ")})`;
}

const present = (field: string): string => `fpresent:=[${presenceToken(field)}]`;
const missing = (field: string): string => `fpresent:!=[${presenceToken(field)}]`;

/** How a literal is written in filter_by: a string as its token, which needs no escaping. */
const literal = (value: FilterValue): string => (typeof value === "string" ? stringToken(value) : String(value));

type HasField = (field: string) => boolean;

/** A scalar comparison on a layout-2 field, to hold (negated=false) or to fail (negated=true). */
function scalarComparison(
  field: string,
  kind: "num" | "bool",
  op: FilterComparison,
  value: number | boolean,
  negated: boolean,
  exists: boolean,
): Clause {
  if (!exists) return negated;

  if (kind === "bool") {
    // Booleans order as false < true; the values of a bool field satisfying the comparison
    // form a set, which Typesense can test by equality or presence.
    const satisfying = [false, true].filter((b) => holds(Number(b), op, Number(value)));
    if (satisfying.length === 0) return negated;
    if (satisfying.length === 2) return negated ? missing(field) : present(field);
    return `${field}:${negated ? "!=" : "="}${String(satisfying[0])}`;
  }

  const text = String(value);
  if (!negated) return op === "!=" ? `(${field}:!=${text} && ${present(field)})` : `${field}:${op}${text}`;
  if (op === "=") return `${field}:!=${text}`;
  return `(${field}:${NEGATED[op]}${text} || ${missing(field)})`;
}

/** Equality on a value list (layout 3): `=` when any value equals, `!=` when some value does and none equals. */
function listEquality(field: string, op: "=" | "!=", value: string, negated: boolean, hasField: HasField): Clause {
  if (!hasField(field)) return negated;
  const equal = op === "=" ? !negated : negated;
  if (equal) return op === "=" ? `${field}:=${value}` : `(${field}:=${value} || ${missing(field)})`;
  return op === "=" ? `${field}:!=${value}` : `(${field}:!=${value} && ${present(field)})`;
}

function valueComparison(
  path: string[],
  op: FilterComparison,
  value: FilterValue,
  negated: boolean,
  hasField: HasField,
): Clause {
  if (typeof value === "boolean" && (op === "=" || op === "!=")) {
    return listEquality(filterField("b", path), op, String(value), negated, hasField);
  }
  if (typeof value === "boolean") {
    // Not in the filter syntax (booleans take = and != only); read as the scalar it would be.
    return scalarComparison(filterField("bool", path), "bool", op, value, negated, hasField(filterField("bool", path)));
  }
  if (typeof value === "string") {
    // Strings take = and != only; the parser refuses the rest, so nothing holds for them here.
    if (op !== "=" && op !== "!=") return negated;
    return listEquality(filterField("s", path), op, literal(value), negated, hasField);
  }
  const list = filterField("n", path);
  if (op === "=" || op === "!=") return listEquality(list, op, String(value), negated, hasField);
  if (!hasField(list)) return negated;
  const bound = filterField(op === "<" || op === "<=" ? "nmin" : "nmax", path);
  if (!negated) return `${bound}:${op}${value}`;
  return `(${bound}:${NEGATED[op]}${value} || ${missing(list)})`;
}

/** `IN [...]`: each type's literals against that type's field; a negation keeps records without them. */
function membership(
  path: string[],
  values: FilterValue[],
  negated: boolean,
  hasField: HasField,
  layout: number,
): Clause {
  const byType: [string, FilterValue[]][] =
    layout >= VALUE_LAYOUT
      ? [
          [filterField("n", path), values.filter((v) => typeof v === "number")],
          [filterField("s", path), values.filter((v) => typeof v === "string")],
          [filterField("b", path), values.filter((v) => typeof v === "boolean")],
        ]
      : [
          [filterField("num", path), values.filter((v) => typeof v === "number")],
          [filterField("bool", path), values.filter((v) => typeof v === "boolean")],
        ];
  const clauses = byType
    .filter(([field, list]) => list.length > 0 && hasField(field))
    .map(([field, list]) => `${field}:${negated ? "!" : ""}[${[...new Set(list.map(literal))].join(",")}]`);
  return combine(negated ? "and" : "or", clauses);
}

function translate(expr: FilterExpr, negated: boolean, hasField: HasField, layout: number): Clause {
  switch (expr.kind) {
    case "not":
      return translate(expr.arg, !negated, hasField, layout);
    case "and":
    case "or": {
      const kind = negated ? (expr.kind === "and" ? "or" : "and") : expr.kind;
      return combine(
        kind,
        expr.args.map((arg) => translate(arg, negated, hasField, layout)),
      );
    }
    case "cmp": {
      if (layout >= VALUE_LAYOUT) return valueComparison(expr.path, expr.op, expr.value, negated, hasField);
      if (typeof expr.value === "string") return negated;
      const kind = typeof expr.value === "boolean" ? "bool" : "num";
      const field = filterField(kind, expr.path);
      return scalarComparison(field, kind, expr.op, expr.value, negated, hasField(field));
    }
    case "in":
      return membership(expr.path, expr.values, negated, hasField, layout);
    case "exists": {
      if (layout < VALUE_LAYOUT) return negated;
      return `fexists:${negated ? "!=" : "="}${existsToken(expr.path)}`;
    }
  }
}

/**
 * `hasField` says whether the collection's schema knows a flattened field (it only learns a
 * field once some document has it, and filtering on an unknown field is an error); `layout` is
 * the major's document layout.
 */
export function translateFilter(expr: FilterExpr, hasField: HasField, layout: number = VALUE_LAYOUT): Clause {
  return translate(expr, false, hasField, layout);
}

/** Flattened fields an expression refers to, to check them against the schema first. */
export function referencedFields(expr: FilterExpr, layout: number = VALUE_LAYOUT): string[] {
  switch (expr.kind) {
    case "not":
      return referencedFields(expr.arg, layout);
    case "and":
    case "or":
      return expr.args.flatMap((arg) => referencedFields(arg, layout));
    case "cmp":
    case "in": {
      const values = expr.kind === "cmp" ? [expr.value] : expr.values;
      if (layout < VALUE_LAYOUT) {
        return [
          ...(values.some((v) => typeof v === "number") ? [filterField("num", expr.path)] : []),
          ...(values.some((v) => typeof v === "boolean") ? [filterField("bool", expr.path)] : []),
        ];
      }
      return [
        ...(values.some((v) => typeof v === "number") ? [filterField("n", expr.path)] : []),
        ...(values.some((v) => typeof v === "string") ? [filterField("s", expr.path)] : []),
        ...(values.some((v) => typeof v === "boolean")
          ? [filterField("b", expr.path), filterField("bool", expr.path)]
          : []),
      ];
    }
    case "exists":
      return [];
  }
}

export const allOf = (...clauses: Clause[]): Clause => combine("and", clauses);
