// Sift as a separate process started the way `npm start` starts it, for tests that kill -9 it
// and start it again on the same data (and the same PostgreSQL database in CI).
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createTempDatabase } from "../../server/test/support/store.ts";
import { freePort, waitForHttp } from "./ports.ts";

// SIFT_BENCH_SERVER: another checkout's server/src/main.ts, so that a bench can alternate two
// builds of the server under one harness (bench/RESULTS.md, "The three-region tail against the
// fast hour's code").
const main = process.env.SIFT_BENCH_SERVER ?? resolve(import.meta.dirname, "../../server/src/main.ts");

export interface SiftProcess {
  url: string;
  dataDir: string;
  output(): string;
  /** The running process's id (for memory readings), if it is running. */
  pid(): number | undefined;
  /** Resolves with the exit code (or the signal) once the process has ended. */
  exited(): Promise<number | string>;
  /** Starts the process (again) on the same data dir, database and port. */
  start(): Promise<void>;
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Kills it and removes its data. */
  destroy(): Promise<void>;
}

export async function siftProcess(
  env: Record<string, string> = {},
  /** `port`: listen there (the caller allocated it, to tell other processes before this one starts). */
  options: { sharedDatabase?: string; port?: number } = {},
): Promise<SiftProcess> {
  const dataDir = mkdtempSync(join(tmpdir(), "sift-proc-"));
  // Regions share one database (made by the caller); a lone process gets its own.
  const database = options.sharedDatabase
    ? { url: options.sharedDatabase, drop: async () => {} }
    : process.env.DATABASE_URL
      ? await createTempDatabase(process.env.DATABASE_URL)
      : undefined;
  const port = options.port ?? (await freePort());
  let child: ChildProcess | undefined;
  let output = "";
  const kill = (signal: NodeJS.Signals = "SIGKILL") =>
    new Promise<void>((done) => {
      if (!child || child.exitCode !== null || child.signalCode !== null) return done();
      child.once("exit", () => done());
      child.kill(signal);
    });
  return {
    url: `http://127.0.0.1:${port}`,
    dataDir,
    output: () => output,
    pid: () => child?.pid,
    exited: () =>
      new Promise((done) => {
        if (!child) return done("not started");
        if (child.exitCode !== null || child.signalCode !== null) return done(child.exitCode ?? child.signalCode!);
        child.once("exit", (code, signal) => done(code ?? signal ?? "unknown"));
      }),
    async start() {
      child = spawn(process.execPath, [main], {
        env: {
          ...process.env,
          PORT: String(port),
          SIFT_DATA_DIR: dataDir,
          SIFT_DEMO: "false",
          SIFT_LOG_LEVEL: "warn",
          ...(database ? { DATABASE_URL: database.url } : { DATABASE_URL: "" }),
          ...env,
        },
        stdio: ["ignore", "pipe", "pipe"],
      });
      child.stdout!.on("data", (d) => (output += d));
      child.stderr!.on("data", (d) => (output += d));
      // A process that exits while starting (a setting refused) fails the start at once, not in 60 s.
      const started = child;
      const ended = new Promise<never>((_, reject) =>
        started.once("exit", (code, signal) => reject(new Error(`exited while starting (${code ?? signal})`))),
      );
      await Promise.race([waitForHttp(`http://127.0.0.1:${port}/healthz`, 60_000), ended]).catch((error: Error) => {
        throw new Error(`${error.message}\n${output}`);
      });
    },
    kill,
    async destroy() {
      await kill();
      await database?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
