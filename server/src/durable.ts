// Making what was written to disk durable: a file's bytes, or a folder's entries (the names of
// files created or moved into it), which a flush of the files themselves does not cover.
import fs from "node:fs";

/** Flushes the file at `path` to disk. */
export async function syncFile(path: string): Promise<void> {
  const handle = await fs.promises.open(path, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Flushes the entries of the folder `dir` to disk (opened like a file: Linux and macOS allow it). */
export const syncDirectory = syncFile;
