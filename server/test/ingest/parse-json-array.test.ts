import { describe, expect, it } from "vitest";
import { parse, titles } from "./parse-helpers.ts";

const pretty = (records: unknown[]) => `${JSON.stringify(records, null, 2)}\n`;

describe("JSON array uploads", () => {
  it("reads each element of a top-level array as a record", async () => {
    const parsed = await parse('[{"id":"a","title":"Alpha","weight":2,"data":{"n":1.5,"ok":false}},{"title":"Beta"}]', {
      generateId: () => "generated",
    });
    expect(parsed.format).toBe("json");
    expect(parsed.errors).toEqual([]);
    expect(parsed.records).toEqual([
      { id: "a", title: "Alpha", weight: 2, data: { n: 1.5, ok: false } },
      { id: "generated", title: "Beta", data: {} },
    ]);
  });

  it("parses the same whatever the chunk boundaries: 1 byte, random sizes, inside strings and UTF-8 characters", async () => {
    const records = Array.from({ length: 30 }, (_, i) => ({
      id: `id-${i}`,
      title: `Ünïcødé "quoted" [bracket] {brace} ,comma 🍣 ${i}`,
      data: {
        escaped: "line\nbreak\ttab \\ back\\slash \u2028",
        nested: { list: [1, [2, { deep: true }]], nil: null },
        n: -1.25e3,
      },
    }));
    const text = JSON.stringify(records);
    for (const chunking of [1, 2, 5, { random: 13, seed: 3 }, { random: 500, seed: 11 }]) {
      const parsed = await parse(text, { chunking });
      expect(parsed.errors).toEqual([]);
      expect(parsed.records).toEqual(records);
    }
  });

  it("reads \\u escapes and surrogate pairs like JSON.parse", async () => {
    const parsed = await parse('[{"title":"caf\\u00e9 \\ud83c\\udf63"}]', { chunking: 1 });
    expect(titles(parsed)).toEqual(["café 🍣"]);
  });

  it("reports each invalid element at the line where it starts and goes on", async () => {
    const text = pretty([{ title: "one" }, { title: "two", weight: "abc" }, 42, { weight: 3 }, { title: "five" }]);
    // Line 1 is "[", each object takes 3 or 4 lines.
    const parsed = await parse(text, { chunking: { random: 9, seed: 5 } });
    expect(titles(parsed)).toEqual(["one", "five"]);
    expect(parsed.errors).toEqual([
      { line: 5, field: "weight", message: "weight must be an integer" },
      { line: 9, message: "a record must be a JSON object" },
      { line: 10, field: "title", message: "title is required" },
    ]);
  });

  it("puts unknown top-level fields into data", async () => {
    const parsed = await parse('[{"objectID":"x1","title":"Lamp","price":25}]', { generateId: () => "generated" });
    expect(parsed.records).toEqual([{ id: "generated", title: "Lamp", data: { objectID: "x1", price: 25 } }]);
  });

  it("stops at malformed JSON with the line of the error, keeping the records before it", async () => {
    const text = '[\n  {"title": "one"},\n  {"title": "two"}\n  {"title": "three"}\n]\n';
    const parsed = await parse(text);
    expect(titles(parsed)).toEqual(["one", "two"]);
    expect(parsed.failure?.line).toBe(4);
    expect(parsed.failure?.message).toBe("invalid JSON: expected ','");
  });

  it("reports a truncated array at the line where the unfinished record starts", async () => {
    const parsed = await parse('[\n{"title": "one"},\n{"title": "tw');
    expect(titles(parsed)).toEqual(["one"]);
    expect(parsed.failure?.line).toBe(3);
    expect(parsed.failure?.message).toMatch(/ends inside the JSON array/);
  });

  it("rejects text after the closing bracket", async () => {
    const parsed = await parse('[{"title":"a"}]\n[{"title":"b"}]\n');
    expect(titles(parsed)).toEqual(["a"]);
    expect(parsed.failure?.line).toBe(2);
  });

  it("accepts an empty array", async () => {
    const parsed = await parse("[ ]");
    expect(parsed.records).toEqual([]);
    expect(parsed.errors).toEqual([]);
    expect(parsed.failure).toBeUndefined();
  });

  it("stops at an element larger than the maximum record size, naming the line where it starts", async () => {
    const text = pretty([{ title: "small" }, { title: "big", data: { blob: "z".repeat(10_000) } }]);
    const parsed = await parse(text, { maxRecordBytes: 2000, chunking: 512 });
    expect(titles(parsed)).toEqual(["small"]);
    expect(parsed.failure?.line).toBe(5);
    expect(parsed.failure?.message).toBe(
      "the record starting on line 5 is larger than the maximum record size of 2000 bytes",
    );
  });
});
