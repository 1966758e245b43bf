// The contract between a format's parser and the batch collector. A parser turns bytes into
// candidate records (plain objects, not yet validated) tagged with the line they start on, so
// that validation and batching live in one place for every format.

export interface RecordSink {
  /** A candidate record starting on `line`; the sink validates it. */
  record(candidate: unknown, line: number): void;
  /** A record that could not be read at all (malformed line, wrong column count, too large). */
  error(line: number, message: string, field?: string): void;
}

export interface FormatParser {
  /** Consumes the next chunk; throws UploadParseError when the input cannot be read further. */
  write(chunk: Buffer): void | Promise<void>;
  /** Flushes the last record; throws UploadParseError on a truncated file. */
  end(): void | Promise<void>;
  /** The line reached so far, for errors raised outside the parser (a corrupt gzip stream). */
  readonly line: number;
}

export interface FormatOptions {
  /** Line number of the first byte given to the parser (leading blank lines are consumed by detection). */
  firstLine: number;
  maxRecordBytes: number;
}
