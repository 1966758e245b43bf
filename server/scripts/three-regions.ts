#!/usr/bin/env node
// Three Sift regions on one machine (docs/replication.md): a three-server NATS JetStream cluster
// on loopback ports, and Sift in Frankfurt, London and Newark on ports 7701-7703, each with its
// own data directory under .sift-regions/, all sharing the PostgreSQL of DATABASE_URL (default:
// the local server's database `test`). Ctrl-C stops everything; the data stays for the next run.
// A process killed by hand (a region's failover, tried out) is started again on Enter.
// SIFT_REGIONS_PORT_OFFSET moves every port by that much (the tests run it beside other clusters).
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync } from "node:fs";
import { createServer } from "node:net";
import { resolve } from "node:path";

const NATS_SERVER = process.env.NATS_SERVER ?? "nats-server";
const root = resolve(process.env.SIFT_REGIONS_DIR ?? ".sift-regions");
const databaseUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const offset = Number(process.env.SIFT_REGIONS_PORT_OFFSET ?? 0);
const regions = [
  { id: "frankfurt", port: 7701, nats: 4301, cluster: 6301, monitor: 8301 },
  { id: "london", port: 7702, nats: 4302, cluster: 6302, monitor: 8302 },
  { id: "newark", port: 7703, nats: 4303, cluster: 6303, monitor: 8303 },
].map((r) => ({
  ...r,
  port: r.port + offset,
  nats: r.nats + offset,
  cluster: r.cluster + offset,
  monitor: r.monitor + offset,
}));
const children: ChildProcess[] = [];
/** How each process was started, by name, to start one again that was killed by hand. */
const specs = new Map<string, { command: string; args: string[]; env: Record<string, string> }>();
/** Processes that exited once all ran, by name: Enter starts them again. */
const exited = new Set<string>();

function run(name: string, command: string, args: string[], env: Record<string, string> = {}): void {
  // Stopping (another failed to start): nothing new is started, to be left running once this exits.
  if (stopping) return;
  specs.set(name, { command, args, env });
  const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ["ignore", "inherit", "inherit"] });
  child.on("error", (error: NodeJS.ErrnoException) => {
    process.stderr.write(
      error.code === "ENOENT"
        ? `${name}: ${command} is not installed or not on the PATH (set NATS_SERVER=/path/to/nats-server)\n`
        : `${name}: ${error.message}\n`,
    );
    process.exitCode = 1;
    stop();
  });
  child.on("exit", (code, signal) => {
    children.splice(children.indexOf(child), 1);
    if (stopping) return;
    process.stderr.write(`${name} exited (${code ?? signal})${started ? ": press Enter to start it again" : ""}\n`);
    if (started) exited.add(name);
    // While starting, one gone is a start that failed; once all run, one may be killed on purpose
    // (a region's failover, tried by hand) and the others go on.
    if (!started) {
      stop();
      process.exitCode = 1;
    }
  });
  children.push(child);
}

// Enter starts again what was killed: a NATS server rejoins its cluster, a Sift node catches up
// from the log where it stopped.
process.stdin.on("data", () => {
  if (!started || stopping) return;
  for (const name of exited) {
    const spec = specs.get(name)!;
    exited.delete(name);
    process.stderr.write(`starting ${name} again\n`);
    run(name, spec.command, spec.args, spec.env);
  }
});
// Run without a terminal (stdin closed): nothing to read, and nothing keeps the script waiting.
process.stdin.on("end", () => process.stdin.pause());

async function waitFor(url: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    // Not listening yet, or not ready (503).
    const ready = await fetch(url).then(
      (reply) => reply.ok,
      () => false,
    );
    if (ready) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not answer`);
}

let stopping = false;
let started = false;
function stop(): void {
  stopping = true;
  for (const child of [...children].reverse()) child.kill("SIGTERM");
  setTimeout(() => process.exit(), 2_000);
}
process.on("SIGINT", stop);
process.on("SIGTERM", stop);

/** Whether something listens on the port already (another run of this script, most likely). */
function taken(port: number): Promise<boolean> {
  return new Promise((done) => {
    const probe = createServer()
      .once("error", () => done(true))
      .once("listening", () => probe.close(() => done(false)))
      .listen(port, "127.0.0.1");
  });
}
const ports = regions.flatMap((r) => [r.port, r.nats, r.cluster, r.monitor]);
const inUse = (await Promise.all(ports.map(async (port) => ((await taken(port)) ? [port] : [])))).flat();
if (inUse.length > 0) {
  process.stderr.write(
    `ports ${inUse.join(", ")} are in use: is \`npm run regions\` running already? Stop it (Ctrl-C) first.\n`,
  );
  process.exit(1);
}

for (const r of regions) {
  const routes = regions.filter((o) => o !== r).map((o) => `nats://127.0.0.1:${o.cluster}`);
  mkdirSync(`${root}/nats-${r.id}`, { recursive: true });
  run(`nats ${r.id}`, NATS_SERVER, [
    ...["-a", "127.0.0.1", "-p", String(r.nats), "-m", String(r.monitor), "-js", "-sd", `${root}/nats-${r.id}`],
    ...["-n", r.id],
    ...["-l", `${root}/nats-${r.id}.log`],
    ...["--cluster", `nats://127.0.0.1:${r.cluster}`, "--routes", routes.join(","), "--cluster_name", "sift"],
  ]);
}
// Sift once the cluster's JetStream has its leaders (a restart on old data takes seconds): a node
// started before would open the log only after its 10-s timeouts, and warn that NATS is out of reach.
for (const r of regions) await waitFor(`http://127.0.0.1:${r.monitor}/healthz`);
const natsUrls = regions.map((r) => `nats://127.0.0.1:${r.nats}`).join(",");
const regionUrls = Object.fromEntries(
  regions.map((r) => [`SIFT_REGION_URL_${r.id.toUpperCase()}`, `http://127.0.0.1:${r.port}`]),
);
for (const r of regions) {
  run(`sift ${r.id}`, process.execPath, [resolve(import.meta.dirname, "../src/main.ts")], {
    PORT: String(r.port),
    SIFT_REGION: r.id,
    SIFT_NODE_ID: r.id,
    SIFT_DATA_DIR: `${root}/${r.id}`,
    SIFT_NATS_URL: natsUrls,
    SIFT_NATS_REPLICAS: "3",
    DATABASE_URL: databaseUrl,
    SIFT_LOG_LEVEL: process.env.SIFT_LOG_LEVEL ?? "warn",
    // The first region loads the demo index; the others, started after it, find it loaded in the
    // shared store (so their demo page and hint show it) and receive it through the log.
    SIFT_DEMO: "true",
    ...regionUrls,
  });
  // One at a time: the first one migrates the shared database and loads the demo.
  await waitFor(`http://127.0.0.1:${r.port}/healthz`);
  if (stopping) break;
}
if (!stopping) {
  started = true;
  process.stderr.write(
    [
      "",
      "Three regions share one change log:",
      ...regions.map((r) => `  ${r.id.padEnd(10)} http://127.0.0.1:${r.port}`),
      `  regions    curl http://127.0.0.1:${regions[0]!.port}/v1/regions`,
      "Write in one, search in another: the README's Try it works against any of them. Ctrl-C stops all;",
      "a region or NATS server killed by hand starts again when you press Enter.",
      "",
    ].join("\n"),
  );
}
