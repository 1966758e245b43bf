// Where a segment is built: in a worker thread (OffThreadBuilder) unless it is known to be small.
// A small one (a purge's rebuild of a small major) is built on the calling thread: starting or
// handing work to a thread cost more than the build, and its few thousand records leave little
// for the garbage collector. Checkpoints always go to a thread, one at a time (D-281).
import type { SearchRecord } from "../../../ports/engine.ts";
import { Segment } from "../segment/segment.ts";
import { OffThreadBuilder } from "./off-thread-builder.ts";
import { SegmentBuilder } from "./segment-builder.ts";

/** Records at most for a build on the calling thread. */
const IN_THREAD_AT_MOST = 20_000;

export interface SegmentBuild {
  /** Every record of the segment in `dir` but the documents in `skip`, read by the build thread. */
  copyFrom?(dir: string, docCount: number, skip: Iterable<number>, prefix?: string): Promise<void>;
  add(record: SearchRecord): Promise<void>;
  addAll(records: SearchRecord[]): Promise<void>;
  /** Writes the segment (fsynced) and opens it. */
  finish(): Promise<Segment>;
  /** Removes everything written. */
  abort(): Promise<void>;
}

/** `records`: how many the build will be given, when known beforehand. */
export async function startBuild(
  dir: string,
  maxPrefix: number,
  map: boolean,
  records?: number,
): Promise<SegmentBuild> {
  if (records === undefined || records > IN_THREAD_AT_MOST) return OffThreadBuilder.create(dir, maxPrefix, map);
  const builder = await SegmentBuilder.create(dir, maxPrefix);
  return {
    add: async (record) => builder.add(record),
    addAll: async (all) => {
      for (const record of all) builder.add(record);
    },
    finish: async () => {
      await builder.finishFiles();
      return Segment.load(dir, map);
    },
    abort: () => builder.abort(),
  };
}
