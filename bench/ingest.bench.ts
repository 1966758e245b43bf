// Bulk ingest end to end: generated JSON Lines and CSV files of 1 GB and more, uploaded to a real
// `sift` process with the SDK, timed from `complete` until the version answers searches, with the
// server's resident memory sampled throughout. Also the 135k cities: complete → queryable.
// Writes the ingest section of RESULTS.md.
//
//   npm run bench:ingest                       1 GB JSONL, 1 GB CSV, 2 GB JSONL (memory), cities
//   npm run bench:ingest -- --gb=1 --files=jsonl
//   npm run bench:ingest -- --render-only        the section again from the last run's rows
import { createWriteStream, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createReadStream } from "node:fs";
import os from "node:os";
import path from "node:path";
import { once } from "node:events";
import { createClient, putToUploadUrl } from "@sift/sdk";
import { cityRecords } from "./datasets.ts";
import { processMb, resetHighWaterMark } from "./measure.ts";
import { Http } from "../test/support/http.ts";
import { siftProcess, type SiftProcess } from "../test/support/process.ts";
import { createKey, signUp } from "../test/support/world.ts";

const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const dataDir = path.join(import.meta.dirname, "data");
mkdirSync(dataDir, { recursive: true });

const WORDS =
  "amber birch cedar delta ember fjord grove harbor island jasper kestrel lumen meadow nectar orchid prairie quartz river summit tundra umber violet willow xenon yarrow zephyr".split(
    " ",
  );
const CATEGORIES = ["books", "garden", "kitchen", "music", "outdoor", "toys"];

/** A small record (about 110 bytes as JSON): title of three words, weight, two data fields. */
function record(i: number) {
  const w = (k: number) => WORDS[((i * 2654435761 + k * 40503) % WORDS.length) >>> 0]!;
  return {
    id: `r${i}`,
    title: `${w(1)} ${w(2)} ${w(3)} ${i % 9973}`,
    weight: (i % 100_000) + 1,
    category: CATEGORIES[i % 6]!,
    price: (i % 5000) / 100,
  };
}

async function generate(
  format: "jsonl" | "csv",
  gigabytes: number,
): Promise<{ file: string; records: number; bytes: number }> {
  const file = path.join(dataDir, `ingest-${gigabytes}gb.${format}`);
  const target = gigabytes * 1024 ** 3;
  const meta = `${file}.records`;
  if (existsSync(file) && existsSync(meta) && statSync(file).size >= target) {
    return { file, records: Number(readFileSync(meta, "utf8")), bytes: statSync(file).size };
  }
  console.log(`generating ${path.basename(file)}…`);
  const out = createWriteStream(file, { highWaterMark: 1 << 22 });
  let bytes = 0;
  let i = 0;
  if (format === "csv") {
    const header = "id,title,weight,category,price\n";
    out.write(header);
    bytes += header.length;
  }
  while (bytes < target) {
    let chunk = "";
    for (let k = 0; k < 10_000; k++, i++) {
      const r = record(i);
      chunk +=
        format === "jsonl"
          ? `{"id":"${r.id}","title":"${r.title}","weight":${r.weight},"data":{"category":"${r.category}","price":${r.price}}}\n`
          : `${r.id},${r.title},${r.weight},${r.category},${r.price}\n`;
    }
    bytes += chunk.length;
    if (!out.write(chunk)) await once(out, "drain");
  }
  out.end();
  await once(out, "finish");
  writeFileSync(meta, String(i));
  return { file, records: i, bytes };
}

const rssMb = processMb;

interface Row {
  label: string;
  bytes: number;
  records: number;
  uploadS: number;
  ingestS: number;
  perSecond: number;
  idleMb: number;
  peakMb: number;
  /** After the ingest, once the build's garbage is gone: mostly the new version's index. */
  settledMb: number;
  /** The slowest /healthz answer while the ingest ran: how long the server could not answer anyone. */
  worstHealthMs: number;
}

