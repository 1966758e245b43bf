// Small measuring helpers shared by the benchmark processes.
import fs from "node:fs";
import path from "node:path";
import type { SearchEngine, SearchRequest } from "../server/src/ports/engine.ts";

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!;
}

export interface Memory {
  rss: number;
  heapUsed: number;
  /** Memory outside the JS heap: typed arrays, buffers, native allocations. */
  external: number;
}

/** Memory after a full collection (the process runs with --expose-gc). */
export function settledMemory(): Memory {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc) for (let i = 0; i < 3; i++) gc();
  const m = process.memoryUsage();
  return { rss: m.rss, heapUsed: m.heapUsed, external: m.external };
}

export function memoryDelta(after: Memory, before: Memory): Memory {
  return {
    rss: after.rss - before.rss,
    heapUsed: after.heapUsed - before.heapUsed,
    external: after.external - before.external,
  };
}

export function directoryBytes(dir: string): number {
  let total = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    total += entry.isDirectory() ? directoryBytes(full) : fs.statSync(full).size;
  }
  return total;
}

/** Bytes of the files named `name` under dir (Sift's mapped segment indexes: index.bin). */
export function filesNamed(dir: string, name: string): number {
  let total = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) total += filesNamed(full, name);
    else if (entry.name === name) total += fs.statSync(full).size;
  }
  return total;
}

/**
 * Each request's search time on `version` of `index`, `rounds` times after one round not counted
 * (a warm-up): times[round][request], in milliseconds.
 */
export async function timeSearches(
  engine: SearchEngine,
  index: string,
  version: string,
  requests: SearchRequest[],
  rounds: number,
): Promise<number[][]> {
  const times: number[][] = [];
  for (let round = 0; round <= rounds; round++) {
    const took: number[] = [];
    for (const request of requests) {
      const start = performance.now();
      await engine.search(index, version, request);
      took.push(performance.now() - start);
    }
    if (round > 0) times.push(took);
  }
  return times;
}

export const mb = (bytes: number) => `${(bytes / 1e6).toFixed(0)} MB`;
export const ms = (value: number) =>
  value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(2);

/** Timed passes over the query list for Sift (peers time one, within their budget). */
export const SIFT_PASSES = 5;

export interface TypoAnswer {
  /** Hits in the top `limit` the engine (or the harness, for a peer) returned. */
  hits: number;
  /** Peers: every match the library returned before the harness ranked them. */
  matches?: number;
  /** Whether the top `limit` holds a record that the query without its typo matches. */
  intended: boolean;
}

export interface EngineResult {
  engine: string;
  dataset: string;
  records: number;
  /** Bytes of the records as JSON: the searchable text plus stored fields. */
  sourceBytes: number;
  buildMs: number;
  memory: Memory;
  /**
   * Sift: bytes of its segment indexes, which are mapped files (docs/engine.md E12). V8 counts
   * them in `external` already, as if every page were resident.
   */
  mappedBytes?: number;
  diskBytes?: number;
  /** Per query of the shared list; null where the time budget ran out before the query. */
  timings: (number | null)[];
  /** Further passes over the whole list, aligned with timings (Sift only: it has no budget). */
  moreTimings?: number[][];
  /** Of them typo queries: `typoChecked` checked, `typoMismatches` answered differently. */
  verification?: {
    checked: number;
    mismatches: number;
    typoChecked?: number;
    typoMismatches?: number;
    examples: string[];
  };
  /** Per query, aligned with timings: for typo queries the engine answered, what it returned; else null. */
  typoAnswers?: (TypoAnswer | null)[];
  /** Peers: the library's typo option as the typo queries used it. */
  typoOption?: string;
  /** Peers whose typo option is an index of its own (FlexSearch): building it, and its memory. */
  typoIndex?: { buildMs: number; memory: Memory };
  put?: { count: number; p50: number; p99: number };
  searchOnMinor?: {
    changes: number;
    p50: number;
    p99: number;
    exact?: { p50: number; p99: number };
    typo?: { p50: number; p99: number };
  };
  reloadMs?: number;
  checkpointMs?: number;
}

/** Resident memory of `pid` in MB (`VmHWM`: its high-water mark), or 0 once the process is gone. */
export function processMb(pid: number, field: "VmRSS" | "VmHWM"): number {
  try {
    const line = fs
      .readFileSync(`/proc/${pid}/status`, "utf8")
      .split("\n")
      .find((l) => l.startsWith(field));
    return line ? Number(line.split(/\s+/)[1]) / 1024 : 0;
  } catch {
    return 0;
  }
}

/**
 * Resets `pid`'s high-water mark (Linux: "5" written to its clear_refs), so a peak read later is
 * of what came after, not of start-up; false where that is refused.
 */
export function resetHighWaterMark(pid: number): boolean {
  try {
    fs.writeFileSync(`/proc/${pid}/clear_refs`, "5");
    return true;
  } catch {
    return false;
  }
}

/**
 * CPU seconds used so far by every process on the machine, grouped by `group(pid, command)`
 * (undefined leaves a process out). Linux only: reads utime + stime from /proc/<pid>/stat.
 * A process that ends between two readings drops out of the later one.
 */
export function cpuByGroup(group: (pid: number, command: string) => string | undefined): Map<string, number> {
  const out = new Map<string, number>();
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = cpuOf(`/proc/${entry}/stat`);
    if (!stat) continue;
    const name = group(Number(entry), stat.command);
    if (name) out.set(name, (out.get(name) ?? 0) + stat.seconds);
  }
  return out;
}

/** CPU seconds of one process so far, its ended threads' included; 0 once it is gone. */
export function cpuOfProcess(pid: number): number {
  return cpuOf(`/proc/${pid}/stat`)?.seconds ?? 0;
}

