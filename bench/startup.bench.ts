// How long a Sift process takes from `node server/src/main.ts` until it answers, restarted on the
// data it had: what a node killed with SIGKILL costs before it serves again (the failover figure
// of `npm run bench:replication`), and what every test that starts Sift waits for.
//   - embedded: the `npm start` default, PGlite in the data directory;
//   - PostgreSQL: with `DATABASE_URL` (a database of its own, made and dropped by the run).
// Each mode starts once untimed (it migrates, and fills Node's compile cache as a deployment's
// first start does), then `--runs` times, each process killed with SIGKILL once it answered.
// Timed: start until GET /healthz answers 200, and the process's CPU (all its threads) by then.
// `--server=<path>` times another checkout's main.ts, for before/after pairs in the same hour.
//
//   npm run bench:startup                       10 starts per mode
//   npm run bench:startup -- --runs=20 --server=/tmp/before/server/src/main.ts
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import { join, resolve } from "node:path";
import { createTempDatabase } from "../server/test/support/store.ts";
import { freePort } from "../test/support/ports.ts";
import { percentile } from "./measure.ts";

const args = new Map(
  process.argv.slice(2).map((arg) => {
    const [key, value] = arg.replace(/^--/, "").split("=");
    return [key!, value ?? "true"] as const;
  }),
);
const runs = Number(args.get("runs") ?? 10);
const main = resolve(args.get("server") ?? join(import.meta.dirname, "../server/src/main.ts"));
const TICKS = 100; // USER_HZ on Linux: /proc/<pid>/stat counts CPU in hundredths of a second

/** User + system CPU of a process and all its threads, in ms. */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS;
}

async function answers(url: string): Promise<boolean> {
  try {
    return (await fetch(url, { signal: AbortSignal.timeout(1_000) })).status === 200;
  } catch {
    // Not listening yet: the start goes on.
    return false;
  }
}

/** One start on `dataDir` and `port`: ms until /healthz answers, and the CPU used by then; then SIGKILL. */
async function start(dataDir: string, port: number, env: Record<string, string>): Promise<{ ms: number; cpu: number }> {
  const started = performance.now();
  const child = spawn(process.execPath, [main], {
    env: { ...process.env, PORT: String(port), SIFT_DATA_DIR: dataDir, SIFT_DEMO: "false", ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let output = "";
  child.stderr!.on("data", (d) => (output += d));
  const exited = new Promise((done) => child.once("exit", done));
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`sift exited with ${child.exitCode}:\n${output}`);
      if (await answers(`http://127.0.0.1:${port}/healthz`)) break;
      if (performance.now() - started > 60_000) throw new Error(`sift did not answer in 60 s:\n${output}`);
      await new Promise((r) => setTimeout(r, 5));
    }
    return { ms: performance.now() - started, cpu: cpuMs(child.pid!) };
  } finally {
    child.kill("SIGKILL");
    await exited;
  }
}

async function mode(name: string, env: Record<string, string>) {
  const dataDir = mkdtempSync(join(os.tmpdir(), "sift-startup-"));
  // The same port each time: it is part of the node's default id, and a process restarted in its
  // place takes over the PostgreSQL database's lease at once (D-325), as a restarted server does.
  const port = await freePort();
  try {
    await start(dataDir, port, env);
    const times: number[] = [];
    const cpu: number[] = [];
    for (let i = 0; i < runs; i++) {
      const run = await start(dataDir, port, env);
      times.push(run.ms);
      cpu.push(run.cpu);
    }
    const fmt = (values: number[]) =>
      `${percentile(values, 0.5).toFixed(0)} / ${percentile(values, 0.9).toFixed(0)} ms`;
    return `| ${name} | ${fmt(times)} | ${fmt(cpu)} |`;
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const rows = [await mode("embedded (PGlite)", { DATABASE_URL: "" })];
if (process.env.DATABASE_URL) {
  const database = await createTempDatabase(process.env.DATABASE_URL);
  try {
    rows.push(await mode("PostgreSQL", { DATABASE_URL: database.url }));
  } finally {
    await database.drop();
  }
}
const cpus = os.cpus();
console.log(
  [
    `Run ${new Date().toISOString().slice(0, 16)}Z, ${cpus.length} cores ${cpus[0]?.model.trim()}, Node ${process.versions.node}; ${main}; ${runs} restarts per mode after one untimed start.`,
    "",
    "| mode | start to /healthz p50 / p90 | CPU by then p50 / p90 |",
    "| --- | --- | --- |",
    ...rows,
  ].join("\n"),
);
