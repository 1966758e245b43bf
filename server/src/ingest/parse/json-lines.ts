// JSON Lines: a byte-level line splitter and JSON.parse per line. JSON.parse is native and
// several times faster than any streaming tokenizer, and a line is a natural unit to skip when
// it is malformed, so one bad line costs one error instead of the rest of the file.
import { UploadParseError } from "./errors.ts";
import type { FormatOptions, FormatParser, RecordSink } from "./format-parser.ts";
import { foldUnknownFields } from "./json-record.ts";

const LF = 0x0a;

export class JsonLinesParser implements FormatParser {
  private readonly sink: RecordSink;
  private readonly maxRecordBytes: number;
  private nextLine: number;
  /** Bytes of the current line that arrived in earlier chunks. */
  private partial: Buffer[] = [];
  private partialBytes = 0;
  /** The current line outgrew maxRecordBytes: its bytes are dropped until its end. */
  private oversized = false;
  private sawContent = false;

  constructor(sink: RecordSink, options: FormatOptions) {
    this.sink = sink;
    this.maxRecordBytes = options.maxRecordBytes;
    this.nextLine = options.firstLine;
  }

  get line(): number {
    return this.nextLine;
  }

  write(chunk: Buffer): void {
    let start = 0;
    for (let end = chunk.indexOf(LF); end >= 0; end = chunk.indexOf(LF, start)) {
      this.finishLine(chunk, start, end);
      start = end + 1;
    }
    if (start < chunk.length) this.keep(chunk.subarray(start));
  }

  end(): void {
    if (this.oversized || this.partialBytes > 0) this.finishLine(Buffer.alloc(0), 0, 0);
  }

  private keep(tail: Buffer): void {
    if (this.oversized) return;
    this.partialBytes += tail.length;
    if (this.partialBytes > this.maxRecordBytes) {
      this.oversized = true;
      this.partial = [];
    } else {
      // A copy: the source may reuse its buffer for the next chunk.
      this.partial.push(Buffer.from(tail));
    }
  }

  private finishLine(chunk: Buffer, start: number, end: number): void {
    const line = this.nextLine++;
    const bytes = this.partialBytes + (end - start);
    const text =
      this.oversized || bytes > this.maxRecordBytes
        ? undefined
        : this.partial.length === 0
          ? chunk.toString("utf8", start, end)
          : Buffer.concat([...this.partial, chunk.subarray(start, end)]).toString("utf8");
    this.partial = [];
    this.partialBytes = 0;
    this.oversized = false;
    if (text === undefined) {
      this.sawContent = true;
      this.sink.error(line, `the line is longer than the maximum record size of ${this.maxRecordBytes} bytes`);
    } else {
      this.parseLine(text, line);
    }
  }

  private parseLine(text: string, line: number): void {
    if (text.length === 0 || (text.charCodeAt(0) <= 0x20 && text.trim() === "")) return;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      if (!this.sawContent && opensMultiLineDocument(text)) {
        throw new UploadParseError(
          line,
          `line ${line} starts a JSON object that continues on the next lines: JSON Lines needs one complete ` +
            "object per line. Upload one object per line, or the records as a JSON array.",
        );
      }
      this.sawContent = true;
      this.sink.error(line, `invalid JSON: ${describeSyntaxError(error)}`);
      return;
    }
    this.sawContent = true;
    const folded = foldUnknownFields(value);
    if (folded.ok) this.sink.record(folded.candidate, line);
    else this.sink.error(line, folded.message, folded.field);
  }
}

/** A first line such as `{` or `{"title": "x",` is the start of a pretty-printed document. */
function opensMultiLineDocument(text: string): boolean {
  const last = text.trimEnd().at(-1);
  return last === "{" || last === "[" || last === "," || last === ":";
}

/** V8 counts lines and positions within the string it was given, which is one line of the file. */
function describeSyntaxError(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.replace(/ in JSON at position \d+ \(line \d+ column (\d+)\)$/, " at column $1");
}
