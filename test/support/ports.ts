import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { connect, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Ports this process has handed out (their files say so to every process), released on exit. */
const given = new Set<number>();

/**
 * Ports handed out by any test process on this machine, one file each (holding its process's
 * id), made exclusively: test files run in several processes at once, and a port free when one
 * looked (not listened on yet, or between a NATS server's kill and its restart) was handed to
 * another too, whose server then failed to bind it (seen: "Error listening on router port ...
 * address already in use"). Only a process's own files are removed by it; those of processes
 * that have ended (vitest ends its workers without their exit handlers) are swept by one process
 * at a time, so that no file is removed after another process has made it again.
 */
const RESERVED = join(tmpdir(), "sift-test-ports");
const SWEEPING = join(tmpdir(), "sift-test-ports.sweeping");

let swept = false;

/** Once per process: the files of processes that have ended go, unless another process is at it. */
function sweep(): void {
  swept = true;
  mkdirSync(RESERVED, { recursive: true });
  try {
    mkdirSync(SWEEPING);
  } catch {
    // Another process is sweeping; one left behind by a process that died while at it is taken over.
    const mark = statSync(SWEEPING, { throwIfNoEntry: false });
    if (mark === undefined || Date.now() - mark.mtimeMs < 60_000) return;
  }
  try {
    for (const name of readdirSync(RESERVED)) {
      const file = join(RESERVED, name);
      let owner: string;
      try {
        owner = readFileSync(file, "utf8");
      } catch {
        continue; // released by its process meanwhile
      }
      if (!alive(owner)) rmSync(file, { force: true });
    }
  } finally {
    rmSync(SWEEPING, { recursive: true, force: true });
  }
}

function reserve(port: number): boolean {
  if (!swept) sweep();
  try {
    writeFileSync(join(RESERVED, String(port)), String(process.pid), { flag: "wx" });
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    return false;
  }
}

function alive(pid: string): boolean {
  // A file not written yet (no id) belongs to a process making it right now.
  if (!/^\d+$/.test(pid)) return true;
  try {
    process.kill(Number(pid), 0);
    return true;
  } catch (error) {
    // EPERM: a process of another user holds that id, alive.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

function release(port: number): void {
  rmSync(join(RESERVED, String(port)), { force: true });
}

process.on("exit", () => {
  for (const port of given) release(port);
});

/**
 * Ports are drawn below Linux's ephemeral range (32768 to 60999 by default), from which the OS
 * takes the local port of every outgoing connection: a port the OS itself offered as free could
 * be taken by such a connection before the process it was meant for listened on it (a NATS
 * server then answered its health check on its monitoring port and exited on its client port).
 */
const LOWEST = 20_000;
const ABOVE = 32_768;

/**
 * A loopback port free right now, never one handed out before in this process or to another
 * test process still running: a NATS server was once given the same port for its clients and
 * its cluster routes.
 */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = LOWEST + Math.floor(Math.random() * (ABOVE - LOWEST));
    if (!reserve(port)) continue;
    if (!(await bindable(port))) {
      release(port);
      continue;
    }
    given.add(port);
    return port;
  }
}

/**
 * An offset that makes every one of `bases` a free port (reserved as freePort's are): for a
 * program whose ports are fixed but can be moved together (`npm run regions`).
 */
export async function freeOffset(bases: number[]): Promise<number> {
  const low = LOWEST - Math.min(...bases);
  const high = ABOVE - Math.max(...bases);
  for (;;) {
    const offset = low + Math.floor(Math.random() * (high - low));
    const taken: number[] = [];
    let free = true;
    for (const port of bases.map((b) => b + offset)) {
      if (!reserve(port)) {
        free = false;
        break;
      }
      taken.push(port);
      if (!(await bindable(port))) {
        free = false;
        break;
      }
    }
    if (free) {
      for (const port of taken) given.add(port);
      return offset;
    }
    for (const port of taken) release(port);
  }
}

/** Whether nothing listens on `port` of the loopback address (nor of every address). */
function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/** Resolves once `url` answers any HTTP response, or rejects after `timeoutMs`. */
export async function waitForHttp(url: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await fetch(url, { signal: AbortSignal.timeout(1_000) });
      return;
    } catch (error) {
      if (Date.now() > deadline)
        throw new Error(`${url} did not answer within ${timeoutMs} ms: ${(error as Error).message}`);
      // A refused connection costs next to nothing: a process that starts is seen soon after.
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}

/** Resolves once a TCP connection to `port` on loopback opens, or rejects once `gone()` says its process ended. */
export async function waitForTcp(port: number, gone: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, "127.0.0.1");
      socket.once("connect", () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    if (open) return;
    if (gone()) throw new Error(`port ${port}: its process ended before it listened`);
    if (Date.now() > deadline) throw new Error(`port ${port} did not open within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
