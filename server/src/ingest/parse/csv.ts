// CSV through csv-parse (quoting, escaped quotes, embedded newlines, CRLF). Rows come out as
// arrays and are mapped to records here, by header name (docs/uploads.md, CSV): record fields by their
// names, every other column into `data`.
import { finished } from "node:stream/promises";
import { CsvError, Parser } from "csv-parse";
import { UploadParseError } from "./errors.ts";
import { CellError, imagesCell, typedCell, weightCell } from "./csv-cells.ts";
import type { FormatOptions, FormatParser, RecordSink } from "./format-parser.ts";

type Column = { kind: "id" | "title" | "latitude" | "longitude" | "weight" | "images" } | { kind: "data"; key: string };

const RECORD_COLUMNS = new Set(["id", "title", "latitude", "longitude", "weight", "images"]);

export class CsvParser implements FormatParser {
  private readonly sink: RecordSink;
  private readonly maxRecordBytes: number;
  private readonly csv: Parser;
  private columns: Column[] | undefined;
  /** The line the next row starts on, unless empty lines come first. */
  private nextRowLine: number;
  /** csv-parse's count of skipped empty lines, and of lines, when the previous row ended. */
  private emptyLines = 0;
  private parserLines = 0;

  constructor(sink: RecordSink, options: FormatOptions) {
    this.sink = sink;
    this.maxRecordBytes = options.maxRecordBytes;
    this.nextRowLine = options.firstLine;
    this.csv = new Parser({
      // Column counts are checked per row here, so that one short row costs one error, not the file.
      relax_column_count: true,
      skip_empty_lines: true,
      // Unquoted spaces around commas, as in `1, "Hello, world"`, would otherwise make the quote literal.
      trim: true,
      max_record_size: options.maxRecordBytes,
      // Rows are handled as they are parsed and dropped (null), so nothing queues on the readable side.
      on_record: (cells, context) => {
        const line = this.rowStart(context.empty_lines);
        // csv-parse counts a CRLF inside a quoted field as two lines, so its count is only a hint:
        // when it moved by exactly one line per row and empty line, the row has no line break.
        const parserSpan = context.lines - this.parserLines;
        const breaks = parserSpan === 1 + context.empty_lines - this.emptyLines ? 0 : countLineFeeds(cells);
        this.nextRowLine = line + breaks + 1;
        this.emptyLines = context.empty_lines;
        this.parserLines = context.lines;
        this.onRow(cells, line);
        return null;
      },
    });
    // Errors arrive through the write and end callbacks; without a listener they would also crash.
    this.csv.on("error", () => {});
    this.csv.resume();
  }

  get line(): number {
    return this.nextRowLine;
  }

  write(chunk: Buffer): Promise<void> {
    return new Promise((resolve, reject) => {
      this.csv.write(chunk, (error) => (error ? reject(this.fatal(error)) : resolve()));
    });
  }

  async end(): Promise<void> {
    this.csv.end();
    try {
      await finished(this.csv, { readable: false });
    } catch (error) {
      throw this.fatal(error as Error);
    }
  }

  /** A row starts where the previous one ended, after the empty lines csv-parse skipped since. */
  private rowStart(emptyLines: number): number {
    return this.nextRowLine + (emptyLines - this.emptyLines);
  }

  private onRow(cells: string[], line: number): void {
    if (this.columns === undefined) {
      this.columns = readHeader(cells, line);
      return;
    }
    if (cells.length !== this.columns.length) {
      this.sink.error(line, `expected ${this.columns.length} fields as in the header, found ${cells.length}`);
      return;
    }
    let candidate: Record<string, unknown>;
    try {
      candidate = candidateFromRow(this.columns, cells);
    } catch (error) {
      if (!(error instanceof CellError)) throw error;
      this.sink.error(line, error.message, error.field);
      return;
    }
    this.sink.record(candidate, line);
  }

  private fatal(error: Error): Error {
    if (!(error instanceof CsvError)) return error;
    const emptyLines = error.empty_lines;
    const line = typeof emptyLines === "number" ? this.rowStart(emptyLines) : this.nextRowLine;
    switch (error.code) {
      case "CSV_QUOTE_NOT_CLOSED":
        return new UploadParseError(line, `a quoted field in the row starting on line ${line} is never closed`);
      case "CSV_INVALID_CLOSING_QUOTE":
        return new UploadParseError(
          line,
          `a closing quote in the row starting on line ${line} is followed by more text; inside a quoted field, write a quote twice ("")`,
        );
      case "INVALID_OPENING_QUOTE":
        return new UploadParseError(
          line,
          `a quote inside an unquoted field in the row starting on line ${line}; quote the whole field and write the inner quote twice ("")`,
        );
      case "CSV_MAX_RECORD_SIZE":
        return new UploadParseError(
          line,
          `the row starting on line ${line} is larger than the maximum record size of ${this.maxRecordBytes} bytes ` +
            "(an unclosed quote makes the rest of the file one row)",
        );
      default:
        return new UploadParseError(line, error.message);
    }
  }
}

function countLineFeeds(cells: string[]): number {
  let count = 0;
  for (const cell of cells) {
    for (let at = cell.indexOf("\n"); at >= 0; at = cell.indexOf("\n", at + 1)) count++;
  }
  return count;
}

function readHeader(cells: string[], line: number): Column[] {
  const seen = new Set<string>();
  const columns = cells.map((cell, index): Column => {
    const name = cell.trim();
    if (name === "") throw new UploadParseError(line, `column ${index + 1} of the CSV header has no name`);
    if (name === "__proto__") throw new UploadParseError(line, "__proto__ cannot be a column name");
    const lower = name.toLowerCase();
    const column: Column = RECORD_COLUMNS.has(lower)
      ? { kind: lower as Exclude<Column["kind"], "data"> }
      : { kind: "data", key: name };
    const identity = column.kind === "data" ? `data:${name}` : lower;
    if (seen.has(identity)) throw new UploadParseError(line, `the CSV header names the column ${name} twice`);
    seen.add(identity);
    return column;
  });
  if (!columns.some((column) => column.kind === "title")) {
    const found = cells
      .slice(0, 10)
      .map((cell) => cell.trim())
      .join(", ");
    const otherSeparator = cells.length === 1 && /[;\t|]/.test(cells[0]!);
    throw new UploadParseError(
      line,
      `the CSV header has no title column (found: ${found}${cells.length > 10 ? ", …" : ""}); ` +
        "the first row of a CSV upload names its columns and one of them must be title" +
        (otherSeparator ? "; columns must be separated by commas" : ""),
    );
  }
  return columns;
}

function candidateFromRow(columns: Column[], cells: string[]): Record<string, unknown> {
  const data: Record<string, unknown> = {};
  const candidate: Record<string, unknown> = { data };
  for (let i = 0; i < columns.length; i++) {
    const column = columns[i]!;
    const text = cells[i]!;
    switch (column.kind) {
      case "data": {
        const value = typedCell(text);
        if (value !== undefined) data[column.key] = value;
        break;
      }
      case "weight":
        candidate.weight = weightCell(text);
        break;
      case "images":
        candidate.images = imagesCell(text);
        break;
      default:
        candidate[column.kind] = text;
    }
  }
  return candidate;
}
