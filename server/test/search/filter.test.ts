import { describe, expect, it } from "vitest";
import { FilterSyntaxError, matchesFilter, parseFilter } from "../../src/search/filter.ts";

describe("parseFilter", () => {
  it("parses comparisons on nested data paths", () => {
    expect(parseFilter("data.price<20")).toEqual({ kind: "cmp", path: ["price"], op: "<", value: 20 });
    expect(parseFilter(" data.a.b >= -3.5e2 ")).toEqual({ kind: "cmp", path: ["a", "b"], op: ">=", value: -350 });
    expect(parseFilter("data.inStock=true")).toEqual({ kind: "cmp", path: ["inStock"], op: "=", value: true });
    expect(parseFilter("data.x!=false")).toEqual({ kind: "cmp", path: ["x"], op: "!=", value: false });
    expect(parseFilter('data."odd key".v<=1')).toEqual({ kind: "cmp", path: ["odd key", "v"], op: "<=", value: 1 });
  });

  it("binds && tighter than || and honours ! and parentheses", () => {
    const a = { kind: "cmp", path: ["a"], op: "=", value: 1 } as const;
    const b = { kind: "cmp", path: ["b"], op: ">", value: 2 } as const;
    const c = { kind: "cmp", path: ["c"], op: "=", value: false } as const;
    expect(parseFilter("data.a=1 || data.b>2 && data.c=false")).toEqual({
      kind: "or",
      args: [a, { kind: "and", args: [b, c] }],
    });
    expect(parseFilter("(data.a=1 || data.b>2) && !(data.c=false)")).toEqual({
      kind: "and",
      args: [
        { kind: "or", args: [a, b] },
        { kind: "not", arg: c },
      ],
    });
    expect(parseFilter("!!data.a=1")).toEqual({ kind: "not", arg: { kind: "not", arg: a } });
  });

  it.each([
    ["", 1, "a field path starting with data."],
    ["price<20", 1, "a field path starting with data."],
    ["data.price", 11, "a comparison operator"],
    ["data.price<", 12, "a number, true or false"],
    ["data.price<abc", 12, "a number, true or false"],
    ["data.flag<true", 11, "a number after <"],
    ["data.a=1 &&", 12, "a field path starting with data."],
    ["data.a=1 data.b=2", 10, "&&, || or the end of the filter"],
    ["(data.a=1", 10, ") or && or ||"],
    ["data.=1", 6, "a field name"],
    ["data.a=truex", 8, "a number, true or false"],
  ])("rejects %j naming position %i and what was expected", (text, column, expected) => {
    let error: unknown;
    try {
      parseFilter(text);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(FilterSyntaxError);
    const e = error as FilterSyntaxError;
    expect(e.position + 1).toBe(column);
    expect(e.message).toContain(`at character ${column}`);
    expect(e.message).toContain(expected);
  });

  it("limits nesting instead of overflowing the stack", () => {
    expect(() => parseFilter(`${"(".repeat(10_000)}data.a=1${")".repeat(10_000)}`)).toThrow(FilterSyntaxError);
    expect(() => parseFilter(`${"(".repeat(20)}data.a=1${")".repeat(20)}`)).not.toThrow();
  });
});

describe("matchesFilter", () => {
  const data = { price: 12.5, inStock: true, nested: { level: 3, flag: false }, text: "5", list: [1, 2] };
  const matches = (text: string, on: unknown = data) => matchesFilter(parseFilter(text), on);

  it("compares numbers with every operator", () => {
    expect(matches("data.price<20")).toBe(true);
    expect(matches("data.price<=12.5")).toBe(true);
    expect(matches("data.price>12.5")).toBe(false);
    expect(matches("data.price>=12.5")).toBe(true);
    expect(matches("data.price=12.5")).toBe(true);
    expect(matches("data.price!=12.5")).toBe(false);
    expect(matches("data.nested.level=3")).toBe(true);
  });

  it("compares booleans for equality", () => {
    expect(matches("data.inStock=true")).toBe(true);
    expect(matches("data.nested.flag!=true")).toBe(true);
    expect(matches("data.nested.flag=true")).toBe(false);
  });

  it("does not match a missing field or a field of another type, even with !=", () => {
    expect(matches("data.missing!=1")).toBe(false);
    expect(matches("data.text=5")).toBe(false);
    expect(matches("data.inStock=1")).toBe(false);
    expect(matches("data.price=true")).toBe(false);
    expect(matches("data.list=1")).toBe(false);
    expect(matches("data.nested=1")).toBe(false);
    expect(matches("data.price.x=1")).toBe(false);
    expect(matches("data.price<20", null)).toBe(false);
    // Negation is of the whole comparison: a record without the field passes !(…).
    expect(matches("!(data.missing=1)")).toBe(true);
  });

  it("does not follow inherited properties", () => {
    expect(matches("data.constructor=1", {})).toBe(false);
  });

  it("combines with and, or and not", () => {
    expect(matches("data.price<20 && data.inStock=true")).toBe(true);
    expect(matches("data.price>20 || data.nested.level=3")).toBe(true);
    expect(matches("data.price>20 || !(data.inStock=true)")).toBe(false);
  });
});
