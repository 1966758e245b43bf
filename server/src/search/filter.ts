// The search `filter` parameter: comparisons over fields of `data` (numbers, booleans, strings;
// arrays match when any element does), `IN [...]` lists and `EXISTS`, combined with && (binds
// tighter), ||, ! and parentheses, e.g. `data.price<20 && data.brand IN ["Acme", "Bolt"]`.
// matchesFilter is the meaning every engine adapter reproduces (docs/api.md, Filter syntax).
import type { FilterComparison, FilterExpr, FilterValue } from "../ports/engine.ts";

export class FilterSyntaxError extends Error {
  /** 0-based offset into the filter text where parsing stopped. */
  readonly position: number;
  readonly expected: string;

  constructor(position: number, expected: string, found: string) {
    // No "filter:" prefix: the service names the parameter when it reports the error.
    super(`at character ${position + 1}: expected ${expected}, found ${found}`);
    this.name = "FilterSyntaxError";
    this.position = position;
    this.expected = expected;
  }
}

const MAX_NESTING = 64;
/** Most literals of one `IN [...]` list. */
export const MAX_IN_VALUES = 100;
const OPERATORS: FilterComparison[] = ["<=", ">=", "!=", "=", "<", ">"];
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const NAME = /[\p{L}\p{N}_$-]+/uy;
const QUOTED = /"(?:[^"\\]|\\.)*"/y;
const WORD_CHAR = /[\p{L}\p{N}_]/u;

class Parser {
  private pos = 0;
  private depth = 0;
  private readonly text: string;

  constructor(text: string) {
    this.text = text;
  }

  parse(): FilterExpr {
    this.skipSpace();
    const expr = this.parseOr();
    this.skipSpace();
    if (this.pos < this.text.length) this.fail("&&, || or the end of the filter");
    return expr;
  }

  private parseOr(): FilterExpr {
    const args = [this.parseAnd()];
    while (this.eat("||")) args.push(this.parseAnd());
    return args.length === 1 ? args[0]! : { kind: "or", args };
  }

  private parseAnd(): FilterExpr {
    const args = [this.parseUnary()];
    while (this.eat("&&")) args.push(this.parseUnary());
    return args.length === 1 ? args[0]! : { kind: "and", args };
  }

  private parseUnary(): FilterExpr {
    if (++this.depth > MAX_NESTING) this.fail(`at most ${MAX_NESTING} nested parentheses or negations`);
    let expr: FilterExpr;
    if (this.eat("!")) {
      expr = { kind: "not", arg: this.parseUnary() };
    } else if (this.eat("(")) {
      expr = this.parseOr();
      if (!this.eat(")")) this.fail(") or && or ||");
    } else if (this.keyword("exists")) {
      this.skipSpace();
      expr = { kind: "exists", path: this.parsePath("a field path starting with data. after EXISTS") };
    } else {
      expr = this.parseComparison();
    }
    this.depth--;
    return expr;
  }

  private parsePath(expected: string): string[] {
    const read = readDataPath(this.text, this.pos);
    if ("failAt" in read) {
      this.pos = read.failAt;
      this.fail(read.expected ?? expected);
    }
    this.pos = read.end;
    return read.path;
  }

  private parseComparison(): FilterExpr {
    this.skipSpace();
    const path = this.parsePath("a field path starting with data. (e.g. data.price), EXISTS, ! or (");
    this.skipSpace();
    if (this.keyword("in")) return { kind: "in", path, values: this.parseList() };
    const op = OPERATORS.find((o) => this.text.startsWith(o, this.pos));
    if (op === undefined) this.fail("a comparison operator (=, !=, <, <=, >, >=) or IN");
    this.pos += op.length;
    this.skipSpace();
    const value = this.parseValue(op);
    return { kind: "cmp", path, op, value };
  }

  /** `[v1, v2, ...]` after IN: 1 to MAX_IN_VALUES literals. */
  private parseList(): FilterValue[] {
    this.skipSpace();
    if (this.text[this.pos] !== "[") this.fail("[ after IN");
    this.pos++;
    this.skipSpace();
    const values: FilterValue[] = [];
    while (true) {
      if (values.length === MAX_IN_VALUES) this.fail(`] (at most ${MAX_IN_VALUES} values after IN)`);
      values.push(this.parseValue("="));
      this.skipSpace();
      if (this.text[this.pos] === ",") {
        this.pos++;
        this.skipSpace();
        continue;
      }
      if (this.text[this.pos] !== "]") this.fail(", or ]");
      this.pos++;
      return values;
    }
  }

  /** A literal: number, true, false or a JSON string; `op` decides which are allowed. */
  private parseValue(op: FilterComparison): FilterValue {
    const ordered = op !== "=" && op !== "!=";
    for (const literal of [true, false]) {
      const word = String(literal);
      if (this.text.startsWith(word, this.pos) && !WORD_CHAR.test(this.text[this.pos + word.length] ?? "")) {
        if (ordered) this.fail(`a number after ${op} (booleans and strings compare only with = and !=)`);
        this.pos += word.length;
        return literal;
      }
    }
    if (this.text[this.pos] === '"') {
      if (ordered) this.fail(`a number after ${op} (booleans and strings compare only with = and !=)`);
      const quoted = this.match(QUOTED);
      if (quoted === null) this.fail('a string closed by "');
      try {
        return JSON.parse(quoted) as string;
      } catch {
        this.pos -= quoted.length;
        this.fail(JSON_STRING_EXPECTED);
      }
    }
    const number = this.match(NUMBER);
    if (number === null) this.fail(ordered ? "a number" : 'a number, true, false or a "string"');
    return Number(number);
  }

