// What a region's mirror of the log and its copies of the object stores lose when NATS leaders
// change (D-341): two clusters of three on loopback joined by gateways that hold each message
// 40 ms each way, an origin in one and its mirror or sourced copy in the other. Writes go on at a
// fixed rate while both streams' leaders are stepped down every 2.5 s; once the writes end, the
// copy is given 90 s to catch up, and then every message it should hold is counted.
//   - mirror: a stream of log entries, each subject truncated now and then as Sift truncates an
//     index's log, and its mirror, as SIFT_NATS_MIRROR makes; what counts is every entry the
//     stream still holds, at the same sequence in the mirror;
//   - source: an object store whose objects are overwritten, and a stream sourcing its chunks, as
//     a region's copy of a bucket is made (object-copies.ts).
// Each with the copy at three replicas and at one.
//
//   npm run bench:nats-leader-changes                 30 s of writes per variant
//   npm run bench:nats-leader-changes -- --seconds=60 --runs=2 --only=mirror
import os from "node:os";
import { execFileSync } from "node:child_process";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Objm } from "@nats-io/obj";
import { connect } from "@nats-io/transport-node";
import { NATS_SERVER, startNatsSupercluster } from "../test/support/nats.ts";

const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const SECONDS = Number(args.get("seconds") ?? 30);
const RUNS = Number(args.get("runs") ?? 1);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const CHUNK = 8192;

async function variant(kind: "mirror" | "source", replicas: number) {
  const sc = await startNatsSupercluster(["fra", "lon"], 3, "arbiter", 40);
  const nc = await connect({ servers: sc.clusters.fra!.urls.split(","), noAsyncTraces: true });
  // The copy read from its own cluster: asked across the gateway, a message get costs 80 ms.
  const near = await connect({ servers: sc.clusters.lon!.urls.split(","), noAsyncTraces: true });
  try {
    const js = jetstream(nc);
    // startNatsSupercluster resolves once each cluster can place a stream of three.
    const jsm = await jetstreamManager(nc, { checkAPI: false });
    const placed = (cluster: string) => ({ placement: { cluster, tags: [] } });
    const origin = kind === "mirror" ? "LOG" : "OBJ_DOCS";
    const bucket = kind === "source" ? await new Objm(js).create("DOCS", { replicas: 3, ...placed("fra") }) : undefined;
    if (kind === "mirror") {
      await jsm.streams.add({ name: origin, subjects: ["log.>"], num_replicas: 3, ...placed("fra") });
      await jsm.streams.add({ name: "COPY", mirror: { name: origin }, num_replicas: replicas, ...placed("lon") });
    } else {
      await jsm.streams.add({
        name: "COPY",
        subjects: [],
        sources: [{ name: origin, filter_subject: "$O.DOCS.C.>" }],
        num_replicas: replicas,
        ...placed("lon"),
      });
    }
    let stop = false;
    let written = 0;
    /** Messages the copy should hold once caught up: every entry, or every chunk ever put. */
    let expected = 0;
    let failed = 0;
    const writer = (async () => {
      for (let n = 0; !stop; n++) {
        try {
          if (bucket) {
            // Fifteen objects overwritten in turn, 1 to 31 kB: the old chunks leave the origin.
            const size = 1_000 + ((n * 7_919) % 30_000);
            await bucket.putBlob({ name: `doc-${n % 15}`, options: { max_chunk_size: CHUNK } }, new Uint8Array(size));
            expected += Math.ceil(size / CHUNK);
          } else {
            await js.publish(`log.i${n % 5}`, JSON.stringify({ n, pad: "x".repeat(200) }));
            // One subject's older entries purged every 300 (a truncation behind a snapshot).
            if (n % 300 === 299)
              await jsm.streams.purge(origin, { filter: `log.i${Math.floor(n / 300) % 5}`, keep: 20 });
          }
          written++;
        } catch {
          // A put or publish refused while a leader is elected: not in the origin, not expected.
          failed++;
        }
        await sleep(bucket ? 30 : 10);
      }
    })();
    let stepdowns = 0;
    const disturber = (async () => {
      while (!stop) {
        await sleep(2_500);
        for (const stream of ["COPY", origin]) {
          // biome-ignore lint/plugin: a stepdown refused or unanswered (no leader at the moment) is not counted.
          const reply = await nc
            .request(`$JS.API.STREAM.LEADER.STEPDOWN.${stream}`, undefined, { timeout: 5_000 })
            .catch(() => null);
          if (reply?.json<{ success?: boolean }>().success) stepdowns++;
        }
      }
    })();
    await sleep(SECONDS * 1_000);
    stop = true;
    await Promise.all([writer, disturber]);
    const ended = Date.now();
    const originLast = (await jsm.streams.info(origin)).state.last_seq;
    let caughtUpMs: number | undefined;
    let held = 0;
    while (Date.now() - ended < 90_000) {
      // biome-ignore lint/plugin: a copy that does not answer now (a leader being elected) is asked again.
      const info = await jsm.streams.info("COPY").catch(() => null);
      held = info?.state.messages ?? held;
      const lag = info === null ? 1 : (info.mirror ?? info.sources?.[0])?.lag;
      // A mirror skips what was purged before it took it: caught up once it reaches the stream's end.
      const reached = kind === "mirror" ? (info?.state.last_seq ?? 0) >= originLast : held >= expected;
      if (reached && lag === 0) {
        caughtUpMs = Date.now() - ended;
        break;
      }
      await sleep(500);
    }
    if (kind === "mirror") {
      // Every entry the stream holds, at its sequence in the mirror (which keeps what was purged).
      const state = (await jsm.streams.info(origin)).state;
      expected = state.messages;
      held = 0;
      const nearby = await jetstreamManager(near, { checkAPI: false });
      for (let seq = state.first_seq; seq <= state.last_seq; seq++) {
        const entry = await jsm.streams.getMessage(origin, { seq });
        if (entry === null) continue;
        const copy = await nearby.streams.getMessage("COPY", { seq });
        if (copy?.subject === entry.subject && copy.string() === entry.string()) held++;
      }
    }
    return { written, failed, stepdowns, expected, held, lost: Math.max(0, expected - held), caughtUpMs };
  } finally {
    await nc.close();
    await near.close();
    await sc.stop();
  }
}

