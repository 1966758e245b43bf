// How a record is laid out as a Typesense document. One major version is one collection; every
// document carries the version that wrote it (`writer`: "0" for the major's own records, "n"
// for minor "<major>.n") and the minors that replaced or deleted it (`superseded_by`), which is
// what lets any version of the tree be read with a filter_by (see versions.ts).
//
// Searchable text is stored already tokenised (space-joined tokens) so Typesense matches the
// same tokens as the embedded engine; the record itself is kept verbatim as JSON in `rec`, a
// field outside the schema, which Typesense stores without indexing and returns as written.
import type { CollectionCreateSchema } from "typesense";
import type { SearchRecord } from "../../ports/engine.ts";
import { tokenize } from "../tokenize.ts";
import { documentId, filterField, idKey, presenceToken } from "./names.ts";
import { searchText } from "./text.ts";
import { titleTags } from "./tiers.ts";

/** Writer of the records a bulk ingest or a checkpoint wrote. */
export const MAJOR_WRITER = "0";

/**
 * The layout of the documents and schema below, recorded with each major in the version tree.
 * 1: before `title_tags` and `title_length`; collections of layout 1 keep being read, ranked as
 * before, until a bulk ingest or a checkpoint writes a new major (docs/DECISIONS.md, D-126).
 */
export const DOCUMENT_LAYOUT = 2;

// Typesense's `float` is single precision; a larger magnitude would fail the whole import.
const FLOAT32_MAX = 3.4028234663852886e38;

export function collectionSchema(name: string): CollectionCreateSchema {
  return {
    name,
    fields: [
      { name: "rid", type: "string", sort: true },
      { name: "rid_key", type: "string" },
      { name: "writer", type: "string" },
      { name: "superseded_by", type: "string[]", optional: true },
      { name: "title_text", type: "string" },
      // Filtered on only, by the rank order's `_eval` (tiers.ts); sorted by for "shorter title".
      { name: "title_tags", type: "string" },
      { name: "title_length", type: "int64" },
      { name: "data_text", type: "string[]", optional: true },
      { name: "weight", type: "int32" },
      { name: "location", type: "geopoint", optional: true },
      { name: "fpresent", type: "string[]", optional: true },
      // One typed field per numeric or boolean leaf of `data` (see flattenData), declared by
      // pattern so a new data key needs no schema change and always gets the same type.
      { name: "fnum__.*", type: "float", optional: true },
      { name: "fbool__.*", type: "bool", optional: true },
    ],
  };
}

export type TypesenseDocument = Record<string, unknown>;

interface Flattened {
  texts: string[];
  fields: Record<string, number | boolean>;
}

/**
 * Text anywhere in `data` (arrays included) becomes searchable. Numbers and booleans under
 * nested objects become typed filter fields; inside arrays they have no `data.a.b` path a
 * filter could name, so they are left out.
 */
function flattenData(value: unknown, path: string[], inArray: boolean, out: Flattened): void {
  if (typeof value === "string") {
    out.texts.push(value);
  } else if (Array.isArray(value)) {
    for (const item of value) flattenData(item, path, true, out);
  } else if (typeof value === "object" && value !== null) {
    for (const [key, child] of Object.entries(value)) flattenData(child, [...path, key], inArray, out);
  } else if (!inArray && typeof value === "number" && Math.abs(value) <= FLOAT32_MAX) {
    out.fields[filterField("num", path)] = value;
  } else if (!inArray && typeof value === "boolean") {
    out.fields[filterField("bool", path)] = value;
  }
}

/** The strings anywhere in a record's `data`, the text `scope=all` searches besides the title. */
export function dataTexts(record: SearchRecord): string[] {
  const flat: Flattened = { texts: [], fields: {} };
  flattenData(record.data ?? {}, [], false, flat);
  return flat.texts;
}

const MAX_TITLE_TOKENS = 0xff;
const MAX_TITLE_UNITS = 0xff_ffff;

/**
 * The "shorter title" key of the rank order (docs/ranking.md): fewer tokens first, then fewer
 * UTF-16 units of the title as written, as one number; the same key as the embedded engine's.
 */
export function titleLength(title: string, tokens: number): number {
  return Math.min(tokens, MAX_TITLE_TOKENS) * (MAX_TITLE_UNITS + 1) + Math.min(title.length, MAX_TITLE_UNITS);
}

export function toDocument(record: SearchRecord, writer: string): TypesenseDocument {
  const flat: Flattened = { texts: [], fields: {} };
  flattenData(record.data ?? {}, [], false, flat);
  const title = tokenize(record.title);
  const doc: TypesenseDocument = {
    id: documentId(record.id, writer),
    rid: record.id,
    rid_key: idKey(record.id),
    writer,
    superseded_by: [],
    title_text: title.join(" "),
    title_tags: titleTags(title).join(" "),
    title_length: titleLength(record.title, title.length),
    data_text: flat.texts.map(searchText).filter((text) => text !== ""),
    // Weights are positive, so 0 ranks an unweighted record below every weighted one.
    weight: record.weight ?? 0,
    fpresent: Object.keys(flat.fields).map(presenceToken),
    ...flat.fields,
    rec: JSON.stringify(record),
  };
  if (record.latitude !== undefined && record.longitude !== undefined) {
    doc.location = [Number(record.latitude), Number(record.longitude)];
  }
  return doc;
}

export function recordOf(doc: TypesenseDocument): SearchRecord {
  if (typeof doc.rec !== "string") {
    throw new Error(`typesense: document ${String(doc.id)} has no stored record (field "rec")`);
  }
  return JSON.parse(doc.rec) as SearchRecord;
}
