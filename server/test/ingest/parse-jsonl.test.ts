import { describe, expect, it } from "vitest";
import { parse, titles } from "./parse-helpers.ts";

const lines = (...rows: string[]) => `${rows.join("\n")}\n`;

describe("JSON Lines uploads", () => {
  it("reads one record per line, keeping given ids and generating missing ones", async () => {
    const parsed = await parse(
      lines(
        '{"id":"sku-1","title":"Red shoe","weight":5,"images":["https://img.example/1.png"],"latitude":"48.85","longitude":"2.35","data":{"price":20}}',
        '{"title":"Blue shoe"}',
      ),
      { generateId: () => "generated" },
    );
    expect(parsed.format).toBe("jsonl");
    expect(parsed.gzip).toBe(false);
    expect(parsed.errors).toEqual([]);
    expect(parsed.records).toEqual([
      {
        id: "sku-1",
        title: "Red shoe",
        weight: 5,
        images: ["https://img.example/1.png"],
        latitude: "48.85",
        longitude: "2.35",
        data: { price: 20 },
      },
      { id: "generated", title: "Blue shoe", data: {} },
    ]);
  });

  it("accepts CRLF line ends, skips blank lines and keeps unicode intact", async () => {
    const text =
      '{"title":"Crème brûlée"}\r\n\r\n   \r\n{"title":"東京タワー 🗼"}\r\n{"weight":1}\r\n{"title":"last, no newline"}';
    const parsed = await parse(text);
    expect(titles(parsed)).toEqual(["Crème brûlée", "東京タワー 🗼", "last, no newline"]);
    expect(parsed.errors).toEqual([{ line: 5, field: "title", message: "title is required" }]);
  });

  it("gives the same records whatever the chunk boundaries, even inside multi-byte characters", async () => {
    const text = lines(
      ...Array.from({ length: 40 }, (_, i) =>
        JSON.stringify({ id: `r${i}`, title: `Ünïcødé ${"€".repeat(i % 5)} 🍣 ${i}` }),
      ),
    );
    const whole = await parse(text);
    expect(whole.records).toHaveLength(40);
    for (const chunking of [1, 2, 3, { random: 17, seed: 1 }, { random: 300, seed: 7 }]) {
      expect((await parse(text, { chunking })).records).toEqual(whole.records);
    }
  });

  it("reports a malformed line with its line number and goes on with the next line", async () => {
    const parsed = await parse(
      lines('{"title":"one"}', '{"title": "two", }', "", '{"title":"four"}', "not json at all"),
    );
    expect(titles(parsed)).toEqual(["one", "four"]);
    expect(parsed.errors).toHaveLength(2);
    expect(parsed.errors[0]).toMatchObject({ line: 2, message: expect.stringMatching(/^invalid JSON: .*column 18$/) });
    expect(parsed.errors[1]).toMatchObject({ line: 5, message: expect.stringMatching(/^invalid JSON/) });
  });

  it("names the line and field of a record that fails validation", async () => {
    const parsed = await parse(
      lines('{"title":"ok"}', '{"title":"heavy","weight":"abc"}', '{"data":{"price":1}}', "[1,2]", '{"title":"   "}'),
    );
    expect(titles(parsed)).toEqual(["ok"]);
    expect(parsed.errors).toEqual([
      { line: 2, field: "weight", message: "weight must be an integer" },
      { line: 3, field: "title", message: "title is required" },
      { line: 4, message: "a record must be a JSON object" },
      { line: 5, field: "title", message: "title must not be empty" },
    ]);
  });

  it("puts unknown top-level fields into data, as flat Algolia or Typesense documents have them", async () => {
    const parsed = await parse(
      lines(
        '{"id":"1","title":"Lamp","price":25,"inStock":true,"tags":["home"]}',
        '{"id":"2","title":"Desk","color":"oak","data":{"price":120}}',
      ),
    );
    expect(parsed.records).toEqual([
      { id: "1", title: "Lamp", data: { price: 25, inStock: true, tags: ["home"] } },
      { id: "2", title: "Desk", data: { price: 120, color: "oak" } },
    ]);
  });

  it("refuses a field given both at the top level and inside data instead of dropping one", async () => {
    const parsed = await parse(lines('{"title":"Lamp","price":25,"data":{"price":30}}'));
    expect(parsed.records).toEqual([]);
    expect(parsed.errors).toEqual([
      { line: 1, field: "price", message: "price is given both at the top level and inside data" },
    ]);
  });

  it("rejects a pretty-printed JSON object clearly instead of reporting every line", async () => {
    const parsed = await parse('{\n  "title": "one record",\n  "weight": 3\n}\n');
    expect(parsed.records).toEqual([]);
    expect(parsed.errors).toEqual([]);
    expect(parsed.failure?.line).toBe(1);
    expect(parsed.failure?.message).toMatch(/one complete object per line/);
    expect(parsed.failure?.message).toMatch(/JSON array/);
  });

  it("rejects a line longer than the maximum record size and reads the lines after it", async () => {
    const huge = JSON.stringify({ title: "x".repeat(5000) });
    for (const chunking of [64 * 1024, 100, 1]) {
      const parsed = await parse(lines('{"title":"before"}', huge, '{"title":"after"}'), {
        maxRecordBytes: 1000,
        chunking,
      });
      expect(titles(parsed)).toEqual(["before", "after"]);
      expect(parsed.errors).toEqual([
        { line: 2, message: "the line is longer than the maximum record size of 1000 bytes" },
      ]);
    }
  });

  it("rejects an over-long last line without a newline", async () => {
    const parsed = await parse(`{"title":"a"}\n${JSON.stringify({ title: "y".repeat(3000) })}`, {
      maxRecordBytes: 1000,
      chunking: 256,
    });
    expect(titles(parsed)).toEqual(["a"]);
    expect(parsed.errors).toEqual([{ line: 2, message: expect.stringContaining("maximum record size") }]);
  });

  it("delivers every occurrence of a repeated id in file order, so the later one wins when written", async () => {
    const parsed = await parse(
      lines('{"id":"a","title":"first"}', '{"id":"b","title":"other"}', '{"id":"a","title":"second"}'),
    );
    expect(parsed.records.map((record) => `${record.id}:${record.title}`)).toEqual(["a:first", "b:other", "a:second"]);
  });

  it("splits the output into batches of the requested size, errors included", async () => {
    const rows = Array.from({ length: 10 }, (_, i) => (i === 4 ? "oops" : JSON.stringify({ title: `t${i}` })));
    const parsed = await parse(lines(...rows), { batchSize: 3 });
    expect(parsed.batches).toBe(4);
    expect(parsed.records).toHaveLength(9);
    expect(parsed.errors.map((error) => error.line)).toEqual([5]);
  });
});
