/**
 * Streaming parser for bulk uploads (docs/uploads.md, Formats and detection): CSV with a header row, JSON Lines or a JSON
 * array, optionally gzip-compressed, detected from the content. Memory stays flat whatever the
 * file's size: the source is read one chunk at a time, and only when the caller asks for the
 * next batch.
 *
 *   const upload = await openUpload(readable, { generateId: randomUUID });
 *   upload.format; // "csv" | "jsonl" | "json"
 *   upload.gzip;
 *   for await (const { records, errors } of upload.batches) {
 *     await writer.add(records); // valid SearchRecords (checkRecord), in file order
 *     report(errors);            // { line, field?, message }: skipped records, by starting line
 *   }
 *
 * - openUpload rejects with UploadParseError (line 1) when the input is empty or unsupported.
 * - Iterating `batches` throws UploadParseError when the file cannot be read further (CSV header
 *   or quoting error, malformed JSON array, truncated or corrupt gzip, ...), after every record
 *   before that point was delivered. An aborted `signal` throws its reason; a failing source
 *   throws its own error.
 * - Leaving the loop early (`break`) closes the source; a caller that never iterates `batches`
 *   closes it with `batches.return()`.
 * - Ids repeated within a file are all delivered, in file order: the bulk writer keeps the last.
 */
import { BatchCollector, type ParsedBatch } from "./batches.ts";
import { CsvParser } from "./csv.ts";
import { detectInput, isZlibError, type DetectedInput, type UploadFormat } from "./detect.ts";
import { UploadLimitError, UploadParseError } from "./errors.ts";
import type { FormatOptions, FormatParser, RecordSink } from "./format-parser.ts";
import { JsonArrayParser } from "./json-array.ts";
import { JsonLinesParser } from "./json-lines.ts";
import { readSource } from "./source.ts";

export type { ParsedBatch } from "./batches.ts";
export type { UploadFormat } from "./detect.ts";
export { UploadLimitError, UploadParseError, type RecordError } from "./errors.ts";

export const DEFAULT_BATCH_SIZE = 1000;
/** Parsed at a time before other requests get a turn (see parseBatches). */
const SLICE_BYTES = 64 * 1024;
export const DEFAULT_MAX_RECORD_BYTES = 1024 * 1024;

export interface ParseOptions {
  /** Id for a record that has none. */
  generateId: () => string;
  /** Records plus errors per batch (default 1000). */
  batchSize?: number;
  /** A larger record is an error (default 1 MiB); it bounds the memory one record can take. */
  maxRecordBytes?: number;
  /** Bytes read from the source so far: compressed bytes for a gzip upload. */
  onProgress?: (bytesRead: number) => void;
  /** Checked between chunks. */
  signal?: AbortSignal;
  /** Bytes the file may expand to once decompressed (a gzip bomb stops here). */
  maxExpandedBytes?: number;
}

export interface Upload {
  format: UploadFormat;
  gzip: boolean;
  batches: AsyncGenerator<ParsedBatch, void, undefined>;
}

const PARSERS: Record<UploadFormat, new (sink: RecordSink, options: FormatOptions) => FormatParser> = {
  csv: CsvParser,
  jsonl: JsonLinesParser,
  json: JsonArrayParser,
};

/** `source`: a Node Readable, a web ReadableStream or any async iterable of bytes. */
export async function openUpload(source: AsyncIterable<Uint8Array>, options: ParseOptions): Promise<Upload> {
  const batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
  const maxRecordBytes = options.maxRecordBytes ?? DEFAULT_MAX_RECORD_BYTES;
  if (!(batchSize >= 1) || !(maxRecordBytes >= 1))
    throw new RangeError("batchSize and maxRecordBytes must be at least 1");

  options.signal?.throwIfAborted();
  const input = await detectInput(readSource(source, options.onProgress));
  const collector = new BatchCollector(options.generateId, batchSize);
  const parser = new PARSERS[input.format](collector, { firstLine: input.firstLine, maxRecordBytes });
  return {
    format: input.format,
    gzip: input.gzip,
    batches: parseBatches(input, parser, collector, options.signal, options.maxExpandedBytes ?? Infinity),
  };
}

async function* parseBatches(
  input: DetectedInput,
  parser: FormatParser,
  collector: BatchCollector,
  signal: AbortSignal | undefined,
  maxExpandedBytes: number,
): AsyncGenerator<ParsedBatch, void, undefined> {
  let failure: UploadParseError;
  let expanded = 0;
  try {
    for await (const chunk of input.chunks) {
      // Checked per decompressed chunk: gunzip may have read the whole source ahead.
      signal?.throwIfAborted();
      expanded += chunk.byteLength;
      if (expanded > maxExpandedBytes) {
        throw new UploadLimitError(
          `the file expands to more than ${maxExpandedBytes} bytes once decompressed, the upload limit (SIFT_MAX_UPLOAD_BYTES)`,
        );
      }
      // A read chunk (1 MiB) held about 9,000 records, parsed in one go: the event loop answered
      // no one for 85 ms at a time. Slices of 64 KiB, each after a turn of the loop (a buffered
      // stream hands over its next chunk without one), keep each block to a few milliseconds.
      for (let at = 0; at < chunk.byteLength; at += SLICE_BYTES) {
        await new Promise((resolve) => setImmediate(resolve));
        await parser.write(chunk.subarray(at, at + SLICE_BYTES));
        yield* collector.takeFull();
      }
    }
    await parser.end();
    yield* collector.takeAll();
    return;
  } catch (error) {
    if (error instanceof UploadParseError) failure = error;
    else if (isZlibError(error))
      failure = new UploadParseError(parser.line, `the gzip data is corrupt or truncated: ${error.message}`);
    else throw error;
  }
  yield* collector.takeAll();
  throw failure;
}
