// Shared by the parse*.test.ts files: feeding bytes in chosen chunk sizes and collecting output.
import { openUpload, UploadParseError, type ParseOptions, type RecordError } from "../../src/ingest/parse/index.ts";
import type { SearchRecord } from "../../src/ports/engine.ts";

/** Chunk sizes: a fixed size, or a seeded pseudo-random size between 1 and `max`. */
export type Chunking = number | { random: number; seed: number };

export async function* chunked(data: string | Uint8Array, chunking: Chunking = 64 * 1024): AsyncGenerator<Uint8Array> {
  const bytes = typeof data === "string" ? Buffer.from(data) : data;
  let seed = typeof chunking === "number" ? 0 : chunking.seed;
  const nextSize = () => {
    if (typeof chunking === "number") return chunking;
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return 1 + (seed % chunking.random);
  };
  for (let start = 0; start < bytes.length; ) {
    const end = Math.min(bytes.length, start + nextSize());
    // A fresh copy per chunk, as a network source would hand over.
    yield Uint8Array.prototype.slice.call(bytes, start, end);
    start = end;
  }
}

export interface Parsed {
  format: string;
  gzip: boolean;
  records: SearchRecord[];
  errors: RecordError[];
  batches: number;
  /** The fatal error that ended parsing, if any. */
  failure?: UploadParseError;
}

let counter = 0;
export const sequentialIds = () => `gen-${++counter}`;

export async function parse(
  data: string | Uint8Array | AsyncIterable<Uint8Array>,
  options: Partial<ParseOptions> & { chunking?: Chunking } = {},
): Promise<Parsed> {
  const source = typeof data === "string" || data instanceof Uint8Array ? chunked(data, options.chunking) : data;
  const upload = await openUpload(source, { generateId: sequentialIds, ...options });
  const parsed: Parsed = { format: upload.format, gzip: upload.gzip, records: [], errors: [], batches: 0 };
  try {
    for await (const batch of upload.batches) {
      parsed.batches++;
      parsed.records.push(...batch.records);
      parsed.errors.push(...batch.errors);
    }
  } catch (error) {
    if (!(error instanceof UploadParseError)) throw error;
    parsed.failure = error;
  }
  return parsed;
}

/** The error openUpload rejects with. */
export async function openFailure(data: string | Uint8Array): Promise<UploadParseError> {
  try {
    await openUpload(chunked(data), { generateId: sequentialIds });
  } catch (error) {
    if (error instanceof UploadParseError) return error;
    throw error;
  }
  throw new Error("openUpload accepted the input");
}

export const titles = (parsed: Parsed) => parsed.records.map((record) => record.title);
