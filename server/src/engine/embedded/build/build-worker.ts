// The worker side of OffThreadBuilder: runs a SegmentBuilder in its own thread and heap. Building
// a segment of millions of records holds millions of small strings; their garbage collection
// would stall searches for seconds if it ran on the server's event loop.
import module from "node:module";
import { parentPort } from "node:worker_threads";
import type { SearchRecord } from "../../../ports/engine.ts";
import type { SegmentMeta } from "../segment/meta.ts";
import { Segment } from "../segment/segment.ts";
import { SegmentBuilder } from "./segment-builder.ts";

// This thread's modules, to the compile cache main.ts turned on (none when it is off).
module.flushCompileCache?.();

export type BuildRequest =
  | { id: number; type: "create"; dir: string; maxPrefix: number }
  | { id: number; type: "add"; json: string }
  /** Every record of the segment in `dir` (files named `prefix`...) but the documents in `skip` (a checkpoint's copy). */
  | { id: number; type: "copy"; dir: string; prefix: string; skip: Uint32Array }
  | { id: number; type: "finish" }
  | { id: number; type: "abort" };

export type BuildReply =
  | { id: number; ok: true; built?: { meta: SegmentMeta } }
  | { id: number; ok: false; message: string };

let builder: SegmentBuilder | undefined;

parentPort!.on("message", async (request: BuildRequest) => {
  try {
    if (request.type === "finish") {
      const meta = await builder!.finishFiles();
      builder = undefined;
      parentPort!.postMessage({ id: request.id, ok: true, built: { meta } } satisfies BuildReply);
      return;
    }
    switch (request.type) {
      case "create":
        builder = await SegmentBuilder.create(request.dir, request.maxPrefix);
        break;
      case "add":
        for (const record of JSON.parse(request.json) as SearchRecord[]) builder!.add(record);
        break;
      case "copy": {
        // Read here, not on the server's thread: reading and parsing every record there took most
        // of that thread while a checkpoint of a large index was built, and writes queued. Only
        // the records are opened, not the mapped index: a thread kept or ended afterwards then
        // holds no mapping (D-287).
        const { docCount, records } = await Segment.openRecords(request.dir, request.prefix);
        try {
          const skip = new Set(request.skip);
          for (let doc = 0; doc < docCount; doc++) if (!skip.has(doc)) builder!.add(records.read(doc));
        } finally {
          records.close();
        }
        break;
      }
      case "abort":
        await builder?.abort();
        builder = undefined;
        break;
    }
    parentPort!.postMessage({ id: request.id, ok: true } satisfies BuildReply);
  } catch (error) {
    parentPort!.postMessage({ id: request.id, ok: false, message: (error as Error).message } satisfies BuildReply);
  }
});
