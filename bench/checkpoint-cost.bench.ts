// What a checkpoint of a large index costs under steady writes, layered (D-351: the base's segment
// kept, the records changed since it written apart) against one segment each time, in the same
// run: two embedded engines take the same upload and the same record changes, and every
// CHANGES changes each checkpoints its newest version. Per checkpoint: the time it takes, the CPU
// the process spends meanwhile (the build thread's included) and the bytes it writes (a layered
// major's base files are links, not written) and publishes with replication (D-353: a layered
// major without its base). Then the search bench's query mix on each engine's last checkpoint,
// the two taking turns, so that what layering costs searches shows beside what it saves.
//
//   npm run bench:checkpoint-cost                                  300,000 records, 2,000 changes, 8 checkpoints
//   npm run bench:checkpoint-cost -- --records=1000000 --checkpoints=12
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { SearchEngine, SearchRecord } from "../server/src/ports/engine.ts";
import { createEmbeddedEngine } from "../server/src/engine/embedded/index.ts";
import { syntheticRecords } from "./datasets.ts";
import { ms as msFigure, percentile, timeSearches } from "./measure.ts";
import { isTypoClass, makeQueries } from "./queries.ts";

const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const RECORDS = Number(args.get("records") ?? 300_000);
const CHANGES = Number(args.get("changes") ?? 2_000);
const CHECKPOINTS = Number(args.get("checkpoints") ?? 8);
const ROUNDS = Number(args.get("rounds") ?? 6);

const all: SearchRecord[] = [];
for (const batch of syntheticRecords(RECORDS + CHANGES * CHECKPOINTS)) all.push(...batch);

interface Side {
  name: string;
  dir: string;
  engine: SearchEngine;
  times: number[];
  cpu: number[];
  bytes: number[];
  published: number[];
  layered: number;
}

async function side(name: string, layered: boolean): Promise<Side> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sift-checkpoint-cost-"));
  const engine = createEmbeddedEngine({
    dataDir: dir,
    // Not synced each: as with replication, where checkpoints of large indexes matter most.
    syncEachChange: false,
    ...(layered ? {} : { layering: { minBase: Number.POSITIVE_INFINITY } }),
  });
  await engine.open();
  await engine.createIndex("k");
  const writer = await engine.bulkWriter("k", 1);
  for (let i = 0; i < RECORDS; i += 10_000) await writer.add(all.slice(i, Math.min(RECORDS, i + 10_000)));
  await writer.commit();
  return { name, dir, engine, times: [], cpu: [], bytes: [], published: [], layered: 0 };
}

/**
 * Bytes of the major's files not shared with another (a layered major's base files are links),
 * and those a replicating node publishes for the other nodes (a layered major's without its base,
 * D-353).
 */
async function writtenBytes(
  engine: SearchEngine,
  major: number,
): Promise<{ bytes: number; published: number; layered: boolean }> {
  let bytes = 0;
  let layered = false;
  for (const f of await engine.segmentFiles!("k", major)) {
    const stat = fs.statSync(f.path);
    if (f.name === "base-hidden.bin") layered = true;
    if (stat.nlink === 1) bytes += stat.size;
  }
  let published = 0;
  for (const f of await engine.segmentFiles!("k", major, { withoutBase: true })) published += fs.statSync(f.path).size;
  return { bytes, published, layered };
}

const sides = [await side("layered (default)", true), await side("one segment each time", false)];
console.error(`uploaded ${RECORDS.toLocaleString("en")} records twice; checkpointing`);

let parent = "1";
let next = RECORDS;
for (let round = 1; round <= CHECKPOINTS; round++) {
  const major = round + 1;
  // A change: one existing record changed; every tenth a new record too; every twentieth a delete.
  for (let i = 1; i <= CHANGES; i++) {
    const version = `${round}.${i}`;
    const changed = all[Math.floor(Math.random() * RECORDS)]!;
    const upserts: SearchRecord[] = [{ ...changed, weight: (changed.weight ?? 0) + 1 }];
    if (i % 10 === 0) upserts.push(all[next++]!);
    const deletes = i % 20 === 0 ? [all[Math.floor(Math.random() * RECORDS)]!.id] : [];
    for (const s of sides) await s.engine.applyChange("k", { version, parent, upserts, deletes });
    parent = version;
  }
  for (const s of sides) {
    const cpu = process.cpuUsage();
    const start = performance.now();
    await s.engine.checkpoint("k", parent, major);
    s.times.push(performance.now() - start);
    const spent = process.cpuUsage(cpu);
    s.cpu.push((spent.user + spent.system) / 1000);
    const written = await writtenBytes(s.engine, major);
    s.bytes.push(written.bytes);
    s.published.push(written.published);
    if (written.layered) s.layered++;
  }
  parent = String(major);
  console.error(`checkpoint ${round} of ${CHECKPOINTS} made on both`);
}

const samples = all.slice(0, RECORDS).filter((_, i) => i % 97 === 0);
const queries = makeQueries(samples, 8, 7);
/**
 * Each side's query times, the sides taking turns by round (first one, then the other): right
 * after the checkpoints the machine is still writing the last ones out, and whichever side was
 * measured first took those stalls alone (its p99 four to seven times the other's, the same
 * queries' medians 1.4 times).
 */
async function measureBoth(): Promise<{ exact: number[]; typos: number[] }[]> {
  const requests = queries.map((q) => q.request);
  const found = sides.map(() => ({ exact: [] as number[], typos: [] as number[] }));
  for (const s of sides) await timeSearches(s.engine, "k", parent, requests, 0);
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? [0, 1] : [1, 0];
    for (const k of order) {
      const [times] = await timeSearches(sides[k]!.engine, "k", parent, requests, 1);
      for (const [i, q] of queries.entries()) (isTypoClass(q.cls) ? found[k]!.typos : found[k]!.exact).push(times![i]!);
    }
  }
  return found;
}

const ms = (x: number) => `${msFigure(x)} ms`;
const mb = (x: number) => `${(x / 1e6).toFixed(1)} MB`;
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
console.log(
  `\nRun ${new Date().toISOString().slice(0, 16)}Z, ${os.cpus().length} cores ${os.cpus()[0]?.model ?? ""}, Node ${process.versions.node}: ${RECORDS.toLocaleString("en")} synthetic records, a checkpoint every ${CHANGES.toLocaleString("en")} changes, ${CHECKPOINTS} checkpoints; ${queries.length} queries ${ROUNDS} times each on the last.\n`,
);
console.log(
  "| checkpoints | layered | time p50 / max | CPU, mean | written, mean | published, mean | exact queries p50 / p99 | typo queries p50 / p99 |",
);
console.log("| --- | --- | --- | --- | --- | --- | --- | --- |");
const measured = await measureBoth();
for (const [k, s] of sides.entries()) {
  const searched = measured[k]!;
  const of = (xs: number[]) => `${ms(percentile(xs, 0.5))} / ${ms(percentile(xs, 0.99))}`;
  console.log(
    `| ${s.name} | ${s.layered} of ${CHECKPOINTS} | ${ms(percentile(s.times, 0.5))} / ${ms(Math.max(...s.times))} | ${ms(sum(s.cpu) / s.cpu.length)} | ${mb(sum(s.bytes) / s.bytes.length)} | ${mb(sum(s.published) / s.published.length)} | ${of(searched.exact)} | ${of(searched.typos)} |`,
  );
}
for (const s of sides) {
  await s.engine.close();
  fs.rmSync(s.dir, { recursive: true, force: true });
}
