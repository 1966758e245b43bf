// Searches of an index that takes record writes: between two checkpoints a version is its major's
// segment plus the records changed since (an overlay, whose records that may hold a query's
// rarest token are looked up, D-306, D-310). This measures the search latency of the search
// bench's query mix (bench/queries.ts) on a version N record changes after its major, and on the
// checkpoint of that same version (the same records, all in one segment), in the same run; typo
// queries also by kind (whether every token may have two typos, which are compared with the
// changed records' distinct words rather than looked up, D-312).
//
//   npm run bench:changes                                 100,000 records, 1,000 / 5,000 / 10,000 changes
//   npm run bench:changes -- --records=300000 --changes=1000,20000 --per-cell=10
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { SearchRecord } from "../server/src/ports/engine.ts";
import { createEmbeddedEngine } from "../server/src/engine/embedded/index.ts";
import { syntheticRecords } from "./datasets.ts";
import { percentile, timeSearches } from "./measure.ts";
import { isTypoClass, makeQueries } from "./queries.ts";
import { allowedTypos } from "../server/src/engine/typos.ts";
import { tokenize } from "../server/src/engine/tokenize.ts";

const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const RECORDS = Number(args.get("records") ?? 100_000);
const CHANGES = (args.get("changes") ?? "1000,5000,10000").split(",").map(Number);
const PER_CELL = Number(args.get("per-cell") ?? 8);
const ROUNDS = Number(args.get("rounds") ?? 3);

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "sift-changes-bench-"));
// Checkpoints in one segment, as the table says (a large index's are layered by default, D-351:
// bench:checkpoint-cost compares those).
const engine = createEmbeddedEngine({ dataDir, layering: { minBase: Number.POSITIVE_INFINITY } });
await engine.open();
await engine.createIndex("k");

// One stream: the first RECORDS records are the upload, the rest arrive one write at a time.
const all: SearchRecord[] = [];
for (const batch of syntheticRecords(RECORDS + Math.max(...CHANGES))) all.push(...batch);
const writer = await engine.bulkWriter("k", 1);
for (let i = 0; i < RECORDS; i += 10_000) await writer.add(all.slice(i, Math.min(RECORDS, i + 10_000)));
await writer.commit();
await engine.activate("k", "1");
// Progress on stderr: a run takes half a minute or more, and the table comes at its end.
console.error(`uploaded ${RECORDS.toLocaleString("en")} records; measuring the queries on them`);

const samples = all.filter((_, i) => i % 97 === 0);
const queries = makeQueries(samples, PER_CELL, 7);
/**
 * Typo queries whose every token may have two typos (eight characters or more): no token of theirs
 * is looked up by its characters (D-310, D-312); reported apart from the other typo queries.
 */
const everyTokenTwoTypos = (query: string) => {
  const tokens = tokenize(query);
  return tokens.length > 0 && tokens.every((t) => allowedTypos(t) === 2);
};
const typoQueries = new Set(queries.filter((q) => isTypoClass(q.cls)));
const twoTypoQueries = new Set([...typoQueries].filter((q) => everyTokenTwoTypos(q.request.query ?? "")));

/**
 * Every query ROUNDS times, after one round not counted: p50 / p99 of the exact classes and of the
 * typo classes apart (a version's changed records are searched for typos only where its segment
 * has no exact match, and then every one of them is compared).
 */
async function measure(version: string): Promise<{ exact: string; typos: string; two: string; one: string }> {
  const exact: number[] = [];
  const two: number[] = [];
  const one: number[] = [];
  const rounds = await timeSearches(
    engine,
    "k",
    version,
    queries.map((q) => q.request),
    ROUNDS,
  );
  for (const times of rounds) {
    queries.forEach((q, i) => {
      if (!typoQueries.has(q)) exact.push(times[i]!);
      else (twoTypoQueries.has(q) ? two : one).push(times[i]!);
    });
  }
  const of = (times: number[]) => `${ms(percentile(times, 0.5))} / ${ms(percentile(times, 0.99))}`;
  return { exact: of(exact), typos: of([...one, ...two]), two: of(two), one: of(one) };
}

const ms = (x: number) => `${x.toFixed(2)} ms`;
const rows: string[] = [];
const kinds: string[] = [];
const base = await measure("1");
rows.push(`| 0 (the upload) | – | ${base.exact} | ${base.typos} | – | – |`);
let parent = "1";
let applied = 0;
let nextMajor = 2;
for (const target of CHANGES) {
  const from = applied;
  const cpu = process.cpuUsage();
  while (applied < target) {
    applied++;
    const version = `1.${applied}`;
    await engine.applyChange("k", {
      version,
      parent,
      upserts: [all[RECORDS + applied - 1]!],
      deletes: [],
      activate: true,
    });
    parent = version;
  }
  // CPU, not time: each change is flushed to disk here (alone, not replicated), which the wait shows.
  const spent = process.cpuUsage(cpu);
  const perChange = (spent.user + spent.system) / 1000 / (applied - from);
  console.error(
    `${applied.toLocaleString("en")} changes applied; measuring the queries on them and on their checkpoint`,
  );
  const onChanges = await measure(parent);
  const major = nextMajor++;
  await engine.checkpoint("k", parent, major);
  const onCheckpoint = await measure(String(major));
  rows.push(
    `| ${target.toLocaleString("en")} | ${ms(perChange)} | ${onChanges.exact} | ${onChanges.typos} | ${onCheckpoint.exact} | ${onCheckpoint.typos} |`,
  );
  kinds.push(
    `| ${target.toLocaleString("en")} | ${onChanges.one} | ${onChanges.two} | ${onCheckpoint.one} | ${onCheckpoint.two} |`,
  );
}
await engine.close();
fs.rmSync(dataDir, { recursive: true, force: true });

console.log(
  `\nRun ${new Date().toISOString().slice(0, 16)}Z, ${os.cpus().length} cores ${os.cpus()[0]?.model ?? ""}, Node ${process.versions.node}: ${RECORDS.toLocaleString("en")} synthetic records, ${queries.length} queries (the search bench's mix) ${ROUNDS} times each.\n`,
);
console.log(
  "| record changes since the major | applying one: CPU, mean | exact queries p50 / p99 | typo queries | on its checkpoint (same records): exact | typos |",
);
console.log("| --- | --- | --- | --- | --- | --- |");
for (const row of rows) console.log(row);
console.log(
  `\nTypo queries by kind, p50 / p99: ${typoQueries.size - twoTypoQueries.size} with a token that may have at most one typo, ${twoTypoQueries.size} whose every token may have two.\n`,
);
console.log("| record changes since the major | one typo at most | every token two | on its checkpoint: one | two |");
console.log("| --- | --- | --- | --- | --- |");
for (const row of kinds) console.log(row);
