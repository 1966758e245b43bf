// One Sift process per data directory: the embedded engine, PGlite and the upload blobs assume
// they are alone there, and two processes on one directory corrupt each other's files. The lock
// is a file holding the owner's pid; a lock whose process is gone (kill -9, power loss) is taken
// over, so a crash never needs a person to delete it.
import { closeSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";

export class DataDirLockedError extends Error {
  constructor(dir: string, holder: LockHolder) {
    super(
      `the data directory ${dir} is in use by process ${holder.pid} on ${holder.host} (since ${new Date(holder.since).toISOString()}); ` +
        "stop that process, or give this one another SIFT_DATA_DIR",
    );
    this.name = "DataDirLockedError";
  }
}

interface LockHolder {
  pid: number;
  host: string;
  since: number;
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
};

function readHolder(file: string): LockHolder | undefined {
  try {
    return JSON.parse(readFileSync(file, "utf8")) as LockHolder;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    // Half-written by a process that died mid-write: nobody holds it.
    return { pid: 0, host: hostname(), since: 0 };
  }
}

/** Takes the directory's lock, or throws DataDirLockedError naming the process that has it. */
export function lockDataDir(dir: string): { release(): void } {
  const file = join(dir, "sift.lock");
  const me: LockHolder = { pid: process.pid, host: hostname(), since: Date.now() };
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(file, "wx");
      writeSync(fd, JSON.stringify(me));
      closeSync(fd);
      return {
        release() {
          const holder = readHolder(file);
          if (holder?.pid === me.pid && holder.since === me.since) rmSync(file, { force: true });
        },
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    const holder = readHolder(file);
    // Another host sharing the directory (a network disk) cannot be asked whether its process lives.
    if (holder && holder.pid > 0 && (holder.host !== me.host || alive(holder.pid))) {
      throw new DataDirLockedError(dir, holder);
    }
    rmSync(file, { force: true });
  }
  throw new Error(`cannot take the lock ${file}: it keeps coming back`);
}
