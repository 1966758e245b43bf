// A major's segment is loaded on first use. Closing the version while that load is in flight
// closes what it opens; when the load fails (its files gone: a purge or a drop removed them), the
// caller of load() gets the error and closing leaves nothing behind, not a rejection nobody
// handles, which would end the process.
import os from "node:os";
import path from "node:path";
import { expect, test } from "vitest";
import { MajorVersion } from "../../src/engine/embedded/versions/versions.ts";

test("closing a major whose segment failed to load leaves no unhandled rejection", async () => {
  const unhandled: unknown[] = [];
  const note = (reason: unknown) => unhandled.push(reason);
  process.on("unhandledRejection", note);
  try {
    const gone = path.join(os.tmpdir(), `sift-no-segment-${process.pid}-${Date.now()}`);
    const major = new MajorVersion({ major: 1, parent: null, dir: gone, records: 0 }, gone, false);
    const loading = major.load();
    major.close();
    await expect(loading).rejects.toThrow();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(unhandled).toEqual([]);
  } finally {
    process.off("unhandledRejection", note);
  }
});