  /** Consumes a case-insensitive keyword not followed by a name character. */
  private keyword(word: string): boolean {
    const at = this.text.slice(this.pos, this.pos + word.length);
    if (at.toLowerCase() !== word || WORD_CHAR.test(this.text[this.pos + word.length] ?? "")) return false;
    this.pos += word.length;
    return true;
  }

  private match(pattern: RegExp): string | null {
    pattern.lastIndex = this.pos;
    const m = pattern.exec(this.text);
    if (m === null) return null;
    this.pos += m[0].length;
    return m[0];
  }

  private eat(token: string): boolean {
    this.skipSpace();
    if (!this.text.startsWith(token, this.pos)) return false;
    this.pos += token.length;
    this.skipSpace();
    return true;
  }

  private skipSpace(): void {
    while (this.pos < this.text.length && /\s/.test(this.text[this.pos]!)) this.pos++;
  }

  private fail(expected: string): never {
    const found =
      this.pos >= this.text.length ? "the end of the filter" : JSON.stringify(this.text.slice(this.pos, this.pos + 10));
    throw new FilterSyntaxError(this.pos, expected, found);
  }
}

const JSON_STRING_EXPECTED = 'a JSON string (escapes: \\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)';
const SEGMENT_EXPECTED = 'a field name (letters, digits, _, $, -) or a "quoted" name';

/**
 * Reads a field path at `at`: `data.` then segments joined by dots, each a name or a JSON-quoted
 * string. Filters, `facets` and `sort` all spell paths this way. On failure, where it stopped and
 * what it expected there (`expected` is undefined when the text there is not a path at all, so the
 * caller can say what it wanted instead).
 */
export function readDataPath(
  text: string,
  at: number,
): { path: string[]; end: number } | { failAt: number; expected: string | undefined } {
  if (!text.startsWith("data.", at)) return { failAt: at, expected: undefined };
  let pos = at + 5;
  const path: string[] = [];
  for (;;) {
    QUOTED.lastIndex = pos;
    const quoted = QUOTED.exec(text);
    if (quoted) {
      try {
        path.push(JSON.parse(quoted[0]) as string);
      } catch {
        return { failAt: pos, expected: JSON_STRING_EXPECTED };
      }
      pos += quoted[0].length;
    } else {
      NAME.lastIndex = pos;
      const name = NAME.exec(text);
      if (!name) return { failAt: pos, expected: SEGMENT_EXPECTED };
      path.push(name[0]);
      pos += name[0].length;
    }
    if (text[pos] !== ".") return { path, end: pos };
    pos++;
  }
}

export function parseFilter(text: string): FilterExpr {
  return new Parser(text).parse();
}

/** The value at `path` inside `data`, following plain objects only. */
export function resolvePath(data: unknown, path: readonly string[]): unknown {
  let value = data;
  for (const key of path) {
    if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
    if (!Object.hasOwn(value, key)) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

/** Whether a value counts as a filter or facet value: a string, a boolean or a finite number. */
export function isFilterValue(value: unknown): value is FilterValue {
  return (
    typeof value === "string" || typeof value === "boolean" || (typeof value === "number" && Number.isFinite(value))
  );
}

/** A scalar's values, or an array's elements that are values (nested arrays and objects are not). */
export function valuesAt(actual: unknown): FilterValue[] {
  if (Array.isArray(actual)) return actual.filter(isFilterValue);
  return isFilterValue(actual) ? [actual] : [];
}

/** One value against a literal: false unless both have the same type. */
export function compareValue(actual: unknown, op: FilterComparison, expected: FilterValue): boolean {
  if (typeof actual !== typeof expected) return false;
  if (typeof actual === "number" && !Number.isFinite(actual)) return false;
  const a = actual as number;
  const b = expected as number;
  switch (op) {
    case "=":
      return a === b;
    case "!=":
      return a !== b;
    case "<":
      return a < b;
    case "<=":
      return a <= b;
    case ">":
      return a > b;
    case ">=":
      return a >= b;
  }
}

/**
 * A comparison on the field's value(s) (a scalar, or the elements of an array): it holds only for
 * values of the literal's type; `=` and the orderings when any of them holds, `!=` when there is
 * at least one and none equals the literal.
 */
export function compareField(actual: unknown, op: FilterComparison, expected: FilterValue): boolean {
  const values = valuesAt(actual);
  if (op === "!=") {
    let typed = false;
    for (const v of values) {
      if (typeof v !== typeof expected) continue;
      if (v === expected) return false;
      typed = true;
    }
    return typed;
  }
  return values.some((v) => compareValue(v, op, expected));
}

export function matchesFilter(expr: FilterExpr, data: unknown): boolean {
  switch (expr.kind) {
    case "and":
      return expr.args.every((arg) => matchesFilter(arg, data));
    case "or":
      return expr.args.some((arg) => matchesFilter(arg, data));
    case "not":
      return !matchesFilter(expr.arg, data);
    case "cmp":
      return compareField(resolvePath(data, expr.path), expr.op, expr.value);
    case "in": {
      const values = valuesAt(resolvePath(data, expr.path));
      return values.some((v) => expr.values.includes(v));
    }
    case "exists": {
      const value = resolvePath(data, expr.path);
      return value !== undefined && value !== null;
    }
  }
}
