#!/usr/bin/env node
// `sift upload FILE --index NAME`: uploads a CSV / JSON Lines / JSON array file (gzip too) and
// follows the ingest to the end, with a progress bar on a terminal and plain lines elsewhere.
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { parseArgs } from "node:util";
import { createClient } from "./client.ts";
import { SiftError } from "./errors.ts";
import { SiftIngestFailedError } from "./uploads.ts";

const USAGE = `usage: sift upload FILE --index NAME [--base-url URL] [--api-key KEY] [--skip-invalid] [--no-activate] [--no-wait]

  --base-url, SIFT_BASE_URL   Sift's address (default http://127.0.0.1:7700)
  --api-key,  SIFT_API_KEY    a secret key (sk-sift-…) of the index's tenant`;

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    index: { type: "string" },
    "base-url": { type: "string", default: process.env.SIFT_BASE_URL ?? "http://127.0.0.1:7700" },
    "api-key": { type: "string", default: process.env.SIFT_API_KEY },
    "skip-invalid": { type: "boolean", default: false },
    "no-activate": { type: "boolean", default: false },
    "no-wait": { type: "boolean", default: false },
    help: { type: "boolean", short: "h" },
  },
});

const fail = (message: string, code = 1): never => {
  process.stderr.write(`sift: ${message}\n`);
  process.exit(code);
};

if (values.help) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
const [command, file] = positionals;
if (command !== "upload" || !file || !values.index) fail(USAGE, 2);
if (!values["api-key"]) fail("an API key is required: --api-key or SIFT_API_KEY", 2);

const size = await stat(file!).then(
  (s) => s.size,
  () => fail(`cannot read ${file}`, 2),
);
const tty = process.stderr.isTTY === true;
const mb = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MB`;
let lastLine = 0;
function progress(label: string, done: number, total: number | undefined, extra = ""): void {
  const now = Date.now();
  if (!tty && now - lastLine < 2_000 && done !== total) return;
  lastLine = now;
  const ratio = total ? Math.min(1, done / total) : 0;
  const bar = total
    ? `[${"#".repeat(Math.round(ratio * 30)).padEnd(30, ".")}] ${(ratio * 100).toFixed(0).padStart(3)}% `
    : "";
  const line = `${label.padEnd(10)} ${bar}${mb(done)}${total ? ` / ${mb(total)}` : ""}${extra}`;
  process.stderr.write(tty ? `\r${line}\x1b[K` : `${line}\n`);
}

const sift = createClient({ baseUrl: values["base-url"]!, apiKey: values["api-key"] });
try {
  const started = Date.now();
  const { indexVersion } = await sift.uploadFile(values.index!, createReadStream(file!, { highWaterMark: 1 << 20 }), {
    size,
    activate: !values["no-activate"],
    skipInvalid: values["skip-invalid"],
    onProgress: (sent, total) => progress("uploading", sent, total),
  });
  if (tty) process.stderr.write("\n");
  if (values["no-wait"]) {
    process.stdout.write(`${values.index} version ${indexVersion}: uploaded, ingest queued\n`);
    process.exit(0);
  }
  const status = await sift.waitForIngest(values.index!, indexVersion, {
    onStatus: (s) =>
      progress("ingesting", s.bytesRead, s.bytesReceived, `  ${s.recordsIngested.toLocaleString("en")} records`),
  });
  if (tty) process.stderr.write("\n");
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  const notes = [
    status.recordsSuppressed ? `${status.recordsSuppressed} suppressed (deleted earlier)` : "",
    status.recordsInvalid
      ? `${status.recordsInvalid} invalid, skipped (first: line ${status.errors[0]?.line}: ${status.errors[0]?.message})`
      : "",
  ].filter(Boolean);
  process.stdout.write(
    `${values.index} version ${indexVersion}: ${status.recordsIngested.toLocaleString("en")} records ingested from ${status.format} in ${seconds} s` +
      `${status.activate ? ", now active" : ""}${notes.length ? `; ${notes.join("; ")}` : ""}\n`,
  );
} catch (error) {
  if (tty) process.stderr.write("\n");
  if (error instanceof SiftIngestFailedError) {
    const lines = error.status.errors
      .slice(0, 10)
      .map((e) => `  line ${e.line}${e.field ? ` (${e.field})` : ""}: ${e.message}`);
    fail(
      [error.message, ...lines, error.status.errorCount > 10 ? `  … ${error.status.errorCount - 10} more` : ""]
        .filter(Boolean)
        .join("\n"),
    );
  }
  if (error instanceof SiftError) fail(`${error.status}: ${error.message}`);
  fail((error as Error).message);
}
