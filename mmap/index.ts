// Read-only memory maps of files, through a small Node-API addon (src/mmap.c) built by `npm ci`.
// Node has no mmap of its own. Segment indexes are mapped rather than read into the heap: an index
// then costs resident memory only for the pages searches touch, the kernel can drop those again
// under pressure, and opening a version is instant whatever its size (docs/engine.md, E12).
// Where the addon could not be built, mapFile returns null and callers read files instead.
import { createRequire } from "node:module";

interface Addon {
  map(fd: number, length: number): ArrayBuffer;
}

function load(): { addon: Addon | null; reason: string | null } {
  try {
    return { addon: createRequire(import.meta.url)("./build/Release/sift_mmap.node") as Addon, reason: null };
  } catch (error) {
    return { addon: null, reason: (error as Error).message };
  }
}

const loaded = load();

/** Why the addon is missing, or null when maps are available. */
export const mmapUnavailable: string | null = loaded.reason;

/**
 * Bytes [0, length) of an open file as a read-only ArrayBuffer, or null without the addon. The
 * mapping outlives the descriptor and is unmapped when the buffer is garbage collected, so a view
 * still held by a reader never dangles. Writing to it crashes the process: views are for reading.
 */
export function mapFile(fd: number, length: number): ArrayBuffer | null {
  return loaded.addon === null ? null : loaded.addon.map(fd, length);
}
