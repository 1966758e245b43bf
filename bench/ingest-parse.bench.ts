// Throughput of the bulk-upload parsers alone (server/src/ingest/parse): no engine, no store.
// Writes a JSON Lines, a CSV and a JSON array file of small records (about SIZE_MB each, default
// 200) to a temporary folder, then parses each in a child process of its own so that the peak
// RSS printed belongs to that parse alone.
//
//   node_modules/.bin/node bench/ingest-parse.bench.ts            (from the repository root)
//   SIZE_MB=50 RUNS=3 node_modules/.bin/node bench/ingest-parse.bench.ts jsonl csv
import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { once } from "node:events";
import { openUpload } from "../server/src/ingest/parse/index.ts";

type Format = "jsonl" | "csv" | "json";
const FORMATS: Format[] = ["jsonl", "csv", "json"];
const COLORS = ["red", "green", "blue", "black", "white", "crème"];

interface RunResult {
  records: number;
  errors: number;
  seconds: number;
  peakRssMb: number;
}

async function main(): Promise<void> {
  const sizeMb = Number(process.env.SIZE_MB ?? 200);
  const runs = Number(process.env.RUNS ?? 1);
  const chosen = process.argv.slice(2).filter((arg): arg is Format => FORMATS.includes(arg as Format));
  const formats = chosen.length > 0 ? chosen : FORMATS;
  const dir = await mkdtemp(join(tmpdir(), "sift-ingest-parse-bench-"));
  try {
    console.log(`node ${process.version}, ${sizeMb} MB per file, ${runs} run(s) each, files in ${dir}`);
    console.log("format  records     MB   seconds  records/s   MB/s  peak RSS MB");
    for (const format of formats) {
      const path = join(dir, `records.${format}`);
      await writeDataset(path, format, sizeMb * 1024 * 1024);
      const megabytes = (await stat(path)).size / 1024 / 1024;
      for (let run = 0; run < runs; run++) {
        // A child per run: its peak RSS is the parse's, not the generator's or an earlier run's.
        const output = execFileSync(process.execPath, [import.meta.filename, "--run", path], {
          encoding: "utf8",
          maxBuffer: 1024 * 1024,
        });
        const result = JSON.parse(output) as RunResult;
        if (result.errors > 0) throw new Error(`${format}: ${result.errors} unexpected errors`);
        console.log(
          [
            format.padEnd(6),
            String(result.records).padStart(8),
            megabytes.toFixed(0).padStart(6),
            result.seconds.toFixed(2).padStart(9),
            Math.round(result.records / result.seconds)
              .toLocaleString("en-US")
              .padStart(10),
            (megabytes / result.seconds).toFixed(1).padStart(6),
            result.peakRssMb.toFixed(0).padStart(12),
          ].join(" "),
        );
      }
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function parseFile(path: string): Promise<RunResult> {
  let records = 0;
  let errors = 0;
  const started = performance.now();
  const upload = await openUpload(createReadStream(path), { generateId: randomUUID });
  for await (const batch of upload.batches) {
    records += batch.records.length;
    errors += batch.errors.length;
  }
  const seconds = (performance.now() - started) / 1000;
  return { records, errors, seconds, peakRssMb: process.resourceUsage().maxRSS / 1024 };
}

/** Small records like a product catalogue's; about a third without an id, so ids get generated. */
function sampleRecord(i: number) {
  return {
    id: i % 3 === 0 ? undefined : `sku-${i}`,
    title: `Product ${i} ${COLORS[i % COLORS.length]} widget`,
    weight: (i % 100) + 1,
    data: { price: (i % 10_000) / 100, inStock: i % 2 === 0, color: COLORS[i % COLORS.length]! },
  };
}

function line(format: Format, i: number): string {
  const record = sampleRecord(i);
  switch (format) {
    case "jsonl":
      return `${JSON.stringify(record)}\n`;
    case "json":
      return (i === 0 ? "[\n" : ",\n") + JSON.stringify(record);
    case "csv":
      return `${record.id ?? ""},${record.title},${record.weight},${record.data.price},${record.data.inStock},${record.data.color}\n`;
  }
}

async function writeDataset(path: string, format: Format, targetBytes: number): Promise<void> {
  const out = createWriteStream(path);
  let written = 0;
  let pending = format === "csv" ? "id,title,weight,price,inStock,color\n" : "";
  for (let i = 0; written < targetBytes; i++) {
    pending += line(format, i);
    if (pending.length >= 1 << 20) {
      written += pending.length;
      if (!out.write(pending)) await once(out, "drain");
      pending = "";
    }
  }
  out.end(pending + (format === "json" ? "\n]\n" : ""));
  await once(out, "finish");
}

if (process.argv[2] === "--run") {
  const result = await parseFile(process.argv[3]!);
  process.stdout.write(JSON.stringify(result));
} else {
  await main();
}
