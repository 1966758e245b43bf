// The worker side of OffThreadBuilder: runs a SegmentBuilder in its own thread and heap. Building
// a segment of millions of records holds millions of small strings; their garbage collection
// would stall searches for seconds if it ran on the server's event loop.
import { parentPort } from "node:worker_threads";
import type { SearchRecord } from "../../ports/engine.ts";
import type { SegmentMeta } from "./segment.ts";
import type { Section } from "./segment-file.ts";
import { SegmentBuilder } from "./segment-builder.ts";

export type BuildRequest =
  | { id: number; type: "create"; dir: string; maxPrefix: number }
  | { id: number; type: "add"; json: string }
  | { id: number; type: "finish" }
  | { id: number; type: "abort" };

export type BuildReply =
  | { id: number; ok: true; built?: { meta: SegmentMeta; sections: Record<string, Section> } }
  | { id: number; ok: false; message: string };

/**
 * The sections' memory moves to the main thread instead of being copied. A section that is a view
 * into a larger buffer (a grown array) or a Buffer is copied to its own exact array first, so that
 * only whole, transferable buffers move.
 */
function movable(sections: Record<string, Section>): { sections: Record<string, Section>; transfer: ArrayBuffer[] } {
  const out: Record<string, Section> = {};
  const transfer = new Set<ArrayBuffer>();
  for (const [name, array] of Object.entries(sections)) {
    // Node may mark a Buffer's memory untransferable, so Buffers are copied into plain arrays.
    const whole =
      !Buffer.isBuffer(array) && array.byteOffset === 0 && array.byteLength === array.buffer.byteLength && !transfer.has(array.buffer as ArrayBuffer);
    const own = whole ? array : Buffer.isBuffer(array) ? new Uint8Array(array) : array.slice();
    out[name] = own;
    transfer.add(own.buffer as ArrayBuffer);
  }
  return { sections: out, transfer: [...transfer] };
}

let builder: SegmentBuilder | undefined;

parentPort!.on("message", async (request: BuildRequest) => {
  try {
    if (request.type === "finish") {
      const { meta, sections } = await builder!.finishFiles();
      builder = undefined;
      const moved = movable(sections);
      parentPort!.postMessage({ id: request.id, ok: true, built: { meta, sections: moved.sections } } satisfies BuildReply, moved.transfer);
      return;
    }
    switch (request.type) {
      case "create":
        builder = await SegmentBuilder.create(request.dir, request.maxPrefix);
        break;
      case "add":
        for (const record of JSON.parse(request.json) as SearchRecord[]) builder!.add(record);
        break;
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