/**
 * CPU seconds of one process's threads so far, summed by thread name (Node's: MainThread,
 * WorkerThread for worker_threads, V8Worker for the GC's and compiler's helpers, libuv-worker for
 * the thread pool). A thread that has ended is no longer counted, so a reading taken after a
 * worker thread ended shows less for its name than one taken before.
 */
export function cpuByThread(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  let tasks: string[] = [];
  // biome-ignore lint/plugin: a process that has ended has no threads to count.
  try {
    tasks = fs.readdirSync(`/proc/${pid}/task`);
  } catch {}
  for (const task of tasks) {
    const stat = cpuOf(`/proc/${pid}/task/${task}/stat`);
    if (stat) out.set(stat.command, (out.get(stat.command) ?? 0) + stat.seconds);
  }
  return out;
}

/** A /proc stat file's command and user plus system CPU seconds; undefined once it is gone. */
function cpuOf(file: string): { command: string; seconds: number } | undefined {
  const ticks = 100; // USER_HZ on Linux
  let stat = "";
  // biome-ignore lint/plugin: a process or thread that ended while the list was read has nothing to count.
  try {
    stat = fs.readFileSync(file, "utf8");
  } catch {}
  if (!stat) return undefined;
  // "pid (command) state ...": the command may hold spaces and parentheses.
  const close = stat.lastIndexOf(")");
  const fields = stat.slice(close + 2).split(" ");
  return {
    command: stat.slice(stat.indexOf("(") + 1, close),
    seconds: (Number(fields[11]) + Number(fields[12])) / ticks,
  };
}

/** The CPU each group used between two readings of cpuByGroup. */
export function cpuSpent(after: Map<string, number>, before: Map<string, number>): Map<string, number> {
  const out = new Map<string, number>();
  for (const [name, seconds] of after) out.set(name, seconds - (before.get(name) ?? 0));
  return out;
}

/** What the machine gave a fixed piece of work at one moment (see machineSpeed). */
export interface MachineSpeed {
  /** Wall and CPU milliseconds of a fixed JSON and hashing workload on this thread, the fastest of five tries. */
  workMs: number;
  workCpuMs: number;
  /** Round trips of one byte over loopback TCP to another process, p50 and p99, in microseconds. */
  roundTripUs: { p50: number; p99: number };
  /** This process's CPU per round trip (its send, its receive and its wake-up), in microseconds. */
  roundTripCpuUs: number;
}

/**
 * The same work every time, to tell a slow hour of the machine from a slower Sift: the JSON
 * round trips and hashing a write path does, and the wake-up of another process across loopback
 * that every hop of a replicated write takes. On this 2-core machine a write cost half as much
 * CPU again in some hours as in others (bench/RESULTS.md, Replication).
 */
export async function machineSpeed(): Promise<MachineSpeed> {
  const { createHash } = await import("node:crypto");
  const { spawn } = await import("node:child_process");
  const net = await import("node:net");
  const record = Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`field${i}`, `value ${i} `.repeat(4)]));
  const block = Buffer.alloc(1 << 20, 7);
  // The fastest of five: whatever else the machine does only ever adds to a try.
  let workMs = Number.POSITIVE_INFINITY;
  let workCpuMs = 0;
  let sink = 0;
  for (let attempt = 0; attempt < 5; attempt++) {
    const cpuBefore = process.cpuUsage();
    const started = performance.now();
    for (let i = 0; i < 50_000; i++) sink += (JSON.parse(JSON.stringify({ ...record, i })) as { i: number }).i;
    for (let i = 0; i < 64; i++) sink += createHash("sha256").update(block).digest()[0]!;
    const ms = performance.now() - started;
    const cpu = process.cpuUsage(cpuBefore);
    if (ms < workMs) [workMs, workCpuMs] = [ms, (cpu.user + cpu.system) / 1000];
  }
  if (sink < 0) throw new Error("unreachable");
  // An echo in a process of its own: each round trip wakes it and then this one.
  const echo = spawn(
    process.execPath,
    [
      "-e",
      'const s = require("node:net").createServer((c) => { c.setNoDelay(true); c.on("data", (d) => c.write(d)); }).listen(0, "127.0.0.1", () => console.log(s.address().port));',
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  try {
    const port = await new Promise<number>((resolve, reject) => {
      echo.stdout!.once("data", (d: Buffer) => resolve(Number(d.toString().trim())));
      echo.once("error", reject);
    });
    const socket = net.connect(port, "127.0.0.1");
    socket.setNoDelay(true);
    await new Promise((resolve) => socket.once("connect", resolve));
    const trips: number[] = [];
    const cpuBefore = process.cpuUsage();
    await new Promise<void>((resolve) => {
      let sent = performance.now();
      socket.on("data", () => {
        trips.push((performance.now() - sent) * 1000);
        if (trips.length === 5_000) return resolve();
        sent = performance.now();
        socket.write("x");
      });
      socket.write("x");
    });
    const cpu = process.cpuUsage(cpuBefore);
    socket.destroy();
    return {
      workMs,
      workCpuMs,
      roundTripUs: { p50: percentile(trips, 0.5), p99: percentile(trips, 0.99) },
      roundTripCpuUs: (cpu.user + cpu.system) / trips.length,
    };
  } finally {
    echo.kill("SIGKILL");
  }
}

/** A machine speed in words, for the line that says when and on what a run ran. */
export const machineSpeedLine = (m: MachineSpeed) =>
  `the machine's fixed work in ${Math.round(m.workMs)} ms (${Math.round(m.workCpuMs)} ms of CPU), a loopback round trip to another process p50 / p99 ${Math.round(m.roundTripUs.p50)} / ${Math.round(m.roundTripUs.p99)} µs, ${Math.round(m.roundTripCpuUs)} µs of CPU on this side`;
