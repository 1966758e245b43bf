// A private PostgreSQL primary and its streaming read replica, for the read replica test: two
// servers of the machine's PostgreSQL binaries on free loopback ports, with their own data
// directories, started and stopped by the test (never the machine's server on 5432). PostgreSQL
// refuses to run as root; as root the servers run as the `postgres` user.
import { execFileSync } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { freePort } from "./ports.ts";

/** Where the machine's PostgreSQL server binaries are, if they are. */
function binDir(): string | undefined {
  try {
    const dir = execFileSync("pg_config", ["--bindir"], { encoding: "utf8" }).trim();
    return existsSync(join(dir, "initdb")) && existsSync(join(dir, "pg_basebackup")) ? dir : undefined;
  } catch {
    // No pg_config: the test is skipped (postgresPairAvailable).
    return undefined;
  }
}

const BIN = binDir();
const asRoot = userInfo().uid === 0;
/** The `postgres` user's ids, to run the servers as when this runs as root. */
function postgresUser(): { uid: number; gid: number } | undefined {
  try {
    const uid = Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" }));
    const gid = Number(execFileSync("id", ["-g", "postgres"], { encoding: "utf8" }));
    return Number.isInteger(uid) && Number.isInteger(gid) ? { uid, gid } : undefined;
  } catch {
    // No such user: the test is skipped (postgresPairAvailable).
    return undefined;
  }
}
const USER = asRoot ? postgresUser() : undefined;

export const postgresPairAvailable = BIN !== undefined && (!asRoot || USER !== undefined);

export interface PostgresPair {
  /** The primary's URL (database `postgres`): what DATABASE_URL takes. */
  primaryUrl: string;
  /** The replica's URL: what DATABASE_READ_URL takes. */
  replicaUrl: string;
  /** Stops the primary at once (`immediate`: as a crash); the replica keeps answering reads. */
  stopPrimary(): void;
  startPrimary(): void;
  /** Stops the replica at once; the primary goes on. */
  stopReplica(): void;
  /** Runs a statement on the replica (pg_wal_replay_pause(), a count). */
  onReplica<T>(query: (sql: postgres.Sql) => Promise<T>): Promise<T>;
  stop(): void;
}

function run(command: string, args: string[]): string {
  const path = join(BIN!, command);
  // Run from the test's temporary directory: the postgres user may not enter the caller's.
  const options = {
    encoding: "utf8" as const,
    cwd: tmpdir(),
    stdio: ["ignore", "pipe", "pipe"] as ["ignore", "pipe", "pipe"],
  };
  try {
    return USER
      ? execFileSync(path, args, { ...options, uid: USER.uid, gid: USER.gid, env: { PATH: process.env.PATH } })
      : execFileSync(path, args, options);
  } catch (error) {
    const e = error as { stderr?: string; stdout?: string; message: string };
    throw new Error(`${command} failed: ${e.stderr || e.stdout || e.message}`);
  }
}

export async function startPostgresPair(): Promise<PostgresPair> {
  const dir = mkdtempSync(join(tmpdir(), "sift-pg-"));
  if (USER) chownSync(dir, USER.uid, USER.gid);
  chmodSync(dir, 0o700);
  const [primaryPort, replicaPort] = [await freePort(), await freePort()];
  const primary = join(dir, "primary");
  const replica = join(dir, "replica");
  const start = (data: string, port: number) =>
    run("pg_ctl", ["-D", data, "-l", `${data}.log`, "-w", "-t", "60", "-o", `-p ${port}`, "start"]);
  const stop = (data: string, mode: "fast" | "immediate") => {
    // biome-ignore lint/plugin: a server that is not running has nothing to stop.
    try {
      run("pg_ctl", ["-D", data, "-m", mode, "-w", "stop"]);
    } catch {}
  };
  try {
    run("initdb", ["-D", primary, "-U", "postgres", "-A", "trust", "--no-sync"]);
    // Loopback only, sockets in the test's own directory, and no fsync: a test's data is thrown away.
    writeFileSync(
      join(primary, "postgresql.auto.conf"),
      [
        "listen_addresses = '127.0.0.1'",
        `unix_socket_directories = '${dir}'`,
        "fsync = off",
        "synchronous_commit = off",
        "full_page_writes = off",
        "",
      ].join("\n"),
    );
    if (USER) chownSync(join(primary, "postgresql.auto.conf"), USER.uid, USER.gid);
    start(primary, primaryPort);
    // A physical copy that follows the primary's WAL (-R writes standby.signal and the connection).
    run("pg_basebackup", [
      "-h",
      "127.0.0.1",
      "-p",
      String(primaryPort),
      "-U",
      "postgres",
      "-D",
      replica,
      "-R",
      "-X",
      "stream",
    ]);
    start(replica, replicaPort);
  } catch (error) {
    stop(replica, "immediate");
    stop(primary, "immediate");
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  const url = (port: number) => `postgres://postgres@127.0.0.1:${port}/postgres`;
  return {
    primaryUrl: url(primaryPort),
    replicaUrl: url(replicaPort),
    stopPrimary: () => stop(primary, "immediate"),
    startPrimary: () => start(primary, primaryPort),
    stopReplica: () => stop(replica, "immediate"),
    async onReplica(query) {
      const sql = postgres(url(replicaPort), { max: 1, onnotice: () => {} });
      try {
        return await query(sql);
      } finally {
        await sql.end({ timeout: 1 });
      }
    },
    stop() {
      stop(replica, "immediate");
      stop(primary, "immediate");
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
