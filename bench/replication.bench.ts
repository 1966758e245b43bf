// Regions for real (issue 18, Targets), on loopback: three Sift regions sharing one PostgreSQL
// and a private three-server NATS JetStream cluster (stream R3), against one Sift process
// without replication in the same run.
//   - writes: record writes at a fixed rate spread over the regions; each write's
//     acknowledgement time, and the time from acknowledgement until both other regions serve it
//     (a read with minVersion, which the region answers once it has applied the version);
//   - bulk: one upload of N records to one region, until it is searchable in every region,
//     against the same upload to the single process.
// Prints the figures as a Markdown table for bench/RESULTS.md ("Replication").
//
//   npm run bench:replication                       500 writes/s for 20 s, 1,000,000 records
//   npm run bench:replication -- --rate=200 --seconds=10 --records=100000 --warmup=3
//   npm run bench:replication -- --rate=500 --seconds=10 --single-writes-only
//   npm run bench:replication -- --lag-every=5     lag read back on every 5th write only
//   npm run bench:replication -- --rate=100 --seconds=10 --roles
//                 what one write costs each node: every write to the first region, CPU by thread
//   npm run bench:replication -- --coalesce-after=100000
//                 no automatic checkpoint during the writes (SIFT_COALESCE_AFTER; default 2,000)
//   npm run bench:replication -- --snapshot-every=200
//                 snapshots of each index during the writes (SIFT_REPLICATION_SNAPSHOT_EVERY; default 10,000)
//   npm run bench:replication -- --bulk-only
//                 only the 1M-record upload, and how long each of its steps took on the node
//                 uploaded to (read from the nodes' info logs, which would log every write)
//   npm run bench:replication -- --steal=0.6
//                 a slow hour, emulated: a process beside the run keeps 0.6 of a core busy
import { spawn } from "node:child_process";
import http from "node:http";
import os from "node:os";
import { statSync, writeFileSync } from "node:fs";
import { type Keyed, keyed, type Regions, startRegions } from "../test/support/regions.ts";
import { type SiftProcess, siftProcess } from "../test/support/process.ts";
import { RATE_LIMITS_OFF } from "../test/support/limits.ts";
import { createKey, signUp } from "../test/support/world.ts";
import { Http } from "../test/support/http.ts";
import {
  cpuByGroup,
  cpuByThread,
  cpuOfProcess,
  cpuSpent,
  machineSpeed,
  machineSpeedLine,
  percentile,
} from "./measure.ts";
import { uploadAndWait } from "./upload.ts";
import { DEFAULT_COALESCE_AFTER, DEFAULT_NATS_STREAM } from "../server/src/config.ts";

const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const RATE = Number(args.get("rate") ?? 500);
const SECONDS = Number(args.get("seconds") ?? 20);
const RECORDS = Number(args.get("records") ?? 1_000_000);
/** Writes to one index are serial (each version builds on the last): the rate is spread over these. */
const INDEXES = Number(args.get("indexes") ?? 6);
const CONTENDED = args.has("contended");
/**
 * Lag is read back on every N-th write only: each measured write costs the two other regions a
 * read each, two thirds of the requests at the default of every write, on the same cores as the
 * writes they measure.
 */
const LAG_EVERY = Number(args.get("lag-every") ?? 1);
/**
 * Only the cost of a write by role: every write goes to the first region (the writer), none is
 * read back, and the CPU each node's threads, NATS and PostgreSQL used is divided by the writes.
 */
const ROLES = args.has("roles");
/** Only the one-process write phase (an A/B of the write path without replication). */
const SINGLE_WRITES_ONLY = args.has("single-writes-only");
/** Only the uploads, with the nodes logging at info: the steps of each, from its node's log. */
const BULK_ONLY = args.has("bulk-only");
/**
 * The share of one core (0 to 1) a process beside the run keeps busy, in 10 ms periods: the
 * machine's slow hours, when a write costs half as much again, emulated in any hour, so that
 * changes can be compared where the targets are at stake (bench/RESULTS.md, 2026-11-29).
 */
