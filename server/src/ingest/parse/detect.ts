// Format detection by content alone (docs/uploads.md, Formats and detection): a file's name says nothing reliable about it.
// gzip by its magic bytes, then the first character that is not blank space: `[` is a JSON
// array, `{` is JSON Lines, anything else is CSV with a header row.
import { pipeline, Readable } from "node:stream";
import { createGunzip } from "node:zlib";
import { UploadParseError } from "./errors.ts";
import { PushbackReader } from "./source.ts";

export type UploadFormat = "csv" | "jsonl" | "json";

export interface DetectedInput {
  format: UploadFormat;
  gzip: boolean;
  /** The line on which `chunks` starts: leading blank lines are consumed here. */
  firstLine: number;
  /** The text from its first non-blank byte on: decompressed, without a byte order mark. */
  chunks: AsyncGenerator<Buffer, void, undefined>;
}

const LF = 0x0a;
const isBlank = (byte: number) => byte === 0x20 || byte === LF || byte === 0x0d || byte === 0x09;

export async function detectInput(bytes: AsyncIterable<Buffer>): Promise<DetectedInput> {
  let input = new PushbackReader(bytes);
  try {
    const magic = await input.peek(2);
    const gzip = magic[0] === 0x1f && magic[1] === 0x8b;
    if (gzip) input = new PushbackReader(gunzip(input.rest()));

    rejectUnsupported(await input.peek(4));
    await skipByteOrderMark(input);
    let firstLine = 1;
    for (;;) {
      const chunk = await input.next();
      if (chunk === undefined) {
        throw new UploadParseError(1, gzip ? "the file is empty once decompressed" : "the file is empty");
      }
      let start = 0;
      while (start < chunk.length && isBlank(chunk[start]!)) {
        if (chunk[start] === LF) firstLine++;
        start++;
      }
      if (start < chunk.length) {
        input.pushBack(chunk.subarray(start));
        const first = chunk[start];
        const format = first === 0x5b ? "json" : first === 0x7b ? "jsonl" : "csv";
        return { format, gzip, firstLine, chunks: input.rest() };
      }
    }
  } catch (error) {
    // biome-ignore lint/plugin: the read error rethrown below is the one to report; closing is cleanup.
    await input.close().catch(() => {});
    throw isZlibError(error) ? new UploadParseError(1, `the gzip data is corrupt: ${error.message}`) : error;
  }
}

/** Decompresses as a stream; a pipeline so that closing either end closes the other. */
function gunzip(chunks: AsyncIterable<Buffer>): AsyncIterable<Buffer> {
  // Failures surface through the returned stream's iteration; the callback only completes the pipeline.
  return pipeline(Readable.from(chunks), createGunzip(), () => {});
}

export function isZlibError(error: unknown): error is Error & { code: string } {
  if (!(error instanceof Error) || !("code" in error)) return false;
  return typeof error.code === "string" && error.code.startsWith("Z_");
}

function rejectUnsupported(head: Buffer): void {
  if ((head[0] === 0xff && head[1] === 0xfe) || (head[0] === 0xfe && head[1] === 0xff)) {
    throw new UploadParseError(1, "the file is UTF-16 text; save it as UTF-8 and upload it again");
  }
  if (head[0] === 0x50 && head[1] === 0x4b && head[2] === 0x03 && head[3] === 0x04) {
    throw new UploadParseError(
      1,
      "the file is a ZIP archive (a spreadsheet workbook?); upload CSV, JSON Lines or a JSON array, gzip-compressed or not",
    );
  }
}

async function skipByteOrderMark(input: PushbackReader): Promise<void> {
  const head = await input.peek(3);
  if (head[0] === 0xef && head[1] === 0xbb && head[2] === 0xbf) {
    await input.next();
    input.pushBack(head.subarray(3));
  }
}
