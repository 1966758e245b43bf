// The search `filter` parameter: comparisons over numeric and boolean fields of `data`, combined
// with && (binds tighter), ||, ! and parentheses, e.g. `data.price<20 && data.inStock=true`.
import type { FilterComparison, FilterExpr } from "../ports/engine.ts";

export class FilterSyntaxError extends Error {
  /** 0-based offset into the filter text where parsing stopped. */
  readonly position: number;
  readonly expected: string;

  constructor(position: number, expected: string, found: string) {
    super(`filter: at character ${position + 1}: expected ${expected}, found ${found}`);
    this.name = "FilterSyntaxError";
    this.position = position;
    this.expected = expected;
  }
}

const MAX_NESTING = 64;
const OPERATORS: FilterComparison[] = ["<=", ">=", "!=", "=", "<", ">"];
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const NAME = /[\p{L}\p{N}_$-]+/uy;
const QUOTED = /"(?:[^"\\]|\\.)*"/y;

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
    } else {
      expr = this.parseComparison();
    }
    this.depth--;
    return expr;
  }

  private parseComparison(): FilterExpr {
    this.skipSpace();
    if (!this.text.startsWith("data", this.pos) || this.text[this.pos + 4] !== ".") {
      this.fail("a field path starting with data. (e.g. data.price), ! or (");
    }
    this.pos += 5;
    const path = [this.parseSegment()];
    while (this.text[this.pos] === ".") {
      this.pos++;
      path.push(this.parseSegment());
    }
    this.skipSpace();
    const op = OPERATORS.find((o) => this.text.startsWith(o, this.pos));
    if (op === undefined) this.fail("a comparison operator (=, !=, <, <=, >, >=)");
    this.pos += op.length;
    this.skipSpace();
    const value = this.parseValue(op);
    return { kind: "cmp", path, op, value };
  }

  private parseSegment(): string {
    const quoted = this.match(QUOTED);
    if (quoted !== null) return JSON.parse(quoted) as string;
    const name = this.match(NAME);
    if (name === null) this.fail('a field name (letters, digits, _, $, -) or a "quoted" name');
    return name;
  }

  private parseValue(op: FilterComparison): number | boolean {
    for (const literal of [true, false]) {
      const word = String(literal);
      if (this.text.startsWith(word, this.pos) && !/[\p{L}\p{N}_]/u.test(this.text[this.pos + word.length] ?? "")) {
        if (op !== "=" && op !== "!=") this.fail(`a number after ${op} (booleans compare only with = and !=)`);
        this.pos += word.length;
        return literal;
      }
    }
    const number = this.match(NUMBER);
    if (number === null) this.fail("a number, true or false");
    return Number(number);
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

/** A comparison holds only when the field exists with the literal's type (number or boolean). */
export function compareValue(actual: unknown, op: FilterComparison, expected: number | boolean): boolean {
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

export function matchesFilter(expr: FilterExpr, data: unknown): boolean {
  switch (expr.kind) {
    case "and":
      return expr.args.every((arg) => matchesFilter(arg, data));
    case "or":
      return expr.args.some((arg) => matchesFilter(arg, data));
    case "not":
      return !matchesFilter(expr.arg, data);
    case "cmp":
      return compareValue(resolvePath(data, expr.path), expr.op, expr.value);
  }
}
