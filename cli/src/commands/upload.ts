// `sift upload FILE --index NAME`: uploads a CSV / JSON Lines / JSON array file (gzip too) and
// follows the ingest to the end.
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { SiftIngestFailedError, type IngestStatus, type SiftClient } from "@sift/sdk";
import { progressPrinter, UsageError } from "../output.ts";

export const UPLOAD_HELP = `usage: sift upload FILE --index NAME [options]

Uploads FILE (CSV with a header row, JSON Lines or a JSON array; gzip is fine) as a new version of
the index, then follows its ingest until it ends.

  --index NAME       the index to upload to (required)
  --skip-invalid     ingest the valid records and report the invalid ones, instead of failing
  --no-activate      keep the new version inactive (activate it later)
  --no-wait          return once the file is uploaded; see \`sift status\` for the ingest`;

export interface UploadArgs {
  file: string | undefined;
  index: string | undefined;
  skipInvalid: boolean;
  activate: boolean;
  wait: boolean;
}

export async function upload(sift: SiftClient, args: UploadArgs, out: NodeJS.WriteStream, err: NodeJS.WriteStream) {
  if (!args.file || !args.index) throw new UsageError(UPLOAD_HELP);
  const size = await stat(args.file).then(
    (s) => s.size,
    () => {
      throw new UsageError(`cannot read ${args.file}`);
    },
  );
  const progress = progressPrinter(err);
  const started = Date.now();
  const { indexVersion } = await sift.uploadFile(args.index, createReadStream(args.file, { highWaterMark: 1 << 20 }), {
    size,
    activate: args.activate,
    skipInvalid: args.skipInvalid,
    onProgress: (sent, total) => progress.line("uploading", sent, total),
  });
  progress.end();
  if (!args.wait) {
    out.write(
      `${args.index} version ${indexVersion}: uploaded, ingest queued (sift status ${args.index} ${indexVersion})\n`,
    );
    return;
  }
  try {
    const status = await sift.waitForIngest(args.index, indexVersion, {
      onStatus: (s) =>
        progress.line("ingesting", s.bytesRead, s.bytesReceived, `  ${s.recordsIngested.toLocaleString("en")} records`),
    });
    progress.end();
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    out.write(`${args.index} version ${indexVersion}: ${summary(status)} in ${seconds} s\n`);
  } catch (error) {
    progress.end();
    if (error instanceof SiftIngestFailedError) error.message = [error.message, ...errorLines(error.status)].join("\n");
    throw error;
  }
}

/** One line on an ingest: counts, format, whether it is active, what was skipped. */
export function summary(status: IngestStatus): string {
  const notes = [
    status.recordsSuppressed ? `${status.recordsSuppressed} suppressed (deleted earlier)` : "",
    status.recordsInvalid
      ? `${status.recordsInvalid} invalid, skipped (first: line ${status.errors[0]?.line}: ${status.errors[0]?.message})`
      : "",
  ].filter(Boolean);
  return (
    `${status.recordsIngested.toLocaleString("en")} records ingested${status.format ? ` from ${status.format}` : ""}` +
    `${status.activate && status.state === "succeeded" ? ", now active" : ""}${notes.length ? `; ${notes.join("; ")}` : ""}`
  );
}

/** The first ten line-numbered errors of an ingest. */
export function errorLines(status: IngestStatus): string[] {
  const lines = status.errors
    .slice(0, 10)
    .map((e) => `  line ${e.line}${e.field ? ` (${e.field})` : ""}: ${e.message}`);
  if (status.errorCount > 10) lines.push(`  … ${status.errorCount - 10} more`);
  return lines;
}
