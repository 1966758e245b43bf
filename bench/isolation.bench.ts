// Tenants fenced from each other (issue 15, Targets): another tenant's search latency, and the
// slowest /healthz answer (how long the server could answer no one), while one tenant
//   - writes records with 32 clients, then also ingests a bulk file (`writers`);
//   - lists an index's 5,000 retained versions (`versions`);
//   - owns 10,000 indexes while retention passes over them (`indexes`).
// Each scenario runs a fresh `sift` process (embedded engine; PGlite, or PostgreSQL with
// DATABASE_URL) with rate limits off, since they would hide what the server itself does.
// Writes the isolation section of RESULTS.md.
//
//   npm run bench:isolation                     every scenario
//   npm run bench:isolation -- --only=writers   one (writers, versions, indexes)
//   npm run bench:isolation -- --seconds=10     shorter load phases
// To see where a stall comes from: BENCH_NODE_OPTIONS="--cpu-prof --cpu-prof-dir=/tmp/prof" gives
// the server a CPU profile, BENCH_SERVER_LOG=file keeps its output (both stop it with SIGTERM).
import { execSync } from "node:child_process";
import {
  closeSync,
  createReadStream,
  existsSync,
  openSync,
  readFileSync,
  statSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import os from "node:os";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { Readable } from "node:stream";
import path from "node:path";
import { Worker } from "node:worker_threads";
import { Http } from "../test/support/http.ts";
import { RATE_LIMITS_OFF } from "../test/support/limits.ts";
import { siftProcess, type SiftProcess } from "../test/support/process.ts";
import { createKey, signUp } from "../test/support/world.ts";
import { percentile, processMb, resetHighWaterMark } from "./measure.ts";

const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const only = args.get("only")?.split(",");
const SECONDS = Number(args.get("seconds") ?? 20);
const WRITERS = 32;
const SEARCHERS = 4;
const INGEST_RECORDS = Number(args.get("ingest-records") ?? 1_000_000);

const WORDS =
  "amber birch cedar delta ember fjord grove harbor island jasper kestrel lumen meadow nectar orchid prairie quartz river summit tundra umber violet willow xenon yarrow zephyr".split(
    " ",
  );
const title = (i: number) =>
  `${WORDS[(i * 7) % 26]} ${WORDS[(i * 13 + 5) % 26]} ${WORDS[(i * 17 + 11) % 26]} ${i % 9973}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const rssMb = processMb;
/** The peak read later is then the phase's, not start-up's. */
const resetPeak = (pid: number) => {
  if (!resetHighWaterMark(pid)) console.warn("the peak includes start-up: /proc/PID/clear_refs refused");
};

interface Tenant {
  key: string;
  service: string;
}

async function tenant(http: Http, label: string): Promise<Tenant> {
  const session = await signUp(http, `${label}-${Date.now()}@bench.example`);
  const key = await createKey(session, "adm");
  const service = `${label}-${Date.now()}`;
  await call(http, "POST", "/v1/services", key, { name: service });
  return { key, service };
}

async function call(http: Http, method: string, url: string, key: string, json?: unknown, ok = [200, 201]) {
  const reply = await http.request(method, url, { key, ...(json !== undefined ? { json } : {}) });
  if (!ok.includes(reply.status)) throw new Error(`${method} ${url}: ${reply.status} ${reply.text.slice(0, 300)}`);
  return reply.body;
}

/**
 * A file of `count` generated records as JSON Lines, written before any phase is timed: made
 * while the phase ran, it stalled this process (the load generator) for up to 900 ms, and every
 * search in flight was timed across the stall.
 */
function recordsFile(count: number): string {
  const file = path.join(os.tmpdir(), `sift-isolation-${count}.jsonl`);
  if (existsSync(file)) return file;
  const fd = openSync(file, "w");
  for (let i = 0; i < count; i += 10_000) {
    let chunk = "";
    for (let j = i; j < Math.min(i + 10_000, count); j++) {
      chunk += `${JSON.stringify({ id: `r${j}`, title: title(j), weight: (j % 1000) + 1 })}\n`;
    }
    writeSync(fd, chunk);
  }
  closeSync(fd);
  return file;
}

/** Uploads a file made by recordsFile and waits until the version is ready. */
async function upload(http: Http, t: Tenant, index: string, file: string): Promise<void> {
  const start = await call(http, "POST", "/v1/uploads/start", t.key, { indexName: index });
  const put = await fetch(start.uploadUrl, {
    method: "PUT",
    headers: { "content-type": "application/octet-stream", "content-length": String(statSync(file).size) },
    body: Readable.toWeb(createReadStream(file, { highWaterMark: 1 << 20 })) as ReadableStream,
    duplex: "half",
  } as RequestInit);
  if (put.status !== 200) throw new Error(`upload: ${put.status} ${await put.text()}`);
  await call(http, "POST", "/v1/uploads/complete", t.key, { indexName: index, indexVersion: start.indexVersion });
  for (;;) {
    const status = await call(http, "GET", `/v1/uploads/${index}/${start.indexVersion}`, t.key);
    if (status.state === "succeeded") return;
    if (status.state === "failed") throw new Error(`ingest failed: ${JSON.stringify(status)}`);
    await sleep(200);
  }
}

// The probe runs in a thread of its own: on the generator's thread, 36 busy clients delayed its
// own timers and reads by up to ~100 ms, which the table then counted as the server's stall.
const PROBE = `
const { parentPort, workerData } = require("node:worker_threads");
let running = true;
parentPort.on("message", () => { running = false; });
(async () => {
  while (running) {
    const asked = performance.now();
    await fetch(workerData.url + "/healthz").then((r) => r.arrayBuffer());
    parentPort.postMessage(performance.now() - asked);
    await new Promise((r) => setTimeout(r, 50));
  }
  parentPort.close();
})();
`;

/** /healthz every 50 ms from its own thread; the slowest answer since the last `take()`. */
function healthProbe(url: string) {
  let worst = 0;
  const worker = new Worker(PROBE, { eval: true, workerData: { url } });
  worker.on("message", (ms: number) => {
    worst = Math.max(worst, ms);
  });
  const done = new Promise<void>((resolve) => worker.once("exit", () => resolve()));
  return {
    take() {
      const w = worst;
      worst = 0;
      return w;
    },
    async stop() {
      worker.postMessage("stop");
      await done;
    },
  };
}

/** Closed-loop clients calling `one` until `until()` says stop; each call's latency is kept. */
async function loop(clients: number, until: () => boolean, one: (client: number, n: number) => Promise<void>) {
  const latencies: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  await Promise.all(
    Array.from({ length: clients }, async (_, client) => {
      for (let n = 0; !until(); n++) {
        const t0 = performance.now();
        try {
          await one(client, n);
          latencies.push(performance.now() - t0);
        } catch (error) {
          errors++;
          firstError ??= (error as Error).message.slice(0, 200);
        }
      }
    }),
  );
  return { latencies, errors, firstError };
}

interface Phase {
  scenario: string;
  phase: string;
  seconds: number;
  searchesPerS?: number;
  searchP50?: number;
  searchP99?: number;
  searchMax?: number;
  writesPerS?: number;
  writeP99?: number;
  worstHealthMs: number;
  peakAboveIdleMb: number;
  /** The load generator's own longest event-loop delay: a search timed across it waited on us. */
  generatorStallMs?: number;
  note?: string;
}

async function withServer<T>(env: Record<string, string>, run: (s: SiftProcess, http: Http) => Promise<T>) {
  const server = await siftProcess({
    SIFT_LOG_LEVEL: "warn",
    ...RATE_LIMITS_OFF,
    ...env,
    ...(process.env.BENCH_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_NODE_OPTIONS } : {}),
  });
  await server.start();
  try {
    return await run(server, new Http(server.url));
  } catch (error) {
    throw new Error(`${(error as Error).message}\n--- server output ---\n${server.output().slice(-3000)}`);
  } finally {
    if (process.env.BENCH_SERVER_LOG) {
      await server.kill("SIGTERM");
      await sleep(3000);
      (await import("node:fs")).writeFileSync(process.env.BENCH_SERVER_LOG, server.output());
    }
    await server.destroy();
  }
}

async function writersScenario(): Promise<Phase[]> {
  return withServer({ SIFT_MAX_UPLOAD_BYTES: String(8 * 1024 ** 3) }, async (server, http) => {
    const pid = server.pid()!;
    const a = await tenant(http, "writer");
    const b = await tenant(http, "reader");
    for (let i = 0; i < 8; i++) {
      await call(http, "POST", "/v1/indexes", a.key, { name: `w${i}`, serviceName: a.service, visibility: "PRIVATE" });
    }
    await call(http, "POST", "/v1/indexes", a.key, { name: "bulk", serviceName: a.service, visibility: "PRIVATE" });
    await call(http, "POST", "/v1/indexes", b.key, { name: "catalog", serviceName: b.service, visibility: "PRIVATE" });
    await upload(http, b, "catalog", recordsFile(50_000));
    const bulkFile = recordsFile(INGEST_RECORDS);
    const prefixes = WORDS.flatMap((w) => [
      w.slice(0, 2),
      w.slice(0, 4),
      `${w} ${WORDS[(w.length * 3) % 26]!.slice(0, 2)}`,
    ]);
    const search = (client: number, n: number) =>
      call(
        http,
        "GET",
        `/v1/search?query=${encodeURIComponent(prefixes[(client * 31 + n) % prefixes.length]!)}&indexName=catalog&serviceName=${b.service}`,
        b.key,
      ).then(() => undefined);
    let written = 0;
    const write = (client: number, n: number) =>
      call(http, "PUT", `/v1/indexes/w${client % 8}/records/c${client}-${n % 5000}`, a.key, {
        title: title(client * 100_000 + n),
        weight: (n % 100) + 1,
      }).then(() => void written++);

    const probe = healthProbe(server.url);
    const phases: Phase[] = [];
    const measure = async (phase: string, seconds: number, withWriters: boolean, ingest: boolean) => {
      await sleep(1000);
      const idle = rssMb(pid, "VmRSS");
      resetPeak(pid);
      probe.take();
      written = 0;
      let stop = false;
      let ingestDone = !ingest;
      let ingestNote: string | undefined;
      const started = performance.now();
      const generator = monitorEventLoopDelay({ resolution: 10 });
      generator.enable();
      const ingestRun = ingest
        ? (async () => {
            const t0 = performance.now();
            await upload(http, a, "bulk", bulkFile);
            ingestNote = `ingest of ${INGEST_RECORDS.toLocaleString("en")} records took ${((performance.now() - t0) / 1000).toFixed(1)} s`;
            ingestDone = true;
          })()
        : Promise.resolve();
      // Ingest phases last until the ingest is done (at least `seconds`).
      const until = () => stop || (performance.now() - started > seconds * 1000 && ingestDone);
      const [searches, writes] = await Promise.all([
        loop(SEARCHERS, until, search),
        withWriters
          ? loop(WRITERS, until, write)
          : Promise.resolve({ latencies: [], errors: 0, firstError: undefined }),
        ingestRun.finally(() => undefined),
      ]);
      stop = true;
      const elapsed = (performance.now() - started) / 1000;
      generator.disable();
      const row: Phase = {
        scenario: "writers",
        phase,
        seconds: elapsed,
        searchesPerS: searches.latencies.length / elapsed,
        searchP50: percentile(searches.latencies, 0.5),
        searchP99: percentile(searches.latencies, 0.99),
        searchMax: searches.latencies.reduce((m, v) => Math.max(m, v), 0),
        ...(withWriters ? { writesPerS: written / elapsed, writeP99: percentile(writes.latencies, 0.99) } : {}),
        worstHealthMs: probe.take(),
        peakAboveIdleMb: rssMb(pid, "VmHWM") - idle,
        generatorStallMs: generator.max / 1e6,
        ...(ingestNote ? { note: ingestNote } : {}),
      };
      if (searches.errors || writes.errors) {
        row.note = `${row.note ?? ""} errors: ${searches.errors + writes.errors} (${searches.firstError ?? writes.firstError})`;
      }
      console.log(row);
      phases.push(row);
    };
    await measure("searches alone", Math.min(SECONDS, 10), false, false);
    await measure(`+ ${WRITERS} writers`, SECONDS, true, false);
    await measure(`+ ${WRITERS} writers + an ingest`, SECONDS, true, true);
    await probe.stop();
    return phases;
  });
}

async function versionsScenario(): Promise<Phase[]> {
  return withServer(
    { SIFT_RETAIN_VERSIONS: "6000", SIFT_COALESCE_AFTER: "1000000", SIFT_RETENTION_EVERY_SECONDS: "86400" },
    async (server, http) => {
      const pid = server.pid()!;
      const a = await tenant(http, "versions");
      await call(http, "POST", "/v1/indexes", a.key, { name: "many", serviceName: a.service, visibility: "PRIVATE" });
      let next = 0;
      await loop(
        8,
        () => next >= 5_000,
        async () => {
          const i = next++;
          await call(http, "PUT", `/v1/indexes/many/records/r${i}`, a.key, { title: title(i) });
        },
      );
      await sleep(1000);
      const idle = rssMb(pid, "VmRSS");
      resetPeak(pid);
      const probe = healthProbe(server.url);
      await sleep(200);
      probe.take();
      const times: number[] = [];
      let listed = 0;
      for (let i = 0; i < 5; i++) {
        const t0 = performance.now();
        listed = (await call(http, "GET", "/v1/indexes/many/versions", a.key)).versions.length;
        times.push(performance.now() - t0);
      }
      const row: Phase = {
        scenario: "versions",
        phase: `list ${listed.toLocaleString("en")} versions, 5 times`,
        seconds: times.reduce((x, y) => x + y, 0) / 1000,
        worstHealthMs: probe.take(),
        peakAboveIdleMb: rssMb(pid, "VmHWM") - idle,
        note: `one listing ${Math.max(...times).toFixed(0)} ms at most`,
      };
      console.log(row);
      // A checkpoint of the 5,000-change chain: built in a thread, then opened here.
      resetPeak(pid);
      probe.take();
      const c0 = performance.now();
      const coalesced = (await call(http, "POST", "/v1/indexes/many/coalesce", a.key)).indexVersion;
      const checkpoint: Phase = {
        scenario: "versions",
        phase: "coalesce the 5,000-change chain",
        seconds: (performance.now() - c0) / 1000,
        worstHealthMs: probe.take(),
        peakAboveIdleMb: rssMb(pid, "VmHWM") - idle,
        note: `checkpoint ${coalesced}`,
      };
      console.log(checkpoint);
      await probe.stop();
      return [row, checkpoint];
    },
  );
}

async function indexesScenario(): Promise<Phase[]> {
  return withServer({ SIFT_QUOTA_INDEXES: "11000", SIFT_RETENTION_EVERY_SECONDS: "5" }, async (server, http) => {
    const pid = server.pid()!;
    const a = await tenant(http, "indexes");
    const probe = healthProbe(server.url);
    let next = 0;
    const t0 = performance.now();
    await loop(
      8,
      () => next >= 10_000,
      async () => {
        const i = next++;
        await call(http, "POST", "/v1/indexes", a.key, {
          name: `i${i}`,
          serviceName: a.service,
          visibility: "PRIVATE",
        });
      },
    );
    const created: Phase = {
      scenario: "indexes",
      phase: "create 10,000 indexes (8 clients)",
      seconds: (performance.now() - t0) / 1000,
      worstHealthMs: probe.take(),
      peakAboveIdleMb: 0,
    };
    await sleep(1000);
    const idle = rssMb(pid, "VmRSS");
    resetPeak(pid);
    probe.take();
    // Retention passes every 5 s over all 10,000 indexes.
    await sleep(16_000);
    const idleRow: Phase = {
      scenario: "indexes",
      phase: "idle 16 s with retention every 5 s",
      seconds: 16,
      worstHealthMs: probe.take(),
      peakAboveIdleMb: rssMb(pid, "VmHWM") - idle,
    };
    await probe.stop();
    console.log(created, idleRow);
    return [created, idleRow];
  });
}

const scenarios: Record<string, () => Promise<Phase[]>> = {
  writers: writersScenario,
  versions: versionsScenario,
  indexes: indexesScenario,
};
const rows: Phase[] = [];
for (const [name, run] of Object.entries(scenarios)) {
  if (only && !only.includes(name)) continue;
  console.log(`scenario ${name}…`);
  rows.push(...(await run()));
}

const f = (v: number | undefined, digits = 0) => (v === undefined ? "" : v.toFixed(digits));
const commit = execSync("git rev-parse --short HEAD").toString().trim();
const cpu = os.cpus()[0]?.model ?? "unknown CPU";
const store = process.env.DATABASE_URL ? "PostgreSQL" : "PGlite";
const resultsPath = path.join(import.meta.dirname, "RESULTS.md");
const current = readFileSync(resultsPath, "utf8");
// Rows of scenarios not run this time are kept from the last run (they say so in their note).
const ran = new Set(rows.map((r) => r.scenario));
const kept = (/<!-- isolation:start -->[\s\S]*<!-- isolation:end -->/.exec(current)?.[0] ?? "")
  .split("\n")
  .filter((l) => /^\| (writers|versions|indexes) \|/.test(l) && !ran.has(l.split("|")[1]!.trim()))
  .map((l) => (l.includes("earlier run") ? l : l.replace(/ \|$/, " (earlier run) |")));
const section = `<!-- isolation:start -->
## Isolation and stalls (issue 15)

${new Date().toISOString().slice(0, 10)}, commit ${commit}, ${os.cpus().length} × ${cpu}, ${Math.round(os.totalmem() / 1024 ** 3)} GB,
Node ${process.version}, embedded engine on ${store}, rate limits off; load generator on the same machine.
\`npm run bench:isolation\`. Another tenant searches its 50,000-record index with ${SEARCHERS} clients;
/healthz is asked every 50 ms throughout. Targets: other tenants' search p99 ≤ 20 ms during 32
writers and an ingest; worst /healthz ≤ 100 ms in every scenario; memory ≤ 1 GB above idle.

| scenario | phase | s | searches/s | search p50 ms | p99 ms | max ms | writes/s | write p99 ms | worst /healthz ms | peak above idle MB | generator stall ms | note |
| -------- | ----- | - | ---------- | ------------- | ------ | ------ | -------- | ------------ | ----------------- | ------------------ | ------------------ | ---- |
${rows
  .map(
    (r) =>
      `| ${r.scenario} | ${r.phase} | ${f(r.seconds, 1)} | ${f(r.searchesPerS)} | ${f(r.searchP50, 1)} | ${f(r.searchP99, 1)} | ${f(r.searchMax)} | ${f(r.writesPerS)} | ${f(r.writeP99)} | ${f(r.worstHealthMs)} | ${f(r.peakAboveIdleMb)} | ${f(r.generatorStallMs)} | ${r.note ?? ""} |`,
  )
  .concat(kept)
  .join("\n")}
<!-- isolation:end -->`;
if (args.has("no-write")) console.log(section);
else {
  writeFileSync(
    resultsPath,
    current.includes("<!-- isolation:start -->")
      ? current.replace(/<!-- isolation:start -->[\s\S]*<!-- isolation:end -->/, section)
      : `${current.trimEnd()}\n\n${section}\n`,
  );
  console.log(section);
}
