// Writes to a large index while it is checkpointed (D-231): an index of N records (one upload),
// then record writes at a steady rate, with an automatic checkpoint every K writes. Each write's
// acknowledgement time is measured; a write that waits for a checkpoint to be built shows in the
// p99 and the maximum. One Sift process, or three regions with --regions.
//
//   npm run bench:checkpoint -- --records=300000 --rate=40 --seconds=20 --every=200 [--regions]
import os from "node:os";
import { statSync, writeFileSync } from "node:fs";
import { keyed, type Keyed, startRegions } from "../test/support/regions.ts";
import { siftProcess } from "../test/support/process.ts";
import { RATE_LIMITS_OFF } from "../test/support/limits.ts";
import { createKey, signUp } from "../test/support/world.ts";
import { Http } from "../test/support/http.ts";
import { percentile } from "./measure.ts";
import { uploadAndWait } from "./upload.ts";

const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const RECORDS = Number(args.get("records") ?? 300_000);
const RATE = Number(args.get("rate") ?? 40);
const SECONDS = Number(args.get("seconds") ?? 20);
const EVERY = Number(args.get("every") ?? 200);
const REGIONS = args.has("regions");
process.env.DATABASE_URL ??= "postgres://postgres@127.0.0.1:5432/test";
const ENV = { ...RATE_LIMITS_OFF, SIFT_COALESCE_AFTER: String(EVERY) };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Writes at RATE for SECONDS, in turn to the given nodes; each write's acknowledgement time. */
async function writes(nodes: Keyed[], index: string) {
  const acks: number[] = [];
  let failed = 0;
  const pending: Promise<void>[] = [];
  const t0 = performance.now();
  for (let i = 0; i < RATE * SECONDS; i++) {
    const wait = t0 + (i * 1000) / RATE - performance.now();
    if (wait > 1) await sleep(wait);
    pending.push(
      (async () => {
        const start = performance.now();
        const reply = await nodes[i % nodes.length]!.put(`/v1/indexes/${index}/records/w-${i}`, {
          title: `write ${i}`,
        });
        if (reply.status === 200) acks.push(performance.now() - start);
        else failed++;
      })(),
    );
  }
  await Promise.all(pending);
  return { acks, failed };
}

async function main() {
  const file = `${os.tmpdir()}/sift-checkpoint-bench-${RECORDS}.csv`;
  try {
    statSync(file);
  } catch {
    const lines = ["id,title,weight"];
    for (let i = 0; i < RECORDS; i++) lines.push(`b-${i},record ${i % 9973} of ${i},${(i % 1000) + 1}`);
    writeFileSync(file, `${lines.join("\n")}\n`);
  }
  let nodes: Keyed[];
  let index: string;
  let stop: () => Promise<void>;
  if (REGIONS) {
    const r = await startRegions(["frankfurt", "london", "newark"], ENV);
    nodes = [0, 1, 2].map((n) => r.http(n));
    index = r.index;
    stop = () => r.stop();
  } else {
    const single = await siftProcess(ENV);
    await single.start();
    const session = await signUp(new Http(single.url), `bench-${Date.now()}@example.com`);
    const node = keyed(single.url, await createKey(session, "adm"));
    const service = (await node.post("/v1/services", { name: `bench-${Date.now()}` })).body.name as string;
    index = "products";
    await node.post("/v1/indexes", { name: index, serviceName: service, visibility: "PUBLIC" });
    nodes = [node];
    stop = () => single.destroy();
  }
  try {
    await uploadAndWait(nodes[0]!, index, file);
    const { acks, failed } = await writes(nodes, index);
    const listed = await nodes[0]!.get(`/v1/indexes/${index}/versions`);
    const checkpoints = (listed.body.versions as { kind: string }[]).filter((v) => v.kind === "checkpoint").length;
    const ms = (n: number) => `${n.toFixed(1)} ms`;
    console.log(
      `\n${new Date().toISOString().slice(0, 16)}Z, ${os.cpus().length} cores; ${REGIONS ? "three regions" : "one process"}, ` +
        `index of ${RECORDS.toLocaleString("en")} records, ${RATE} writes/s for ${SECONDS} s, a checkpoint every ${EVERY} writes`,
    );
    console.log(
      `| acknowledgement p50 / p99 / max | ${ms(percentile(acks, 0.5))} / ${ms(percentile(acks, 0.99))} / ${ms(Math.max(...acks))} |`,
    );
    console.log(`| writes answered / failed | ${acks.length} / ${failed} |`);
    console.log(`| checkpoints listed afterwards | ${checkpoints} |`);
  } finally {
    await stop();
  }
}

await main();
process.exit(0);
