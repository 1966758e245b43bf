// Facet counts over a segment's matched documents from its value columns (value-columns.ts); a
// path the segment keeps no values for is counted from the records (docs/engine.md, Value columns).
import type { FacetRequest } from "../../../ports/engine.ts";
import type { FacetTally } from "../../../search/facets.ts";
import { resolvePath } from "../../../search/filter.ts";
import type { Segment } from "../segment/segment.ts";
import { NO_VALUE, type ValueColumn } from "./value-columns.ts";

/** Adds the counts of `docs` (distinct, any order) to one tally per facet, in request order. */
export function countSegmentFacets(
  segment: Segment,
  docs: Uint32Array,
  facets: FacetRequest[],
  tallies: FacetTally[],
): void {
  const fromRecords: number[] = [];
  facets.forEach((facet, i) => {
    const found = segment.valueColumn(facet.path);
    if (found.kind === "column") countColumn(found.column, docs, tallies[i]!);
    else if (found.kind === "unindexed") fromRecords.push(i);
  });
  if (fromRecords.length === 0) return;
  for (const doc of docs) {
    const data = segment.records.read(doc).data ?? {};
    for (const i of fromRecords) tallies[i]!.addRecord(resolvePath(data, facets[i]!.path));
  }
}

function countColumn(column: ValueColumn, docs: Uint32Array, tally: FacetTally): void {
  const { ids, offsets } = column;
  const size = column.size;
  if (size === 0) return;
  // Few documents against a large dictionary: a map of the ids met, not an array of every id.
  if (docs.length * 8 < size) {
    const counts = new Map<number, number>();
    for (const doc of docs) {
      if (!column.multiValued) {
        const id = ids[doc]!;
        if (id !== NO_VALUE) counts.set(id, (counts.get(id) ?? 0) + 1);
      } else {
        for (let i = offsets[doc]!, end = offsets[doc + 1]!; i < end; i++)
          counts.set(ids[i]!, (counts.get(ids[i]!) ?? 0) + 1);
      }
    }
    for (const [id, count] of counts) tally.add(column.value(id), count);
    return;
  }
  const counts = new Uint32Array(size);
  tally.addIds({ counts, numberEnd: column.numberEnd, value: (id) => column.value(id) });
  if (!column.multiValued) {
    for (let i = 0; i < docs.length; i++) {
      const id = ids[docs[i]!]!;
      if (id !== NO_VALUE) counts[id]!++;
    }
  } else {
    for (let i = 0; i < docs.length; i++) {
      const doc = docs[i]!;
      for (let j = offsets[doc]!, end = offsets[doc + 1]!; j < end; j++) counts[ids[j]!]!++;
    }
  }
}
