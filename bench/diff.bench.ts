// What an upload changed (D-237): the cost of the embedded engine's first comparison of two
// majors, which reads every record of both, against a checkpoint of the same index; the cost of
// the pages after it; and the longest the event loop waited meanwhile (searches wait that long).
// Two majors of N records: the second drops the first 0.5 %, adds as many new ones and changes
// 1 % of the rest.
//
//   npm run bench:diff                  1,000,000 records
//   npm run bench:diff -- --records=100000
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { createEmbeddedEngine } from "../server/src/engine/embedded/index.ts";
import type { SearchRecord } from "../server/src/ports/engine.ts";

const arg = process.argv.find((a) => a.startsWith("--records="));
const N = arg ? Number(arg.slice("--records=".length)) : 1_000_000;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sift-bench-diff-"));
const engine = createEmbeddedEngine({ dataDir: dir });
await engine.open();
await engine.createIndex("bench");

const record = (i: number, major: number): SearchRecord => ({
  id: `rec-${i}`,
  title: `Item ${i} ${["red", "green", "blue"][i % 3]}`,
  weight: (i % 1000) + 1,
  data: { price: i % 97, edition: i % 100 === 0 ? major : 0, tags: ["garden", "tools"] },
});

async function upload(major: number, from: number, to: number): Promise<number> {
  const started = performance.now();
  const writer = await engine.bulkWriter("bench", major);
  for (let i = from; i < to; i += 5000) {
    await writer.add(Array.from({ length: Math.min(5000, to - i) }, (_, k) => record(i + k, major)));
  }
  await writer.commit();
  return performance.now() - started;
}

const shift = Math.floor(N * 0.005);
const ingestMs = await upload(1, 0, N);
await upload(2, shift, N + shift);

const delay = monitorEventLoopDelay({ resolution: 1 });
delay.enable();
let started = performance.now();
const first = await engine.diff!("bench", "1", "2", { limit: 100 });
const firstMs = performance.now() - started;
delay.disable();

started = performance.now();
let pages = 0;
for (let page = first; page.next; pages++) {
  page = await engine.diff!("bench", "1", "2", { limit: 1000, after: page.next });
}
const pagesMs = performance.now() - started;

started = performance.now();
await engine.checkpoint("bench", "2", 3);
const checkpointMs = performance.now() - started;

await engine.close();
fs.rmSync(dir, { recursive: true, force: true });

const ms = (n: number) => `${Math.round(n).toLocaleString("en")} ms`;
console.log(`records per major       ${N.toLocaleString("en")} (ingest of one: ${ms(ingestMs)})`);
console.log(`counts                  ${JSON.stringify(first.counts)}`);
console.log(`first page (compares)   ${ms(firstMs)}, longest event-loop wait ${(delay.max / 1e6).toFixed(1)} ms`);
console.log(`${pages} more pages of 1000   ${ms(pagesMs)}`);
console.log(`checkpoint, for scale   ${ms(checkpointMs)}`);
