// Writes the data postings (dataOffsets, dataDocs): the documents of each term found in data text
// and not in the same document's title, from the data terms in the slot log.
import { DATA, type SlotPasses } from "../build/slot-codec.ts";
import type { SegmentFileWriter } from "../segment/segment-file.ts";
import { SECTIONS } from "../segment/sections.ts";
import { release } from "../util/arrays.ts";
import type { Pacer } from "../util/pacer.ts";
import { RunSorter, longestRun, splitIntoWindows } from "./windows.ts";

const NONE = 0xffff_ffff;

/**
 * One pass counting, then a window of terms per pass over the slot log. The slot log is in arrival
 * order, so each run is filled out of document order and sorted, as the length orders of the split
 * postings are; the data terms are never all in memory at once (free text in `data` can be many
 * per record). finalTerm: each temporary term id's final one.
 */
export async function writeDataPostings(
  out: SegmentFileWriter,
  slots: SlotPasses,
  finalTerm: Uint32Array,
  windowBytes: number,
  pacer: Pacer,
): Promise<void> {
  const termCount = finalTerm.length;
  const offsets = new Uint32Array(termCount + 1);
  await slots.forEach(DATA, (doc, slot) => {
    if (doc === NONE) return;
    const data = slot.data;
    for (let i = 0, count = slot.dataCount; i < count; i++) offsets[finalTerm[data[i]!]! + 1]!++;
  });
  let total = 0;
  for (let t = 1; t <= termCount; t++) {
    total += offsets[t]!;
    if (total > 0xffff_ffff) throw new Error("more than 4G data term entries in one segment");
    offsets[t] = total;
  }
  await out.add(SECTIONS.dataOffsets, offsets);
  const put = out.reserve(SECTIONS.dataDocs, total);
  const { windows, largest } = splitIntoWindows(termCount, (t) => offsets[t]!, windowBytes / 4);
  const buffer = new Uint32Array(largest);
  const cursor = offsets.slice();
  const sorter = new RunSorter(longestRun(offsets), pacer);
  for (let w = 0; w + 1 < windows.length; w++) {
    const low = windows[w]!;
    const high = windows[w + 1]!;
    const base = offsets[low]!;
    const part = buffer.subarray(0, offsets[high]! - base);
    if (part.length === 0) continue;
    await slots.forEach(DATA, (doc, slot) => {
      if (doc === NONE) return;
      const data = slot.data;
      for (let i = 0, count = slot.dataCount; i < count; i++) {
        const term = finalTerm[data[i]!]!;
        if (term >= low && term < high) part[cursor[term]!++ - base] = doc;
      }
    });
    await sorter.sortRuns(part, offsets, low, high, slots.count);
    await put(part, base);
  }
  release(buffer);
  release(cursor);
  release(offsets);
  sorter.release();
}
