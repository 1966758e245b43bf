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
