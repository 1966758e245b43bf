// Blob store on the local data dir. Bytes go to a `.partial` file that is fsynced and renamed
// into place only when complete, so a crash or a dropped connection never leaves a usable blob.
import { createReadStream } from "node:fs";
import { mkdir, open, readdir, rename, rm, stat } from "node:fs/promises";
import { dirname, join, relative, sep } from "node:path";
import type { Readable } from "node:stream";
import { BlobTooLargeError, type BlobStore } from "../ports/blobs.ts";

export function createFsBlobStore(root: string): BlobStore {
  const pathOf = (key: string) => {
    if (!/^[\w.-]+(\/[\w.-]+)*$/.test(key) || key.includes("..")) throw new Error(`invalid blob key ${key}`);
    return join(root, key);
  };

  return {
    async write(key, source, { maxBytes }) {
      const path = pathOf(key);
      const partial = `${path}.partial`;
      await mkdir(dirname(path), { recursive: true });
      const file = await open(partial, "w");
      let bytes = 0;
      try {
        for await (const chunk of source) {
          bytes += chunk.byteLength;
          if (bytes > maxBytes) throw new BlobTooLargeError(maxBytes);
          await file.write(chunk);
        }
        await file.sync();
      } catch (error) {
        // biome-ignore lint/plugin: the write's own error is the one to report; the partial file is removed below.
        await file.close().catch(() => {});
        await rm(partial, { force: true });
        throw error;
      }
      await file.close();
      await rename(partial, path);
      return { bytes };
    },
    async read(key): Promise<Readable> {
      const path = pathOf(key);
      await stat(path);
      return createReadStream(path, { highWaterMark: 1024 * 1024 });
    },
    async size(key) {
      return stat(pathOf(key)).then(
        (s) => s.size,
        () => undefined,
      );
    },
    async delete(key) {
      await rm(pathOf(key), { force: true });
      await rm(`${pathOf(key)}.partial`, { force: true });
    },
    async list(prefix) {
      const entries = await readdir(pathOf(prefix.replace(/\/$/, "")), { recursive: true, withFileTypes: true }).catch(
        (error: NodeJS.ErrnoException) => {
          if (error.code === "ENOENT") return [];
          throw error;
        },
      );
      return entries
        .filter((entry) => entry.isFile() && !entry.name.endsWith(".partial"))
        .map((entry) => relative(root, join(entry.parentPath, entry.name)).split(sep).join("/"));
    },
  };
}
