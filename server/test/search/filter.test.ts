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
    ["data.price<", 12, "a number"],
    ["data.price=abc", 12, 'a number, true, false or a "string"'],
    ["data.flag<true", 11, "a number after <"],
    ['data.brand>"Acme"', 12, "a number after >"],
    ['data.brand="Acme', 12, 'a string closed by "'],
    ['data.brand="\\x"', 12, "a JSON string"],
    ["data.c IN", 10, "[ after IN"],
    ["data.c IN []", 12, 'a number, true, false or a "string"'],
    ['data.c IN ["a" "b"]', 16, ", or ]"],
    ['data.c IN ["a",', 16, 'a number, true, false or a "string"'],
    ["data.c INSIDE [1]", 8, "a comparison operator"],
    ["EXISTS price", 8, "a field path starting with data. after EXISTS"],
    ["EXISTS", 7, "a field path starting with data. after EXISTS"],
    ["data.a=1 &&", 12, "a field path starting with data."],
    ["data.a=1 data.b=2", 10, "&&, || or the end of the filter"],
    ["(data.a=1", 10, ") or && or ||"],
    ["data.=1", 6, "a field name"],
    ["data.a=truex", 8, 'a number, true, false or a "string"'],
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
    // The service adds "filter: " when it reports the error; the parser's message must not.
    expect(e.message.startsWith("at character")).toBe(true);
  });

  it("parses strings, IN lists and EXISTS, keywords in any case", () => {
    expect(parseFilter('data.brand = "Acme"')).toEqual({ kind: "cmp", path: ["brand"], op: "=", value: "Acme" });
    expect(parseFilter('data.brand!="A \\"q\\" \\u00e9"')).toEqual({
      kind: "cmp",
      path: ["brand"],
      op: "!=",
      value: 'A "q" é',
    });
    expect(parseFilter('data.color IN ["red", 2, true]')).toEqual({
      kind: "in",
      path: ["color"],
      values: ["red", 2, true],
    });
    expect(parseFilter("data.c in[1]")).toEqual({ kind: "in", path: ["c"], values: [1] });
    expect(parseFilter("EXISTS data.a.b && exists data.c")).toEqual({
      kind: "and",
      args: [
        { kind: "exists", path: ["a", "b"] },
        { kind: "exists", path: ["c"] },
      ],
    });
    expect(parseFilter("!Exists data.x")).toEqual({ kind: "not", arg: { kind: "exists", path: ["x"] } });
    // A field named like a keyword is still a field.
    expect(parseFilter("data.in=1")).toEqual({ kind: "cmp", path: ["in"], op: "=", value: 1 });
  });

  it("takes 1 to 100 values after IN", () => {
    const list = (n: number) => `data.n IN [${Array.from({ length: n }, (_, i) => i).join(",")}]`;
    expect(parseFilter(list(100))).toMatchObject({ kind: "in" });
    expect(() => parseFilter(list(101))).toThrow(/at most 100 values/);
  });

  it("refuses a quoted field name that is not valid JSON at its position, as a syntax error", () => {
    for (const text of ['data."\\x"=1', 'EXISTS data.a."\\q"', 'data.ok."\\u12"=true']) {
      const error = (() => {
        try {
          parseFilter(text);
        } catch (e) {
          return e;
        }
      })();
      expect(error, text).toBeInstanceOf(FilterSyntaxError);
      expect((error as FilterSyntaxError).position).toBe(text.lastIndexOf('"\\'));
      expect((error as Error).message).toMatch(/expected a JSON string/);
    }
  });

  it("limits nesting instead of overflowing the stack", () => {
    expect(() => parseFilter(`${"(".repeat(10_000)}data.a=1${")".repeat(10_000)}`)).toThrow(FilterSyntaxError);
    expect(() => parseFilter(`${"(".repeat(20)}data.a=1${")".repeat(20)}`)).not.toThrow();
  });
});

describe("matchesFilter", () => {
  const data = {
    price: 12.5,
    inStock: true,
    nested: { level: 3, flag: false },
    text: "5",
    list: [1, 2],
    brand: "Acme",
    tags: ["red", "blue", 7, null, { deep: "x" }],
    nothing: null,
    empty: [],
    obj: {},
  };
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
    expect(matches('data.list="1"')).toBe(false);
    expect(matches("data.nested=1")).toBe(false);
    expect(matches("data.price.x=1")).toBe(false);
    expect(matches("data.price<20", null)).toBe(false);
    // Negation is of the whole comparison: a record without the field passes !(…).
    expect(matches("!(data.missing=1)")).toBe(true);
  });

  it("compares strings exactly, case and accents included", () => {
    expect(matches('data.brand="Acme"')).toBe(true);
    expect(matches('data.brand="acme"')).toBe(false);
    expect(matches('data.brand="ACME"')).toBe(false);
    expect(matches('data.brand!="acme"')).toBe(true);
    expect(matches('data.brand!="Acme"')).toBe(false);
    expect(matches('data.text="5"')).toBe(true);
    expect(matches('data.price="12.5"')).toBe(false);
  });

  it("matches an array when any element of the literal's type does; != when none equals", () => {
    expect(matches("data.list=2")).toBe(true);
    expect(matches("data.list>1")).toBe(true);
    expect(matches("data.list>2")).toBe(false);
    expect(matches("data.list!=1")).toBe(false);
    expect(matches("data.list!=3")).toBe(true);
    expect(matches('data.tags="blue"')).toBe(true);
    expect(matches('data.tags!="red"')).toBe(false);
    expect(matches('data.tags!="green"')).toBe(true);
    expect(matches("data.tags=7")).toBe(true);
    expect(matches("data.tags!=8")).toBe(true);
    // No element of the literal's type: neither = nor != holds.
    expect(matches("data.tags!=true")).toBe(false);
    expect(matches("data.empty!=1")).toBe(false);
    // Objects inside arrays are not followed by paths.
    expect(matches('data.tags.deep="x"')).toBe(false);
  });

  it("matches IN when the field or an element equals one of the values, type included", () => {
    expect(matches('data.brand IN ["Bolt", "Acme"]')).toBe(true);
    expect(matches('data.brand IN ["acme"]')).toBe(false);
    expect(matches('data.tags IN ["green", 7]')).toBe(true);
    expect(matches('data.tags IN ["7"]')).toBe(false);
    expect(matches("data.inStock IN [false, true]")).toBe(true);
    expect(matches("data.price IN [12.5]")).toBe(true);
    expect(matches("data.missing IN [1]")).toBe(false);
    expect(matches("!(data.missing IN [1])")).toBe(true);
  });

  it("holds EXISTS for any present value but null, empty arrays and objects included", () => {
    for (const path of ["price", "brand", "inStock", "empty", "obj", "tags", "nested.level"]) {
      expect(matches(`EXISTS data.${path}`), path).toBe(true);
    }
    expect(matches("EXISTS data.nothing")).toBe(false);
    expect(matches("EXISTS data.missing")).toBe(false);
    expect(matches("EXISTS data.price.x")).toBe(false);
    expect(matches("!EXISTS data.missing")).toBe(true);
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
