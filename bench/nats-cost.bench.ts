// What NATS JetStream itself costs per log entry on this machine, apart from Sift (D-222): a
// private cluster of three servers, entries of the size a record write makes, published at a
// fixed rate; the servers' CPU time per entry from /proc, and the messages in and out of them per
// entry. Variants: R3 (the log), R1, R3 with three consumers following it (as three regions do),
// R3 with compare-and-set appends per subject, entries sent six at a time (at the same rate: what
// an entry costs when the stream's leader takes several together), and entries republished by the
// stream to three plain subscribers instead of consumers.
//
//   npm run bench:nats-cost                   300 entries/s for 8 s per variant
//   npm run bench:nats-cost -- --rate=500
import os from "node:os";
import { type JetStreamManager, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { startNatsCluster } from "../test/support/nats.ts";
import { cpuByGroup, cpuSpent } from "./measure.ts";

const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const RATE = Number(args.get("rate") ?? 300);
const SECONDS = Number(args.get("seconds") ?? 8);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const ENTRY = JSON.stringify({
  op: "changes",
  index: "idx_bench",
  changes: [{ version: "1.1", parent: "1.0", upserts: [{ id: "r-1", title: "amber cedar 1" }], deletes: [] }],
});

interface Variant {
  replicas: number;
  /** Followers of every entry: ordered consumers, or subscribers to what the stream republishes. */
  consumers: number;
  republish?: boolean;
  /** One append in flight per subject, each expecting the one before, as Sift's writers do. */
  compareAndSet?: boolean;
  /** Entries sent this many at a time, at the same rate (not with compareAndSet: those go one by one). */
  together?: number;
}

async function variant(name: string, { replicas, consumers, republish, compareAndSet, together = 1 }: Variant) {
  const cluster = await startNatsCluster(3);
  const nc = await connect({ servers: cluster.urls.split(","), noAsyncTraces: true });
  const followers: Awaited<ReturnType<typeof connect>>[] = [];
  try {
    let jsm: JetStreamManager | undefined;
    // The cluster elects its leaders for a moment after it starts.
    for (let tries = 0; jsm === undefined; tries++) {
      try {
        jsm = await jetstreamManager(nc);
        await jsm.streams.add({
          name: "BENCH",
          subjects: ["bench.>"],
          num_replicas: replicas,
          ...(republish ? { republish: { src: "bench.>", dest: "copy.>" } } : {}),
        });
      } catch (error) {
        jsm = undefined;
        if (tries > 60) throw error;
        await sleep(500);
      }
    }
    for (let k = 0; k < consumers; k++) {
      const follower = await connect({ servers: cluster.urls.split(","), noAsyncTraces: true });
      followers.push(follower);
      if (republish) {
        const copies = follower.subscribe("copy.>");
        void (async () => {
          for await (const m of copies) JSON.parse(m.string());
        })();
        continue;
      }
      const consumer = await jetstream(follower).consumers.get("BENCH", { filter_subjects: "bench.>" });
      const messages = await consumer.consume({ max_messages: 256, expires: 5_000, idle_heartbeat: 1_000 });
      void (async () => {
        for await (const m of messages) JSON.parse(m.string());
      })();
    }
    const js = jetstream(nc);
    const last = new Map<string, number>();
    const group = (_pid: number, command: string) => (command === "nats-server" ? "nats" : undefined);
    await sleep(500);
    const messages = async () => {
      let total = 0;
      for (const server of cluster.servers) {
        const varz = (await (await fetch(`${server.monitor}/varz`)).json()) as { in_msgs: number; out_msgs: number };
        total += varz.in_msgs + varz.out_msgs;
      }
      return total;
    };
    const messagesBefore = await messages();
    const before = cpuByGroup(group);
    const t0 = performance.now();
    const total = RATE * SECONDS;
    const pending: Promise<unknown>[] = [];
    for (let i = 0; i < total; i++) {
      const wait = t0 + (Math.floor(i / together) * together * 1000) / RATE - performance.now();
      if (wait > 1) await sleep(wait);
      const subject = `bench.i${i % 6}`;
      if (compareAndSet) {
        const ack = await js.publish(subject, ENTRY, { expect: { lastSubjectSequence: last.get(subject) ?? 0 } });
        last.set(subject, ack.seq);
      } else pending.push(js.publish(subject, ENTRY));
    }
    await Promise.all(pending);
    // The machine's own server on 4222 is idle; counted with the others, it adds next to nothing.
    const cpu = cpuSpent(cpuByGroup(group), before).get("nats") ?? 0;
    const wall = (performance.now() - t0) / 1000;
    const perEntry = ((await messages()) - messagesBefore) / total;
    return `| ${name} | ${((cpu * 1000) / total).toFixed(2)} ms | ${perEntry.toFixed(1)} | ${(cpu / wall).toFixed(2)} |`;
  } finally {
    for (const f of followers) await f.close();
    await nc.close();
    await cluster.stop();
  }
}

const rows = [
  await variant("R3, no consumer", { replicas: 3, consumers: 0 }),
  await variant("R1, no consumer", { replicas: 1, consumers: 0 }),
  await variant("R3, three consumers", { replicas: 3, consumers: 3 }),
  await variant("R3, three consumers, sent three at a time", { replicas: 3, consumers: 3, together: 3 }),
  await variant("R3, three consumers, sent six at a time", { replicas: 3, consumers: 3, together: 6 }),
  await variant("R3, three consumers, compare-and-set per subject", { replicas: 3, consumers: 3, compareAndSet: true }),
  await variant("R3, republished to three subscribers, compare-and-set per subject", {
    replicas: 3,
    consumers: 3,
    republish: true,
    compareAndSet: true,
  }),
];
const cpu = os.cpus()[0]?.model ?? "unknown CPU";
console.log(
  [
    `Run ${new Date().toISOString().slice(0, 16)}Z, ${os.cpus().length} cores ${cpu}; nats-server cluster of 3 on loopback; ${RATE} entries/s for ${SECONDS} s.`,
    "",
    "| variant | NATS CPU per entry (3 servers) | NATS messages per entry | cores busy |",
    "| --- | --- | --- | --- |",
    ...rows,
  ].join("\n"),
);
