// Writes the forward index (forwardOffsets, forwardTerms): each document's title terms in final
// term ids, in title order. Searches read it to rank a document's match; the split posting writer
// reads it back from the file to fill the title and prefix postings.
import { TITLE, type SlotPasses } from "../build/slot-codec.ts";
import type { SegmentFileWriter } from "../segment/segment-file.ts";
import { SECTIONS } from "../segment/sections.ts";
import { release } from "../util/arrays.ts";
import { splitIntoWindows } from "./windows.ts";

const NONE = 0xffff_ffff;

/**
 * One pass over the slot log: how many title terms each document has, as the start offsets of its
 * entries in the forward index. A pass of its own, not part of the record locations' pass, so that
 * those are freed first.
 */
export async function countTitleTerms(
  slots: SlotPasses,
  n: number,
): Promise<{ offsets: Uint32Array | null; maxTitleTokens: number }> {
  const offsets = new Uint32Array(n + 1);
  await slots.forEach(0, (d, slot) => {
    if (d !== NONE) offsets[d + 1] = slot.titleCount;
  });
  let maxTitleTokens = 0;
  let total = 0;
  for (let d = 0; d < n; d++) {
    maxTitleTokens = Math.max(maxTitleTokens, offsets[d + 1]!);
    total += offsets[d + 1]!;
    // The offsets are 32-bit: past 4G entries they would wrap around silently.
    if (total > 0xffff_ffff) throw new Error("more than 4G title term entries in one segment");
    offsets[d + 1] = total;
  }
  return { offsets, maxTitleTokens };
}

/**
 * Writes the forward index, filled a window of documents per pass over the slot log so that it is
 * never whole in memory; releases `offsets` (from countTitleTerms).
 */
export async function writeForwardIndex(
  out: SegmentFileWriter,
  slots: SlotPasses,
  offsets: Uint32Array,
  finalTerm: Uint32Array,
  windowBytes: number,
): Promise<void> {
  const n = offsets.length - 1;
  await out.add(SECTIONS.forwardOffsets, offsets);
  const put = out.reserve(SECTIONS.forwardTerms, offsets[n]!);
  const { windows, largest } = splitIntoWindows(n, (doc) => offsets[doc]!, windowBytes / 4);
  const buffer = new Uint32Array(largest);
  for (let w = 0; w + 1 < windows.length; w++) {
    const first = windows[w]!;
    const last = windows[w + 1]!;
    const base = offsets[first]!;
    const terms = buffer.subarray(0, offsets[last]! - base);
    // The title terms of the documents in [first, last) (never a replaced duplicate: NONE >= last).
    await slots.forEach(TITLE, (d, slot) => {
      if (d < first || d >= last) return;
      const title = slot.title;
      for (let i = 0, at = offsets[d]! - base, count = slot.titleCount; i < count; i++)
        terms[at + i] = finalTerm[title[i]!]!;
    });
    await put(terms, base);
  }
  release(buffer);
  release(offsets);
}
