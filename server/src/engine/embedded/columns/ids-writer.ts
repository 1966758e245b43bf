// Writes the id table, the weight column and the document orders: documents are the live slots
// (the last record of each id) numbered by (weight desc, title length key asc, id asc), which every
// later part of the build maps slots through (docOfSlot); the length order (length key asc, id asc)
// is what unweighted reads follow (sections.ts). Both end with the rank order's last tie-breaks,
// the shorter title then the id (docs/ranking.md), so a read in either order can stop early.
import type { SegmentFileWriter } from "../segment/segment-file.ts";
import { SECTIONS } from "../segment/sections.ts";
import { Growable, invert, release, sortByKey, sortIndices } from "../util/arrays.ts";
import type { Pacer } from "../util/pacer.ts";

const NONE = 0xffff_ffff;
const WRITE_CHUNK = 4 << 20;
// biome-ignore lint/suspicious/noControlCharactersInRegex: the ASCII range starts at U+0000 by definition.
const NON_ASCII = /[^\u0000-\u007f]/;

/** What the rest of the build needs of the document numbering. */
export interface DocNumbering {
  /** The number of documents. */
  n: number;
  /** Each slot's document, NONE for a replaced duplicate; the builder takes it (and sets this to null). */
  docOfSlot: Uint32Array | null;
  /** Each document's position in the length order (the entries of the split postings' ranks). */
  docToLengthRank: Uint32Array;
}

export class IdsWriter {
  /** Ids as UTF-8 (whose byte order is code point order), not millions of small strings. */
  private readonly idBytes = new Growable(Uint8Array);
  private readonly idEnds = new Growable(Uint32Array);
  private readonly weight = new Growable(Uint32Array);
  /** Per slot: titleLengthKey of its title (4 bytes a slot, released once the orders are known). */
  private readonly lengthKey = new Growable(Uint32Array);

  /** Slots added so far. */
  get size(): number {
    return this.idEnds.length;
  }

  /** Adds the next slot; `lengthKey` is its title's titleLengthKey (columns/title-length.ts). */
  add(id: string, weight: number, lengthKey: number): void {
    if (NON_ASCII.test(id)) for (const byte of Buffer.from(id, "utf8")) this.idBytes.push(byte);
    else for (let i = 0; i < id.length; i++) this.idBytes.push(id.charCodeAt(i));
    if (this.idBytes.length > 0xffff_ffff) throw new Error("ids of one segment larger than 4 GiB");
    this.idEnds.push(this.idBytes.length);
    this.weight.push(weight);
    this.lengthKey.push(lengthKey);
  }

  /**
   * Ids first (sorted, de-duplicated, written, their memory released before anything else grows),
   * then the weight and length orders: writes idBytes, idOffsets, weight, docToRank, rankToDoc,
   * docToLenRank and lenRankToDoc.
   */
  async write(out: SegmentFileWriter, pacer: Pacer): Promise<DocNumbering> {
    const slots = this.size;
    const ranked = await this.rankIds(pacer);
    const n = ranked.length;
    await this.writeIds(out, ranked);
    this.idBytes.release();
    this.idEnds.release();

    const { rankOfDoc, lengthRankOfDoc, docOfSlot } = this.orderDocuments(ranked, slots);
    release(ranked);
    const weight = new Uint32Array(n);
    const slotWeights = this.weight.view();
    for (let s = 0; s < slots; s++) if (docOfSlot[s] !== NONE) weight[docOfSlot[s]!] = slotWeights[s]!;
    this.weight.release();
    await out.add(SECTIONS.weight, weight);
    release(weight);
    await out.add(SECTIONS.docToRank, rankOfDoc);
    const rankToDoc = invert(rankOfDoc);
    release(rankOfDoc);
    await out.add(SECTIONS.rankToDoc, rankToDoc);
    release(rankToDoc);
    await out.add(SECTIONS.docToLengthRank, lengthRankOfDoc);
    const lengthRankToDoc = invert(lengthRankOfDoc);
    await out.add(SECTIONS.lengthRankToDoc, lengthRankToDoc);
    release(lengthRankToDoc);
    return { n, docOfSlot, docToLengthRank: lengthRankOfDoc };
  }

