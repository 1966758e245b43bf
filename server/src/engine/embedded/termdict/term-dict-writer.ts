// Collects the terms of a segment as records arrive (temporary term ids, in order of first use) and
// writes the term dictionary at the end of the build: the terms in code point order, whose
// positions are the final term ids every other section uses.
import { tokenize } from "../../tokenize.ts";
import type { SegmentFileWriter } from "../segment/segment-file.ts";
import { SECTIONS } from "../segment/sections.ts";
import { Growable, invert, sortIndices } from "../util/arrays.ts";
import type { Pacer } from "../util/pacer.ts";
import { SortedStrings, compareCodePoints } from "./sorted-strings.ts";

const NONE = 0xffff_ffff;
const TEXT_CACHE_LENGTH = 48;
const TEXT_CACHE_ENTRIES = 200_000;

/** The prefixes of each title term, as prefix ids (positions in the prefix dictionary). */
export interface TermPrefixes {
  /** The number of prefixes. */
  count: number;
  /** maxPrefix entries per final term id: its prefixes of 1..maxPrefix characters; NONE past its end or for data-only terms. */
  ofTerm: Uint32Array;
}

export class TermDictWriter {
  private readonly vocabulary = new Map<string, number>();
  /** By temporary term id. */
  private readonly terms: string[] = [];
  /** By temporary term id: 1 when some title has the term (only those get prefixes). */
  private readonly inTitle = new Growable(Uint8Array);
  private readonly textCache = new Map<string, number[]>();
  /** Per term: last slot (plus one) that used it, to de-duplicate a record's data terms. */
  private readonly seenIn = new Growable(Uint32Array);

  get count(): number {
    return this.terms.length;
  }

  /** Appends the term ids of a record's title, in title order, to `into`. */
  addTitle(title: string, slot: number, into: number[]): void {
    for (const token of tokenize(title)) {
      const t = this.termId(token);
      this.inTitle.set(t, 1);
      this.seenIn.set(t, slot + 1);
      into.push(t);
    }
  }

  /** Appends the term ids of a data string to `into`, leaving out those the record already has. */
  addText(text: string, slot: number, into: number[]): void {
    for (const t of this.textTerms(text)) {
      if (this.seenIn.get(t) !== slot + 1) {
        this.seenIn.set(t, slot + 1);
        into.push(t);
      }
    }
  }

  /** Term ids of a data string; short strings (categories, colours, tags) repeat, so they are cached. */
  private textTerms(text: string): readonly number[] {
    const cacheable = text.length <= TEXT_CACHE_LENGTH;
    const cached = cacheable ? this.textCache.get(text) : undefined;
    if (cached !== undefined) return cached;
    const terms = tokenize(text).map((token) => this.termId(token));
    if (cacheable && this.textCache.size < TEXT_CACHE_ENTRIES) this.textCache.set(text, terms);
    return terms;
  }

  private termId(token: string): number {
    let t = this.vocabulary.get(token);
    if (t === undefined) {
      t = this.terms.length;
      this.vocabulary.set(token, t);
      this.terms.push(token);
      this.seenIn.set(t, 0);
    }
    return t;
  }

  /** Temporary term ids in byte (code point) order of the terms: final term id -> temporary. */
  sort(pacer: Pacer): Promise<Uint32Array> {
    const terms = this.terms;
    return sortIndices(terms.length, (a, b) => compareCodePoints(terms[a]!, terms[b]!), pacer);
  }

  /** Writes the dictionary (termDictBytes, termDictOffsets); termOrder: from sort(). */
  async write(out: SegmentFileWriter, termOrder: Uint32Array, pacer: Pacer): Promise<void> {
    const table = await SortedStrings.pack(termOrder.length, (i) => this.terms[termOrder[i]!]!, pacer);
    await out.add(SECTIONS.termDictBytes, table.bytes);
    await out.add(SECTIONS.termDictOffsets, table.offsets);
  }

  /**
   * Writes the prefix dictionary (prefixDictBytes, prefixDictOffsets): the prefixes of 1..maxPrefix
   * characters of every title term, in code point order. termOrder: from sort().
   */
  async writePrefixes(
    out: SegmentFileWriter,
    termOrder: Uint32Array,
    maxPrefix: number,
    pacer: Pacer,
  ): Promise<TermPrefixes> {
    const L = maxPrefix;
    const prefixIds = new Map<string, number>();
    const prefixList: string[] = [];
    const termPrefixes = new Uint32Array(termOrder.length * L).fill(NONE);
    termOrder.forEach((tmp, t) => {
      if (this.inTitle.get(tmp) !== 1) return;
      const chars = Array.from(this.terms[tmp]!);
      for (let len = 1; len <= Math.min(L, chars.length); len++) {
        const p = chars.slice(0, len).join("");
        let id = prefixIds.get(p);
        if (id === undefined) {
          id = prefixList.length;
          prefixIds.set(p, id);
          prefixList.push(p);
        }
        termPrefixes[t * L + len - 1] = id;
      }
    });
    const order = await sortIndices(
      prefixList.length,
      (a, b) => compareCodePoints(prefixList[a]!, prefixList[b]!),
      pacer,
    );
    const finalPrefix = invert(order);
    for (let i = 0; i < termPrefixes.length; i++)
      if (termPrefixes[i] !== NONE) termPrefixes[i] = finalPrefix[termPrefixes[i]!]!;

    const table = await SortedStrings.pack(order.length, (i) => prefixList[order[i]!]!, pacer);
    prefixIds.clear();
    prefixList.length = 0;
    await out.add(SECTIONS.prefixDictBytes, table.bytes);
    await out.add(SECTIONS.prefixDictOffsets, table.offsets);
    return { count: order.length, ofTerm: termPrefixes };
  }
}
