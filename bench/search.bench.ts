// Search benchmark: the embedded engine and its peers (MiniSearch, FlexSearch, Orama) on the
// cities list and a generated 1M-record catalogue, the same queries for all, our answers checked
// against brute force. Writes the engine section of RESULTS.md.
//
//   npm run bench                        cities + 1M (about 15 minutes on 2 cores)
//                                        (typo queries add up to --peer-typo-seconds per peer and dataset)
//   BENCH_10M=1 npm run bench            also 10M records (embedded engine only; about 8 more minutes)
//   ../node_modules/.bin/node --expose-gc search.bench.ts --10m --datasets=cities,1m \
//     --peers=minisearch,flexsearch,orama --per-cell=100 --peer-seconds=30 --peer-typo-seconds=30 \
//     --print-only   (from bench/: every option; --print-only prints the section, RESULTS.md untouched)
//   ... search.bench.ts --render-only [--10m]   the section again from the last run's saved results
//
// A smoke run (about a minute): --datasets=cities --per-cell=10 --peer-seconds=3 --peer-typo-seconds=3 --print-only
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { SearchRecord } from "../server/src/ports/engine.ts";
import { DATASET_SIZES, datasetBatches, prng } from "./datasets.ts";
import type { EngineResult } from "./measure.ts";
import { makeQueries, type BenchQuery } from "./queries.ts";
import { renderReport } from "./report.ts";

const args = new Map(
  process.argv.slice(2).map((a) => {
    const [key, value] = a.replace(/^--/, "").split("=");
    return [key!, value ?? "true"] as const;
  }),
);
const datasets = (args.get("datasets") ?? "cities,1m").split(",");
if ((args.has("10m") || process.env.BENCH_10M === "1") && !datasets.includes("10m")) datasets.push("10m");
const peers = (args.get("peers") ?? "minisearch,flexsearch,orama").split(",").filter(Boolean);
const perCell = Number(args.get("per-cell") ?? 100);
const peerSeconds = Number(args.get("peer-seconds") ?? 30);
// Typo queries have a budget of their own, so the exact queries keep the budget they always had.
const peerTypoSeconds = Number(args.get("peer-typo-seconds") ?? peerSeconds);
const printOnly = args.has("print-only");
// Renders the section again from the last run's saved queries and results (the machine line is today's).
const renderOnly = args.has("render-only");

const dataDir = path.join(import.meta.dirname, "data");
fs.mkdirSync(dataDir, { recursive: true });

/** Records to draw query words and points from: 5,000 spread over (at most) the first million. */
function sampleRecords(dataset: string): SearchRecord[] {
  const total = Math.min(DATASET_SIZES[dataset] ?? 140_000, 1_000_000);
  const random = prng(9);
  const samples: SearchRecord[] = [];
  let seen = 0;
  for (const batch of datasetBatches(dataset)) {
    for (const r of batch) if (random() < 5000 / total) samples.push(r);
    seen += batch.length;
    if (seen >= total) break;
  }
  return samples;
}

/** The result a child of the last run saved (--render-only). */
function savedResult(engine: string, dataset: string): EngineResult | null {
  const resultFile = path.join(dataDir, `result-${engine}-${dataset}.json`);
  return fs.existsSync(resultFile) ? (JSON.parse(fs.readFileSync(resultFile, "utf8")) as EngineResult) : null;
}

function runChild(engine: string, dataset: string, queriesFile: string): EngineResult | null {
  const resultFile = path.join(dataDir, `result-${engine}-${dataset}.json`);
  fs.rmSync(resultFile, { force: true });
  console.log(`${dataset}: ${engine}…`);
  const child = spawnSync(
    process.execPath,
    [
      "--expose-gc",
      "--max-old-space-size=12000",
      path.join(import.meta.dirname, "run-engine.ts"),
      engine,
      dataset,
      queriesFile,
      resultFile,
      String(peerSeconds),
      String(peerTypoSeconds),
    ],
    { stdio: ["ignore", "inherit", "inherit"] },
  );
  if (child.status !== 0 || !fs.existsSync(resultFile)) {
    console.log(`${dataset}: ${engine} failed (exit ${child.status ?? child.signal})`);
    return null;
  }
  return JSON.parse(fs.readFileSync(resultFile, "utf8")) as EngineResult;
}

const runs: { dataset: string; queries: BenchQuery[]; results: EngineResult[]; failed: string[] }[] = [];
for (const dataset of datasets) {
  const queriesFile = path.join(dataDir, `queries-${dataset}.json`);
  const queries = renderOnly
    ? (JSON.parse(fs.readFileSync(queriesFile, "utf8")) as BenchQuery[])
    : makeQueries(sampleRecords(dataset), dataset === "10m" ? Math.ceil(perCell / 2) : perCell);
  if (!renderOnly) fs.writeFileSync(queriesFile, JSON.stringify(queries));
  const results: EngineResult[] = [];
  const failed: string[] = [];
  // Peers are skipped at 10M: they score every match and need far more memory than the machine has.
  for (const engine of ["embedded", ...(dataset === "10m" ? [] : peers)]) {
    const result = renderOnly ? savedResult(engine, dataset) : runChild(engine, dataset, queriesFile);
    if (result) results.push(result);
    else failed.push(engine);
  }
  runs.push({ dataset, queries, results, failed });
}

const cpu = os.cpus()[0]?.model ?? "unknown CPU";
const report = renderReport(runs, {
  machine: `${os.cpus().length} cores, ${cpu}, ${(os.totalmem() / 1e9).toFixed(0)} GB RAM, Node ${process.version}, ${os.platform()}`,
  date: new Date().toISOString().slice(0, 10),
  perCell,
  peerSeconds,
  peerTypoSeconds,
});
console.log(`\n${report}`);
if (printOnly) process.exit(0);

const resultsFile = path.join(import.meta.dirname, "RESULTS.md");
const START = "<!-- engine:start -->";
const END = "<!-- engine:end -->";
const existing = fs.existsSync(resultsFile) ? fs.readFileSync(resultsFile, "utf8") : "";
const section = `${START}\n${report}\n${END}`;
const updated =
  existing.includes(START) && existing.includes(END)
    ? existing.slice(0, existing.indexOf(START)) + section + existing.slice(existing.indexOf(END) + END.length)
    : `# Benchmark results\n\n${section}\n\n## HTTP load\n\n<!-- http-load: the lead adds the autocannon figure here once the server exists. -->\n_Not measured yet._\n`;
fs.writeFileSync(resultsFile, updated);
console.log(`wrote ${resultsFile}`);