  /** The live slots (the last add of each id) in id order. */
  private async rankIds(pacer: Pacer): Promise<Uint32Array> {
    const bytes = this.idBytes.view();
    const ends = this.idEnds.view();
    /** Byte order of the UTF-8 ids, which is their code point order. */
    const compareIds = (a: number, b: number): number => {
      let i = a === 0 ? 0 : ends[a - 1]!;
      let j = b === 0 ? 0 : ends[b - 1]!;
      const endA = ends[a]!;
      const endB = ends[b]!;
      for (; i < endA && j < endB; i++, j++) {
        const difference = bytes[i]! - bytes[j]!;
        if (difference !== 0) return difference;
      }
      return endA - i - (endB - j);
    };
    // By id, equal ids in slot order (the sort is stable); then compacted in place.
    const bySlotId = await sortIndices(ends.length, compareIds, pacer);
    let live = 0;
    for (let i = 0; i < bySlotId.length; i++) {
      const s = bySlotId[i]!;
      // Within a run of equal ids the last slot (the latest add) wins.
      if (i + 1 < bySlotId.length && compareIds(bySlotId[i + 1]!, s) === 0) continue;
      bySlotId[live++] = s;
    }
    return bySlotId.subarray(0, live);
  }

  /**
   * Numbers documents by (weight desc, length key asc, id asc), by two stable sorts of the id order
   * (`ranked`): by length key, which is the length order, then that by weight. rankOfDoc and
   * lengthRankOfDoc: each document's position in id and length order; docOfSlot: each slot's
   * document, NONE for a replaced duplicate.
   */
  private orderDocuments(
    ranked: Uint32Array,
    slots: number,
  ): { rankOfDoc: Uint32Array; lengthRankOfDoc: Uint32Array; docOfSlot: Uint32Array } {
    const n = ranked.length;
    const lengthKeys = this.lengthKey.view();
    const rankAtLength = sortByKey(n, (r) => lengthKeys[ranked[r]!]!);
    this.lengthKey.release();
    const weights = this.weight.view();
    const lengthRankOfDoc = sortByKey(n, (l) => NONE - weights[ranked[rankAtLength[l]!]!]!);
    const rankOfDoc = new Uint32Array(n);
    for (let d = 0; d < n; d++) rankOfDoc[d] = rankAtLength[lengthRankOfDoc[d]!]!;
    release(rankAtLength);
    const docOfSlot = new Uint32Array(slots).fill(NONE);
    for (let d = 0; d < n; d++) docOfSlot[ranked[rankOfDoc[d]!]!] = d;
    return { rankOfDoc, lengthRankOfDoc, docOfSlot };
  }

  /**
   * The ids of `ranked` slots, in that order, as the string table sections idBytes and idOffsets,
   * written a chunk at a time (a whole copy would be another 230 MB at 20M records).
   */
  private async writeIds(out: SegmentFileWriter, ranked: Uint32Array): Promise<void> {
    const bytes = this.idBytes.view();
    const ends = this.idEnds.view();
    const startOf = (s: number) => (s === 0 ? 0 : ends[s - 1]!);
    let total = 0;
    for (let r = 0; r < ranked.length; r++) total += ends[ranked[r]!]! - startOf(ranked[r]!);
    if (total > 0xffff_ffff) throw new Error("id table larger than 4 GiB");
    const putBytes = out.reserve(SECTIONS.idBytes, total);
    const putOffsets = out.reserve(SECTIONS.idOffsets, ranked.length + 1);
    const chunk = new Uint8Array(WRITE_CHUNK);
    const offsets = new Uint32Array(WRITE_CHUNK / 4);
    let used = 0;
    let bytesPut = 0;
    let offsetCount = 0;
    let offsetsPut = 0;
    let at = 0;
    for (let r = 0; r <= ranked.length; r++) {
      if (offsetCount === offsets.length) {
        await putOffsets(offsets, offsetsPut);
        offsetsPut += offsetCount;
        offsetCount = 0;
      }
      offsets[offsetCount++] = at;
      if (r === ranked.length) break;
      const s = ranked[r]!;
      const start = startOf(s);
      const length = ends[s]! - start;
      if (used + length > chunk.length) {
        await putBytes(chunk.subarray(0, used), bytesPut);
        bytesPut += used;
        used = 0;
      }
      if (length > chunk.length) {
        await putBytes(bytes.subarray(start, start + length), bytesPut);
        bytesPut += length;
      } else {
        for (let i = 0; i < length; i++) chunk[used++] = bytes[start + i]!;
      }
      at += length;
    }
    await putBytes(chunk.subarray(0, used), bytesPut);
    await putOffsets(offsets.subarray(0, offsetCount), offsetsPut);
  }
}
