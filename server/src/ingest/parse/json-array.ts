// A JSON array streamed through stream-json's tokenizer, one element assembled at a time, so a
// multi-gigabyte array needs memory for one record only. The tokenizer reports no positions, so
// text is fed one line at a time: a token that starts an element is then known to start on the
// line being fed (objects and arrays emit their start token as soon as the bracket is read).
import { StringDecoder } from "node:string_decoder";
import Assembler from "stream-json/assembler.js";
import { jsonParser, type Token } from "stream-json/parser.js";
import { UploadParseError } from "./errors.ts";
import type { FormatOptions, FormatParser, RecordSink } from "./format-parser.ts";
import { foldUnknownFields } from "./json-record.ts";

export class JsonArrayParser implements FormatParser {
  private readonly sink: RecordSink;
  private readonly maxRecordBytes: number;
  private readonly tokenize = jsonParser({ packValues: true, streamValues: false });
  private readonly assembler = new Assembler();
  /** Keeps a UTF-8 character split across chunks whole. */
  private readonly decoder = new StringDecoder("utf8");
  private currentLine: number;
  /** 0 before `[` and after `]`, 1 between elements, more inside one. */
  private depth = 0;
  /** Line where the element being assembled starts; 0 between elements. */
  private elementLine = 0;
  /** Characters fed since the element started, counted per fed segment (so over by at most one). */
  private elementChars = 0;

  constructor(sink: RecordSink, options: FormatOptions) {
    this.sink = sink;
    this.maxRecordBytes = options.maxRecordBytes;
    this.currentLine = options.firstLine;
  }

  get line(): number {
    return this.currentLine;
  }

  write(chunk: Buffer): void {
    this.feedText(this.decoder.write(chunk));
  }

  end(): void {
    this.feedText(this.decoder.end());
    if (this.depth > 0) {
      throw new UploadParseError(
        this.elementLine || this.currentLine,
        "the file ends inside the JSON array: it is truncated or its closing ] is missing",
      );
    }
  }

  private feedText(text: string): void {
    let start = 0;
    while (start < text.length) {
      const newline = text.indexOf("\n", start);
      const end = newline < 0 ? text.length : newline + 1;
      this.feedSegment(text.slice(start, end));
      if (newline >= 0) this.currentLine++;
      start = end;
    }
  }

  private feedSegment(segment: string): void {
    let tokens: Token[];
    try {
      const out = this.tokenize(segment);
      tokens = typeof out === "symbol" ? [] : out.values;
    } catch (error) {
      throw new UploadParseError(this.currentLine, `invalid JSON: ${describeTokenizerError(error)}`);
    }
    for (const token of tokens) this.take(token);
    if (this.elementLine > 0) {
      this.elementChars += segment.length;
      if (this.elementChars > this.maxRecordBytes) {
        throw new UploadParseError(
          this.elementLine,
          `the record starting on line ${this.elementLine} is larger than the maximum record size of ${this.maxRecordBytes} bytes`,
        );
      }
    }
  }

  private take(token: Token): void {
    if (this.depth === 0) {
      // Detection saw `[` first, and the tokenizer rejects anything after the closing `]`.
      this.depth = 1;
      return;
    }
    if (this.depth === 1) {
      if (token.name === "endArray") {
        this.depth = 0;
        return;
      }
      this.elementLine = this.currentLine;
      this.elementChars = 0;
    }
    if (token.name === "startObject" || token.name === "startArray") this.depth++;
    else if (token.name === "endObject" || token.name === "endArray") this.depth--;
    this.assembler.consume(token);
    if (this.depth === 1 && this.assembler.done) {
      const line = this.elementLine;
      this.elementLine = 0;
      const folded = foldUnknownFields(this.assembler.current);
      if (folded.ok) this.sink.record(folded.candidate, line);
      else this.sink.error(line, folded.message, folded.field);
    }
  }
}

function describeTokenizerError(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.replace(/^Parser cannot parse input: /, "").replace(/^Parser has /, "");
}