async function ingest(label: string, file: string, expected: number): Promise<Row> {
  const server: SiftProcess = await siftProcess({
    SIFT_DEMO: "false",
    SIFT_LOG_LEVEL: "warn",
    DATABASE_URL: "",
    SIFT_MAX_UPLOAD_BYTES: String(64 * 1024 ** 3),
  });
  await server.start();
  try {
    const http = new Http(server.url);
    const key = await createKey(await signUp(http, `bench-${Date.now()}@bench.example`), "adm");
    const sift = createClient({ baseUrl: server.url, apiKey: key, timeoutMs: 600_000 });
    await sift.services.create({ name: "bench" });
    await sift.indexes.create({ name: "items", serviceName: "bench", visibility: "PRIVATE" });
    const pid = server.pid()!;
    await new Promise((r) => setTimeout(r, 1000));
    const idleMb = rssMb(pid, "VmRSS");
    // The high-water mark from here on, not from the server's start-up (whose transient peak,
    // loading PGlite and migrating, is not the ingest's).
    const resetPeak = resetHighWaterMark(pid);

    const bytes = statSync(file).size;
    const uploadStarted = performance.now();
    const { uploadUrl, indexVersion } = await sift.uploads.start("items");

    await putToUploadUrl(uploadUrl, createReadStream(file, { highWaterMark: 1 << 20 }), { size: bytes });
    const uploadS = (performance.now() - uploadStarted) / 1000;

    let peakMb = rssMb(pid, "VmRSS");
    const sampler = setInterval(() => (peakMb = Math.max(peakMb, rssMb(pid, "VmRSS"))), 50);
    let ingesting = true;
    let worstHealthMs = 0;
    const health = (async () => {
      while (ingesting) {
        const asked = performance.now();
        await fetch(`${server.url}/healthz`).then((r) => r.arrayBuffer());
        worstHealthMs = Math.max(worstHealthMs, performance.now() - asked);
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    const completed = performance.now();
    await sift.uploads.complete({ indexName: "items", indexVersion });
    const status = await sift.waitForIngest("items", indexVersion, { intervalMs: 50 });
    const probe = await sift.search({ query: "a", indexName: "items", serviceName: "bench" });
    const ingestS = (performance.now() - completed) / 1000;
    ingesting = false;
    await health;
    clearInterval(sampler);
    // Without the reset the high-water mark may be start-up's: then only the samples count.
    if (resetPeak) peakMb = Math.max(peakMb, rssMb(pid, "VmHWM"));
    if (status.recordsIngested !== expected || !probe.suggestions.length) {
      throw new Error(`${label}: ingested ${status.recordsIngested} of ${expected}`);
    }
    await new Promise((r) => setTimeout(r, 3000));
    const settledMb = rssMb(pid, "VmRSS");
    const row = {
      label,
      bytes,
      records: expected,
      uploadS,
      ingestS,
      perSecond: expected / ingestS,
      idleMb,
      peakMb,
      settledMb,
      worstHealthMs,
    };
    console.log(row);
    return row;
  } catch (error) {
    const exited = await Promise.race([
      server.exited(),
      new Promise((r) => setTimeout(() => r("still running"), 1000)),
    ]);
    throw new Error(
      `${label}: ${(error as Error).message}\n--- server (${exited}) output ---\n${server.output().slice(-4000)}`,
    );
  } finally {
    await server.destroy();
  }
}

/** The cities as JSON Lines, from the same records the search benchmark uses. */
async function citiesFile(): Promise<{ file: string; records: number }> {
  const file = path.join(dataDir, "cities.jsonl");
  const cities = cityRecords();
  if (!existsSync(file)) writeFileSync(file, cities.map((c) => JSON.stringify(c)).join("\n"));
  return { file, records: cities.length };
}

const gb = Number(args.get("gb") ?? 1);
const files = (args.get("files") ?? "jsonl,csv,jsonl2,cities").split(",");
// The rows of the last run are kept so that the section can be rendered again (--render-only).
const rowsFile = path.join(dataDir, "ingest-rows.json");
let rows: Row[] = [];
if (args.has("render-only")) {
  rows = JSON.parse(readFileSync(rowsFile, "utf8")) as Row[];
} else {
  if (files.includes("cities")) {
    const cities = await citiesFile();
    rows.push(await ingest("cities, JSON Lines (135k)", cities.file, cities.records));
  }
  for (const kind of files.filter((f) => f !== "cities")) {
    const format = kind.startsWith("csv") ? "csv" : "jsonl";
    const size = kind.endsWith("2") ? 2 * gb : gb;
    const generated = await generate(format, size);
    rows.push(
      await ingest(`${format === "csv" ? "CSV" : "JSON Lines"}, ${size} GB`, generated.file, generated.records),
    );
  }
  writeFileSync(rowsFile, JSON.stringify(rows, null, 2));
}

/** The issue's targets, for the rows this run has. */
function targets(): string[] {
  const row = (label: string) => rows.find((r) => r.label === label);
  const lines: string[] = [];
  const verdict = (ok: boolean) => (ok ? "met" : "**not met**");
  const jsonl = row("JSON Lines, 1 GB");
  const csv = row("CSV, 1 GB");
  const big = row("JSON Lines, 2 GB");
  const cities = row("cities, JSON Lines (135k)");
  if (jsonl)
    lines.push(
      `| JSON Lines (1 GB, small records) ≥ 100,000 records/s | ${fmt(jsonl.perSecond, 0)} records/s | ${verdict(jsonl.perSecond >= 100_000)} |`,
    );
  if (csv)
    lines.push(
      `| CSV within 1.5x of that (≥ 66,667 records/s) | ${fmt(csv.perSecond, 0)} records/s${jsonl ? ` (JSON Lines ${fmt(jsonl.perSecond / csv.perSecond, 2)}x faster)` : ""} | ${verdict(csv.perSecond >= 100_000 / 1.5)} |`,
    );
  if (big)
    lines.push(
      `| Peak RSS during a 2 GB ingest ≤ 1 GB above idle | ${fmt(big.peakMb - big.idleMb, 0)} MB above idle (${fmt(big.records, 0)} records) | ${verdict(big.peakMb - big.idleMb <= 1024)} |`,
    );
  if (cities)
    lines.push(
      `| 135k records queryable ≤ 3 s after complete | ${fmt(cities.ingestS, 2)} s | ${verdict(cities.ingestS <= 3)} |`,
    );
  return lines;
}

const cpu = os.cpus()[0]?.model.trim() ?? "unknown CPU";
const fmt = (n: number, d = 1) => n.toLocaleString("en", { maximumFractionDigits: d });
const section = `<!-- ingest:start -->
## Bulk ingest (\`npm run bench:ingest\`)

- Date: ${new Date().toISOString().slice(0, 10)}. Machine: ${os.cpus().length} cores, ${cpu}, ${Math.round(os.totalmem() / 1e9)} GB RAM, Node ${process.version}.
- A real \`sift\` process (embedded engine, PGlite) per file; the file is PUT to the signed URL with the SDK, then \`complete\`; *ingest* is the time from \`complete\` until the ingest reports \`succeeded\` and the version answers a search. Generated records are small (about 110 bytes as JSON: id, a three-word title, weight, two data fields). RSS is the server's, sampled every 50 ms, and its high-water mark from the moment it is idle before the upload (reset through /proc/PID/clear_refs: the start-up's own transient peak is not the ingest's); *RSS 3 s after* is taken once the ingest is done; the embedded engine maps the new version's index from its file (docs/engine.md E12), so only the pages searches have touched are resident. *Slowest /healthz* is the longest a \`GET /healthz\`, asked every 100 ms during the ingest, waited for its answer: how long the server was unable to answer anyone.

| file | size | records | upload | ingest (complete → queryable) | records/s | idle RSS | peak RSS | peak − idle | RSS 3 s after | slowest /healthz |
|---|---|---|---|---|---|---|---|---|---|---|
${rows.map((r) => `| ${r.label} | ${fmt(r.bytes / 1024 ** 2, 0)} MB | ${fmt(r.records, 0)} | ${fmt(r.uploadS)} s | ${fmt(r.ingestS, 2)} s | ${fmt(r.perSecond, 0)} | ${fmt(r.idleMb, 0)} MB | ${fmt(r.peakMb, 0)} MB | ${fmt(r.peakMb - r.idleMb, 0)} MB | ${fmt(r.settledMb, 0)} MB | ${fmt(r.worstHealthMs, 0)} ms |`).join("\n")}

No peer runs here: there is no Typesense server on this machine. Typesense's published import rate
is about 10,000 documents/s.

| target | measured | |
|---|---|---|
${targets().join("\n")}
<!-- ingest:end -->`;
const resultsPath = path.join(import.meta.dirname, "RESULTS.md");
const current = existsSync(resultsPath) ? readFileSync(resultsPath, "utf8") : "# Benchmark results\n";
writeFileSync(
  resultsPath,
  current.includes("<!-- ingest:start -->")
    ? current.replace(/<!-- ingest:start -->[\s\S]*<!-- ingest:end -->/, section)
    : `${current.trimEnd()}\n\n${section}\n`,
);
console.log(`wrote the ingest section of ${resultsPath}`);