console.log(
  `Run ${new Date().toISOString().slice(0, 16)}Z, ${os.cpus().length} cores ${os.cpus()[0]?.model ?? "unknown CPU"}, Node ${process.versions.node}; NATS ${await natsVersion()}, two clusters of 3 and a tie-breaker, gateways 40 ms each way; ${SECONDS} s of writes per run, both leaders stepped down every 2.5 s\n`,
);
console.log(
  "| copy | replicas | run | written (refused) | stepdowns | messages it should hold | lost | caught up after the writes |",
);
console.log("| --- | --- | --- | --- | --- | --- | --- | --- |");
const ONLY = args.get("only");
for (const kind of ["mirror", "source"] as const) {
  if (ONLY !== undefined && ONLY !== kind) continue;
  for (const replicas of [3, 1]) {
    for (let run = 1; run <= RUNS; run++) {
      const r = await variant(kind, replicas);
      console.log(
        `| ${kind} | ${replicas} | ${run} | ${r.written} (${r.failed}) | ${r.stepdowns} | ${r.expected} | ${r.lost} (${((100 * r.lost) / r.expected).toFixed(1)} %) | ${r.caughtUpMs === undefined ? "not within 90 s" : `${(r.caughtUpMs / 1000).toFixed(1)} s`} |`,
      );
    }
  }
}

async function natsVersion(): Promise<string> {
  return execFileSync(NATS_SERVER, ["--version"])
    .toString()
    .trim()
    .replace(/^nats-server: /, "");
}
