import { describe, expect, it } from "vitest";
import { typedCell } from "../../src/ingest/parse/csv-cells.ts";
import { parse, titles } from "./parse-helpers.ts";

describe("CSV uploads", () => {
  it("maps header columns by name, whatever their case and surrounding spaces, and the rest into data", async () => {
    const csv =
      " ID ,Title,WEIGHT,images, Latitude ,longitude,price,Color\n" +
      "sku-1,Red shoe,5,https://img.example/1.png|https://img.example/2.png,48.85,2.35,19.90,red\n";
    const parsed = await parse(csv);
    expect(parsed.format).toBe("csv");
    expect(parsed.errors).toEqual([]);
    expect(parsed.records).toEqual([
      {
        id: "sku-1",
        title: "Red shoe",
        weight: 5,
        images: ["https://img.example/1.png", "https://img.example/2.png"],
        latitude: "48.85",
        longitude: "2.35",
        data: { price: 19.9, Color: "red" },
      },
    ]);
  });

  it("generates an id when the id column is missing or the cell is empty", async () => {
    let n = 0;
    const parsed = await parse("id,title\n,First\nkeep,Second\n", { generateId: () => `new-${++n}` });
    expect(parsed.records.map((record) => record.id)).toEqual(["new-1", "keep"]);
  });

  it("accepts images as a JSON array", async () => {
    const parsed = await parse('title,images\nLamp,"[""https://img.example/a.png"", ""https://img.example/b.png""]"\n');
    expect(parsed.records[0]?.images).toEqual(["https://img.example/a.png", "https://img.example/b.png"]);
  });

  it("types data cells only when nothing is lost", async () => {
    const parsed = await parse(
      "title,int,neg,dec,yes,no,zip,huge,digits,word,empty\n" +
        "t,12,-3.5,1.50,TRUE,false,007,1e999,12345678901234567890,abc,\n",
    );
    expect(parsed.records[0]?.data).toEqual({
      int: 12,
      neg: -3.5,
      dec: 1.5,
      yes: true,
      no: false,
      zip: "007",
      huge: "1e999",
      digits: "12345678901234567890",
      word: "abc",
    });
  });

  it("keeps numbers as text when a double would not give the same digits back", () => {
    expect(typedCell("9007199254740993")).toBe("9007199254740993");
    expect(typedCell("9007199254740991")).toBe(9007199254740991);
    expect(typedCell("0.1")).toBe(0.1);
    expect(typedCell("0.12345678901234567891")).toBe("0.12345678901234567891");
    expect(typedCell("+5")).toBe("+5");
    expect(typedCell(".5")).toBe(".5");
    expect(typedCell("True")).toBe(true);
    expect(typedCell("yes")).toBe("yes");
  });

  it("reads quoted fields with commas, escaped quotes and line breaks, and numbers rows by their first line", async () => {
    const csv =
      "title,description,code\n" +
      '"Hello, world","She said ""hi""",1\n' +
      '"Two\nline title","and a\r\nthird line",2\n' +
      "Plain,after the multi-line row,oops,extra\n" +
      "Last,row,3\n";
    const parsed = await parse(csv, { chunking: { random: 7, seed: 2 } });
    expect(parsed.records.map((record) => [record.title, record.data])).toEqual([
      ["Hello, world", { description: 'She said "hi"', code: 1 }],
      ["Two\nline title", { description: "and a\r\nthird line", code: 2 }],
      ["Last", { description: "row", code: 3 }],
    ]);
    expect(parsed.errors).toEqual([{ line: 6, message: "expected 3 fields as in the header, found 4" }]);
  });

  it("handles CRLF, a byte order mark, empty lines, spaces around quoted fields and unicode", async () => {
    const csv = '\ufeffid,title,note\r\n\r\n1, "Crème brûlée" ,été\r\n\r\n\r\n2,東京タワー 🗼,\r\n';
    const parsed = await parse(csv, { chunking: 1 });
    expect(parsed.errors).toEqual([]);
    expect(parsed.records).toEqual([
      { id: "1", title: "Crème brûlée", data: { note: "été" } },
      { id: "2", title: "東京タワー 🗼", data: {} },
    ]);
  });

  it("gives line numbers that count empty lines and leading blank lines", async () => {
    const parsed = await parse("\n\ntitle,weight\n\nA,1\n\n\nB,x\n");
    expect(titles(parsed)).toEqual(["A"]);
    expect(parsed.errors).toEqual([{ line: 8, field: "weight", message: "weight must be an integer" }]);
  });

  it("reports invalid values with the line and field", async () => {
    const csv = "title,weight,images,latitude,longitude\nA,abc,,,\n,3,,,\nC,2.5,,,\nD,,[not json,,\nE,,,91,10\nF,,,,\n";
    const parsed = await parse(csv);
    expect(titles(parsed)).toEqual(["F"]);
    expect(parsed.errors).toEqual([
      { line: 2, field: "weight", message: "weight must be an integer" },
      { line: 3, field: "title", message: "title must not be empty" },
      { line: 4, field: "weight", message: "weight must be an integer" },
      { line: 5, field: "images", message: "images must be a JSON array of URLs or a |-separated list of URLs" },
      { line: 6, field: "latitude", message: "latitude must be a decimal number between -90 and 90" },
    ]);
  });

  it("accepts a header with no rows", async () => {
    const parsed = await parse("title,price\r\n");
    expect(parsed).toMatchObject({ format: "csv", records: [], errors: [] });
    expect(parsed.failure).toBeUndefined();
  });

  it("rejects a header without a title column on line 1", async () => {
    const parsed = await parse("name,price\nLamp,3\n");
    expect(parsed.records).toEqual([]);
    expect(parsed.failure?.line).toBe(1);
    expect(parsed.failure?.message).toMatch(/no title column \(found: name, price\)/);
  });

  it("says that columns are separated by commas when the header looks semicolon-separated", async () => {
    const parsed = await parse("title;price\nLamp;3\n");
    expect(parsed.failure?.message).toMatch(/no title column \(found: title;price\).*separated by commas$/);
  });

  it("rejects a header naming a column twice or leaving one unnamed", async () => {
    expect((await parse("title,Title\na,b\n")).failure?.message).toMatch(/names the column Title twice/);
    expect((await parse("title,,x\na,b,c\n")).failure?.message).toMatch(/column 2 of the CSV header has no name/);
  });

  it("stops at an unclosed quote, naming the line where its row starts", async () => {
    const parsed = await parse('title,n\nA,1\n"B,2\nC,3\nD,4\n');
    expect(titles(parsed)).toEqual(["A"]);
    expect(parsed.failure?.line).toBe(3);
    expect(parsed.failure?.message).toMatch(/never closed/);
  });

  it("stops at a stray quote inside an unquoted field", async () => {
    const parsed = await parse('title,n\nA,1\n5 "inch" screen,2\n');
    expect(titles(parsed)).toEqual(["A"]);
    expect(parsed.failure?.line).toBe(3);
    expect(parsed.failure?.message).toMatch(/write the inner quote twice/);
  });

  it("stops at a row larger than the maximum record size", async () => {
    const parsed = await parse(`title,n\nA,1\nB,${"9".repeat(5000)}\n`, { maxRecordBytes: 1000 });
    expect(titles(parsed)).toEqual(["A"]);
    expect(parsed.failure?.line).toBe(3);
    expect(parsed.failure?.message).toMatch(/larger than the maximum record size of 1000 bytes/);
  });

  it("parses the same whatever the chunk boundaries", async () => {
    const rows = Array.from(
      { length: 50 },
      (_, i) => `r${i},"Title ${i}, ""q"" ü🍣\nsecond line",${i % 7},${i % 2 === 0}`,
    );
    const csv = `id,title,weight,flag\r\n${rows.join("\r\n")}\r\n`;
    const whole = await parse(csv);
    // Every row takes two lines; rows 0, 7, 14, ... have weight 0, which is not positive.
    expect(whole.records).toHaveLength(42);
    expect(whole.errors.map((error) => error.line)).toEqual([2, 16, 30, 44, 58, 72, 86, 100]);
    for (const chunking of [1, 3, { random: 29, seed: 9 }]) {
      const parsed = await parse(csv, { chunking });
      expect(parsed.records).toEqual(whole.records.map((record, i) => ({ ...record, id: parsed.records[i]!.id })));
      expect(parsed.errors).toEqual(whole.errors);
    }
  });
});