const STEAL = Number(args.get("steal") ?? 0);
/**
 * Seconds of the same load before the measured one, not counted: a process just started runs its
 * code unoptimised and opens its connections on the first writes (at 100 writes/s these made the
 * one-process p99 292 ms, 2026-11-25).
 */
const WARMUP = Number(args.get("warmup") ?? 3);
/** The open-loop load opens a connection per write in flight; the per-client cap would refuse them. */
// One tenant writes everything here: its bound on writes in progress would be the bottleneck.
const ENV = {
  ...RATE_LIMITS_OFF,
  SIFT_MAX_CONNECTIONS_PER_CLIENT: "100000",
  SIFT_WRITES_PER_TENANT: "64",
  // Each index checkpoints after this many writes (the server's default unless given: 2,000, the
  // first time at 1,001 to 2,000): at 500 writes/s over 6 indexes, every index does so about once
  // in 20 s, and the writes of those moments make most of the three regions' p99 (bench/RESULTS.md,
  // Replication). A run of 10 s may catch few of them.
  ...(args.has("coalesce-after") ? { SIFT_COALESCE_AFTER: args.get("coalesce-after")! } : {}),
  // Each index is snapshotted after this many of its entries (10,000 unless given: none during a
  // 20 s run); a lower figure shows what a snapshot costs the writes of its moment.
  ...(args.has("snapshot-every") ? { SIFT_REPLICATION_SNAPSHOT_EVERY: args.get("snapshot-every")! } : {}),
  ...(BULK_ONLY ? { SIFT_LOG_LEVEL: "info" } : {}),
};
process.env.DATABASE_URL ??= "postgres://postgres@127.0.0.1:5432/test";

const WORDS = "amber birch cedar delta ember fjord grove harbor island jasper kestrel lumen meadow nectar".split(" ");
const title = (i: number) => `${WORDS[(i * 7) % 14]} ${WORDS[(i * 13 + 5) % 14]} ${i % 9973}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ms = (n: number) => `${n.toFixed(1)} ms`;

/**
 * The write load's own client: node:http with kept-alive connections. The generator shares the
 * machine's two cores with what it measures, and fetch costs it about three times the CPU per
 * request (0.92 ms of generator CPU per write and its two reads, measured 2026-11-25).
 */
/** A reply's JSON body, or its text when it is not JSON. */
type LeanBody = Record<string, unknown> | string;
const field = (body: LeanBody | undefined, name: string) => (typeof body === "object" ? body[name] : undefined);
interface Lean {
  get(path: string): Promise<{ status: number; body: LeanBody }>;
  put(path: string, json: unknown): Promise<{ status: number; body: LeanBody }>;
}
function lean(base: string, key: string): Lean {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  const url = new URL(base);
  const send = (method: string, path: string, json?: unknown, retried = false) =>
    new Promise<{ status: number; body: LeanBody }>((resolve, reject) => {
      const payload = json === undefined ? undefined : JSON.stringify(json);
      const req = http.request(
        {
          agent,
          host: url.hostname,
          port: url.port,
          method,
          path,
          headers: {
            authorization: `Bearer ${key}`,
            ...(payload ? { "content-type": "application/json", "content-length": Buffer.byteLength(payload) } : {}),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () => {
            const text = Buffer.concat(chunks).toString("utf8");
            let body: LeanBody = text;
            // biome-ignore lint/plugin: a body that is not JSON is reported as its text.
            try {
              body = JSON.parse(text);
            } catch {}
            resolve({ status: res.statusCode ?? 0, body });
          });
          res.on("error", reject);
        },
      );
      req.on("error", (error: NodeJS.ErrnoException) => {
        // A kept-alive connection the server closed as idle just as this request went out: sent
        // again once on a new one, as Node's documentation advises (the server never read it).
        if (req.reusedSocket && error.code === "ECONNRESET" && !retried) {
          send(method, path, json, true).then(resolve, reject);
        } else reject(error);
      });
      req.end(payload);
    });
  return { get: (path) => send("GET", path), put: (path, json) => send("PUT", path, json) };
}

/** Writes at RATE per second for SECONDS to the given regions in turn; lag measured on the others. */
async function writeLoad(regions: Lean[], indexes: string[], seconds = SECONDS, prefix = "w") {
  const acks: number[] = [];
  const lags: number[] = [];
  let failed = 0;
  const why = new Map<string, number>();
  const pending: Promise<void>[] = [];
  const from = Date.now();
  const started = performance.now();
  const total = RATE * seconds;
  for (let i = 0; i < total; i++) {
    const due = started + (i * 1000) / RATE;
    const wait = due - performance.now();
    if (wait > 1) await sleep(wait);
    // Each index is written in one region (its writers are near it), the regions in turn; with
    // --contended every index is written from every region, which costs retries (D-211).
    const k = i % indexes.length;
    const index = indexes[k]!;
    const origin = (CONTENDED ? i : k) % regions.length;
    pending.push(
      (async () => {
        const t0 = performance.now();
        const reply = await regions[origin]!.put(`/v1/indexes/${index}/records/${prefix}-${i}`, {
          title: title(i),
        }).catch((error: Error) => ({
          status: 0,
          body: { detail: `${error.message}: ${String((error.cause as Error)?.message)}` },
        }));
        const acked = performance.now();
        if (reply.status !== 200) {
          failed++;
          const reason = `${reply.status} ${String(field(reply.body, "detail") ?? "").slice(0, 80)}`;
          why.set(reason, (why.get(reason) ?? 0) + 1);
          return;
        }
        acks.push(acked - t0);
        if (regions.length === 1 || i % LAG_EVERY !== 0) return;
        const version = field(reply.body, "indexVersion") as string;
        const others = regions.filter((_, n) => n !== origin);
        const reads = await Promise.all(
          others.map(async (r) => {
            // A read that fails outright is counted below with the reads that answer otherwise.
            // biome-ignore lint/plugin: counted as a failed read, with its reason, just below.
            const read = await r
              .get(`/v1/indexes/${index}/records/${prefix}-${i}?minVersion=${version}`)
              .catch(() => undefined);
            if (read?.status !== 200) {
              const reason = `read ${read?.status ?? "network error"} ${String(field(read?.body, "detail") ?? "").slice(0, 60)}`;
              why.set(reason, (why.get(reason) ?? 0) + 1);
            }
            return { ok: read?.status === 200, at: performance.now() };
          }),
        );
        if (reads.some((r) => !r.ok)) failed++;
        else lags.push(Math.max(...reads.map((r) => r.at)) - acked);
      })(),
    );
  }
  await Promise.all(pending);
  if (why.size) console.log("failed writes:", Object.fromEntries(why));
  return { acks, lags, failed, seconds: (performance.now() - started) / 1000, from, to: Date.now() };
}

/** Checkpoints of the indexes made while the writes ran (automatic ones: every SIFT_COALESCE_AFTER writes). */
async function checkpointsDuring(region: Lean, indexes: string[], window: { from: number; to: number }) {
  let count = 0;
  for (const index of indexes) {
    const list = await region.get(`/v1/indexes/${index}/versions`);
    const items = (field(list.body, "versions") ?? []) as { kind: string; createdAt: number }[];
    count += items.filter(
      (v) => v.kind === "checkpoint" && v.createdAt >= window.from && v.createdAt <= window.to,
    ).length;
  }
  return count;
}

/** Kills the last region, writes while it is down, restarts it: how long until it serves again. */
async function killAndRestart(r: Awaited<ReturnType<typeof startRegions>>, index: string) {
  const node = r.nodes.at(-1)!;
  await node.kill("SIGKILL");
  const missed = 200;
  let version = "";
  for (let i = 0; i < missed; i++) {
    const put = await r.http(0).put(`/v1/indexes/${index}/records/down-${i}`, { title: title(i) });
    version = put.body.indexVersion;
  }
  const t0 = performance.now();
  await node.start();
  const serving = performance.now() - t0;
  const back = keyed(node.url, r.key);
  while ((await back.get(`/v1/indexes/${index}/records/down-${missed - 1}?minVersion=${version}`)).status !== 200) {
    await sleep(20);
  }
  return { missed, serving, caughtUp: performance.now() - t0 };
}

/** Which group a process's CPU counts for: the generator (this process), Sift, NATS, PostgreSQL. */
const groupOf = (sift: () => (number | undefined)[]) => (pid: number, command: string) => {
  if (pid === process.pid) return "generator";
  if (sift().includes(pid)) return "sift";
  if (command === "nats-server") return "nats";
  if (command === "postgres") return "postgresql";
  return undefined;
};

/**
 * Waits until Sift, NATS and PostgreSQL use less than a tenth of a core for a whole second (at
 * most `limitMs`), so that a phase does not pay for what the one before left running: after the
 * writes, indexes' automatic checkpoints are built and published, and the other nodes fetch them.
 * Returns the seconds waited.
 */
async function untilQuiet(sift: () => (number | undefined)[], limitMs = 60_000): Promise<number> {
  const group = groupOf(sift);
  const t0 = performance.now();
  for (;;) {
    const before = cpuByGroup(group);
    await sleep(1_000);
    const spent = cpuSpent(cpuByGroup(group), before);
    const busy = ["sift", "nats", "postgresql"].reduce((sum, name) => sum + (spent.get(name) ?? 0), 0);
    if (busy < 0.1 || performance.now() - t0 > limitMs) return (performance.now() - t0) / 1000;
  }
}

/** Where the CPU goes while `run` runs: the generator (this process), Sift, NATS, PostgreSQL. */
async function withCpu<T>(sift: () => (number | undefined)[], run: () => Promise<T>) {
  const group = groupOf(sift);
  const before = cpuByGroup(group);
  const t0 = performance.now();
  const result = await run();
  const wall = (performance.now() - t0) / 1000;
  return { result, cpu: cpuSpent(cpuByGroup(group), before), wall };
}

const cpuLine = (label: string, m: { cpu: Map<string, number>; wall: number }, per?: number) => {
  const order = ["sift", "nats", "postgresql", "generator"];
  const total = order.reduce((sum, name) => sum + (m.cpu.get(name) ?? 0), 0);
  const cells = order.map((name) => {
    const s = m.cpu.get(name) ?? 0;
    return per ? `${((s * 1000) / per).toFixed(2)} ms` : `${s.toFixed(1)} s`;
  });
  const all = per ? `${((total * 1000) / per).toFixed(2)} ms` : `${total.toFixed(1)} s`;
  return `| ${label} | ${cells.join(" | ")} | ${all} | ${(total / m.wall).toFixed(2)} |`;
};

/** Creates the indexes in the first region and waits until every region has them. */
async function createEverywhere(r: Awaited<ReturnType<typeof startRegions>>, names: string[]) {
  const regions = r.nodes.map((_, n) => r.http(n));
  for (const name of names) {
    await regions[0]!.post("/v1/indexes", { name, serviceName: r.service, visibility: "PUBLIC" });
    for (const region of regions) while ((await region.get(`/v1/indexes/${name}`)).status !== 200) await sleep(20);
  }
}

/**
 * Entries in the change log so far (its stream's last position, as the server that has most of it
 * says): writes per entry is what group commit (D-220) gathers, and NATS costs per entry.
 */
async function logEntries(r: Regions): Promise<number> {
  let last = 0;
  for (const server of r.nats.servers) {
    const jsz = (await (await fetch(`${server.monitor}/jsz?streams=true`)).json()) as {
      account_details?: { stream_detail?: { name: string; state: { last_seq: number } }[] }[];
    };
    for (const account of jsz.account_details ?? [])
      for (const stream of account.stream_detail ?? [])
        if (stream.name === DEFAULT_NATS_STREAM) last = Math.max(last, stream.state.last_seq);
  }
  return last;
}

/** --roles: what one write costs the node that takes it, each node that applies it, NATS and PostgreSQL. */
async function roles() {
  const r = await startRegions(["frankfurt", "london", "newark"], ENV);
  try {
    const names = Array.from({ length: INDEXES }, (_, k) => `writes-${k}`);
    await createEverywhere(r, names);
    const writer = [lean(r.nodes[0]!.url, r.key)];
    await writeLoad(writer, names, WARMUP, "warm");
    const pids = r.nodes.map((node) => node.pid()!);
    const messages = async () => {
      let total = 0;
      for (const server of r.nats.servers) {
        const varz = (await (await fetch(`${server.monitor}/varz`)).json()) as { in_msgs: number; out_msgs: number };
        total += varz.in_msgs + varz.out_msgs;
      }
      return total;
    };
    const threadsBefore = pids.map(cpuByThread);
    const messagesBefore = await messages();
    const entriesBefore = await logEntries(r);
    const measured = await withCpu(
      () => pids,
      () => writeLoad(writer, names),
    );
    const entries = (await logEntries(r)) - entriesBefore;
    const threadsAfter = pids.map(cpuByThread);
    const perWrite = (seconds: number) => `${((seconds * 1000) / measured.result.acks.length).toFixed(2)} ms`;
    const threadNames = ["MainThread", "WorkerThread", "V8Worker", "libuv-worker"];
    console.log(
      `\n${runLine()}: ${RATE} writes/s for ${SECONDS} s, all to ${r.regionIds[0]}, ${measured.result.acks.length} answered, ${measured.result.failed} failed; acknowledgement p50 / p99 ${ms(percentile(measured.result.acks, 0.5))} / ${ms(percentile(measured.result.acks, 0.99))}.\n`,
    );
    console.log(`CPU per write, by node and thread (${threadNames.join(", ")}):\n`);
    console.log("| node | all threads | main | worker threads | V8 helpers | libuv pool |");
    console.log("| --- | --- | --- | --- | --- | --- |");
    pids.forEach((_, n) => {
      const spent = cpuSpent(threadsAfter[n]!, threadsBefore[n]!);
      const all = [...spent.values()].reduce((a, b) => a + b, 0);
      const cells = threadNames.map((name) => perWrite(spent.get(name) ?? 0));
      console.log(
        `| ${n === 0 ? "writer" : "applies"} (${r.regionIds[n]}) | ${perWrite(all)} | ${cells.join(" | ")} |`,
      );
    });
    console.log(
      `\nNATS ${perWrite(measured.cpu.get("nats") ?? 0)}, PostgreSQL ${perWrite(measured.cpu.get("postgresql") ?? 0)}, load generator ${perWrite(measured.cpu.get("generator") ?? 0)}; NATS messages in and out over all servers: ${(((await messages()) - messagesBefore) / measured.result.acks.length).toFixed(1)} per write; ${(measured.result.acks.length / entries).toFixed(2)} writes per log entry.`,
    );
  } finally {
    await r.stop();
  }
}

/** When and on what a run ran: the first line of every table this bench prints. */
const runLine = () =>
  `Run ${new Date().toISOString().slice(0, 16)}Z, ${os.cpus().length} cores ${os.cpus()[0]?.model ?? "unknown CPU"}, ${Math.round(os.totalmem() / 2 ** 30)} GB, Node ${process.versions.node}; NATS 2.9 cluster of 3 on loopback, stream R3${stealNote()}; before the run, ${machineSpeedLine(speed)}`;

const stealNote = () => (STEAL > 0 ? `; a process beside the run kept ${STEAL} of a core busy (--steal)` : "");

/** --steal: a child process busy `STEAL` of every 10 ms; not counted in any group's CPU. */
function startSteal(): () => void {
  if (Number.isNaN(STEAL) || STEAL < 0 || STEAL > 1) throw new Error("--steal is a share of one core, from 0 to 1");
  if (STEAL === 0) return () => {};
  // It ends with this process however that ends: its channel to this one closes.
  const busy = `process.on("disconnect", () => process.exit(0));
    const tick = () => { const end = performance.now() + ${STEAL * 10}; while (performance.now() < end); setTimeout(tick, ${(1 - STEAL) * 10}); };
    tick();`;
  const child = spawn(process.execPath, ["-e", busy], { stdio: ["ignore", "ignore", "inherit", "ipc"] });
  return () => child.kill("SIGKILL");
}

/** The last info log line with message `msg` in a node's output, as its fields. */
function lastLogged(output: string, msg: string): Record<string, unknown> | undefined {
  let found: Record<string, unknown> | undefined;
  for (const line of output.split("\n")) {
    if (!line.includes(`"msg":"${msg}"`)) continue;
    found = JSON.parse(line) as Record<string, unknown>;
  }
  return found;
}

/**
 * An upload's steps on the node it was sent to, in seconds, from its "ingest succeeded" line and,
 * replicated, its "segment files published" line: records read and added; the segment built and
 * its log entry appended; its files compressed and stored in NATS; then until every other node
 * held them. The node logs its line just after the upload shows as succeeded: waited for.
 */
async function bulkSteps(node: SiftProcess) {
  let ingest = lastLogged(node.output(), "ingest succeeded");
  for (let waited = 0; ingest === undefined && waited < 10_000; waited += 50) {
    await sleep(50);
    ingest = lastLogged(node.output(), "ingest succeeded");
  }
  if (ingest === undefined) throw new Error('no "ingest succeeded" in the node\'s log');
  const files = lastLogged(node.output(), "segment files published");
  const add = Number(ingest.addMs) / 1000;
  const commit = Number(ingest.commitMs) / 1000;
  const stored = files === undefined ? 0 : Number(files.storedMs) / 1000;
  const fetched = files === undefined ? 0 : Number(files.fetchedMs ?? files.storedMs) / 1000;
  return { add, build: commit - fetched, stored, fetched: fetched - stored };
}

async function main() {
  if (ROLES) return roles();
  const file = `${os.tmpdir()}/sift-replication-bench-${RECORDS}.csv`;
  try {
    statSync(file);
  } catch {
    const lines = ["id,title,weight"];
    for (let i = 0; i < RECORDS; i++) lines.push(`b-${i},${title(i)},${(i % 1000) + 1}`);
    writeFileSync(file, `${lines.join("\n")}\n`);
  }
  const mb = statSync(file).size / 1e6;
  console.log(`bulk file: ${RECORDS} records, ${mb.toFixed(0)} MB`);

  // One process, no replication: the baseline of the same run.
  const single = await siftProcess(ENV);
  await single.start();
  const session = await signUp(new Http(single.url), `bench-${Date.now()}@example.com`);
  const singleKey = await createKey(session, "adm");
  const one = keyed(single.url, singleKey);
  const names = Array.from({ length: INDEXES }, (_, k) => `writes-${k}`);
  const service = (await one.post("/v1/services", { name: `bench-${Date.now()}` })).body.name as string;
  for (const name of ["products", ...names]) {
    await one.post("/v1/indexes", { name, serviceName: service, visibility: "PUBLIC" });
  }
  if (BULK_ONLY) return bulkOnly(single, one, file, mb);
  console.log("single process: writes");
  const singleWriters = [lean(single.url, singleKey)];
  await writeLoad(singleWriters, names, WARMUP, "warm");
  const singleWritesCpu = await withCpu(
    () => [single.pid()],
    () => writeLoad(singleWriters, names),
  );
  const singleWrites = singleWritesCpu.result;
  if (SINGLE_WRITES_ONLY) {
    console.log(
      `one process: acknowledgement p50 / p99 ${ms(percentile(singleWrites.acks, 0.5))} / ${ms(percentile(singleWrites.acks, 0.99))}, ${singleWrites.failed} failed`,
    );
    console.log(cpuLine("writes, one process (per write)", singleWritesCpu, singleWrites.acks.length));
    await single.destroy();
    return;
  }
  const singleCheckpoints = await checkpointsDuring(singleWriters[0]!, names, singleWrites);
  const singleQuiet = await untilQuiet(() => [single.pid()]);
  console.log(`single process: bulk (quiet after ${singleQuiet.toFixed(1)} s)`);
  const singleBulkCpu = await withCpu(
    () => [single.pid()],
    () => uploadAndWait(one, "products", file, []),
  );
  const singleBulk = singleBulkCpu.result;
  await single.destroy();

  const r = await startRegions(["frankfurt", "london", "newark"], ENV);
  try {
    const regions = [0, 1, 2].map((n) => r.http(n));
    await createEverywhere(r, names);
    console.log("three regions: writes");
    const siftPids = () => r.nodes.map((node) => node.pid());
    const writers = r.nodes.map((node) => lean(node.url, r.key));
    await writeLoad(writers, names, WARMUP, "warm");
    const entriesBefore = await logEntries(r);
    const writesCpu = await withCpu(siftPids, () => writeLoad(writers, names));
    const writes = writesCpu.result;
    const entries = (await logEntries(r)) - entriesBefore;
    const checkpoints = await checkpointsDuring(writers[0]!, names, writes);
    const quiet = await untilQuiet(siftPids);
    console.log(`three regions: bulk (quiet after ${quiet.toFixed(1)} s)`);
    const bulkPids = r.nodes.map((node) => node.pid()!);
    const bulkBefore = bulkPids.map((pid) => ({ threads: cpuByThread(pid), all: cpuOfProcess(pid) }));
    const bulkCpu = await withCpu(siftPids, () => uploadAndWait(regions[0]!, r.index, file, regions.slice(1)));
    const bulk = bulkCpu.result;
    const bulkByNode = bulkPids.map((pid, n) => {
      const threads = cpuSpent(cpuByThread(pid), bulkBefore[n]!.threads);
      return { all: cpuOfProcess(pid) - bulkBefore[n]!.all, threads };
    });
    console.log("three regions: a region killed and restarted");
    const restart = await killAndRestart(r, names[0]!);

    const table = [
      `${runLine()}; PostgreSQL shared${ENV.SIFT_REPLICATION_SNAPSHOT_EVERY ? `; each index snapshotted every ${ENV.SIFT_REPLICATION_SNAPSHOT_EVERY} entries` : ""}.`,
      "",
      "| figure | one process, no replication | three regions | target |",
      "| --- | --- | --- | --- |",
      `| write acknowledgement p50 / p99 (${RATE}/s for ${SECONDS} s over ${INDEXES} indexes, after ${WARMUP} s of the same) | ${ms(percentile(singleWrites.acks, 0.5))} / ${ms(percentile(singleWrites.acks, 0.99))} | ${ms(percentile(writes.acks, 0.5))} / ${ms(percentile(writes.acks, 0.99))} | p99 ≤ 15 ms |`,
      `| acknowledged to readable in both other regions p50 / p99${LAG_EVERY > 1 ? ` (one write in ${LAG_EVERY})` : ""} | – | ${ms(percentile(writes.lags, 0.5))} / ${ms(percentile(writes.lags, 0.99))} | p50 ≤ 10 ms, p99 ≤ 50 ms |`,
      `| automatic checkpoints while the writes were measured (one per index every ${ENV.SIFT_COALESCE_AFTER ?? DEFAULT_COALESCE_AFTER} writes) | ${singleCheckpoints} | ${checkpoints} | |`,
      `| writes answered / failed | ${singleWrites.acks.length} / ${singleWrites.failed} | ${writes.acks.length} / ${writes.failed} | 0 failed |`,
      `| writes per change log entry (group commit) | – | ${(writes.acks.length / entries).toFixed(2)} | |`,
      `| bulk of ${RECORDS.toLocaleString("en")} records (${mb.toFixed(0)} MB): ingested where uploaded | ${(singleBulk.here / 1000).toFixed(1)} s | ${(bulk.here / 1000).toFixed(1)} s | |`,
      `| bulk: searchable in every region | – | ${(bulk.everywhere / 1000).toFixed(1)} s (${(bulk.everywhere / singleBulk.here).toFixed(2)}x one process) | ≤ 2x |`,
      `| bulk: started once Sift, NATS and PostgreSQL used under a tenth of a core for a second, after the writes | ${singleQuiet.toFixed(1)} s | ${quiet.toFixed(1)} s | |`,
      `| a region killed with SIGKILL (${restart.missed} writes made meanwhile): restart to serving, to caught up and serving the newest write | – | ${(restart.serving / 1000).toFixed(1)} s, ${(restart.caughtUp / 1000).toFixed(1)} s | |`,
      "",
      "CPU used, by process group (per write for the writes; cores busy = CPU seconds / wall seconds):",
      "",
      "| phase | Sift | NATS | PostgreSQL | load generator | all | cores busy |",
      "| --- | --- | --- | --- | --- | --- | --- |",
      cpuLine("writes, one process (per write)", singleWritesCpu, singleWrites.acks.length),
      cpuLine("writes, three regions (per write)", writesCpu, writes.acks.length),
      cpuLine(`bulk of ${RECORDS.toLocaleString("en")}, one process`, singleBulkCpu),
      cpuLine(`bulk of ${RECORDS.toLocaleString("en")}, three regions`, bulkCpu),
      "",
      "The bulk over three regions, CPU by Sift node and thread (worker threads: builds and file transfers; ended threads: those gone by the end, such as a download's):",
      "",
      "| node | all | main | worker threads | V8 helpers | libuv pool | ended threads |",
      "| --- | --- | --- | --- | --- | --- | --- |",
      ...bulkByNode.map(({ all, threads }, n) => {
        const named = ["MainThread", "WorkerThread", "V8Worker", "libuv-worker"].map((t) => threads.get(t) ?? 0);
        const live = [...threads.values()].reduce((a, b) => a + b, 0);
        const cells = [all, ...named, Math.max(0, all - live)].map((s) => `${s.toFixed(1)} s`);
        return `| ${n === 0 ? "uploaded to" : "receives"} (${r.regionIds[n]}) | ${cells.join(" | ")} |`;
      }),
    ].join("\n");
    console.log(`\n${table}\n`);
    writeFileSync(`${os.tmpdir()}/sift-replication-bench.md`, `${table}\n`);
  } finally {
    await r.stop();
  }
}

/** --bulk-only: the upload to one process, then to the first of three regions, step by step. */
async function bulkOnly(single: SiftProcess, one: Keyed, file: string, mb: number) {
  console.log("single process: bulk");
  const singleBulk = await withCpu(
    () => [single.pid()],
    () => uploadAndWait(one, "products", file, []),
  );
  const singleSteps = await bulkSteps(single);
  await single.destroy();
  const r = await startRegions(["frankfurt", "london", "newark"], ENV);
  try {
    console.log("three regions: bulk");
    const regions = [0, 1, 2].map((n) => r.http(n));
    const bulk = await withCpu(
      () => r.nodes.map((node) => node.pid()),
      () => uploadAndWait(regions[0]!, r.index, file, regions.slice(1)),
    );
    const steps = await bulkSteps(r.nodes[0]!);
    const s = (n: number) => `${n.toFixed(1)} s`;
    const table = [
      `${runLine()}. Bulk of ${RECORDS.toLocaleString("en")} records (${mb.toFixed(0)} MB), on the node uploaded to:`,
      "",
      "| step | one process | three regions |",
      "| --- | --- | --- |",
      `| records read and added | ${s(singleSteps.add)} | ${s(steps.add)} |`,
      `| segment built, its log entry appended | ${s(singleSteps.build)} | ${s(steps.build)} |`,
      `| its files compressed and stored in NATS (R3) | – | ${s(steps.stored)} |`,
      `| then until both other nodes held them | – | ${s(steps.fetched)} |`,
      `| from the file's PUT: ingested where uploaded | ${s(singleBulk.result.here / 1000)} | ${s(bulk.result.here / 1000)} |`,
      `| searchable in every region | – | ${s(bulk.result.everywhere / 1000)} (${(bulk.result.everywhere / singleBulk.result.here).toFixed(2)}x one process) |`,
      "",
      "| phase | Sift | NATS | PostgreSQL | load generator | all | cores busy |",
      "| --- | --- | --- | --- | --- | --- | --- |",
      cpuLine("one process", singleBulk),
      cpuLine("three regions", bulk),
    ].join("\n");
    console.log(`\n${table}\n`);
  } finally {
    await r.stop();
  }
}

// Measured before anything else runs (and before --steal starts).
const speed = await machineSpeed();
const stopSteal = startSteal();
try {
  await main();
} finally {
  stopSteal();
}
