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
import { facetValuesOf } from "../../search/facets.ts";
import { documentId, existsToken, filterField, idKey, presenceToken, stringToken } from "./names.ts";
import { searchText } from "./text.ts";
import { titleTags } from "./tiers.ts";

/** Writer of the records a bulk ingest or a checkpoint wrote. */
export const MAJOR_WRITER = "0";

/**
 * The layout of the documents and schema below, recorded with each major in the version tree.
 * 1: before `title_tags` and `title_length`; collections of layout 1 keep being read, ranked as
 * before, until a bulk ingest or a checkpoint writes a new major (docs/DECISIONS.md, D-126).
 * 3: the fields of string, IN and EXISTS filters, facets and sort (D-186); older majors answer
 * those as if no record had the field until one is written again. Documents always carry the
 * layout-2 fields too, so a change applied to an older major stays filterable there.
 */
export const DOCUMENT_LAYOUT = 3;

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
      // Layout 3 (names.ts, FieldKind): every value at a path, arrays' elements included.
      { name: "fexists", type: "string[]", optional: true },
      { name: "fn__.*", type: "float[]", optional: true, facet: true },
      { name: "fnmin__.*", type: "float", optional: true },
      { name: "fnmax__.*", type: "float", optional: true },
      { name: "fs__.*", type: "string[]", optional: true },
      { name: "fb__.*", type: "bool[]", optional: true },
      { name: "ffv__.*", type: "string[]", optional: true, facet: true },
      { name: "fsn__.*", type: "float", optional: true },
      { name: "fss__.*", type: "string", optional: true, sort: true },
    ],
  };
}

/** A facet value as stored in `ffv__<path>`: its type, then its JSON-exact text. */
export function encodeFacetValue(value: string | number | boolean): string {
  return typeof value === "string" ? `s:${value}` : typeof value === "number" ? `n:${value}` : `b:${value}`;
}

export function decodeFacetValue(encoded: string): string | number | boolean {
  const text = encoded.slice(2);
  if (encoded.startsWith("n:")) return Number(text);
  if (encoded.startsWith("b:")) return text === "true";
  return text;
}

/**
 * The layout-3 fields of `data` (names.ts, FieldKind): for each path through plain objects, the
 * distinct scalars there (an array's elements included, each once), and `fexists` for each path
 * whose value is not null.
 */
function valueFields(data: Record<string, unknown>): TypesenseDocument {
  const out: TypesenseDocument = {};
  const exists: string[] = [];
  const walk = (value: unknown, path: string[]): void => {
    if (value === null || value === undefined) return;
    if (path.length > 0) exists.push(existsToken(path));
    if (typeof value === "object" && !Array.isArray(value)) {
      for (const [key, child] of Object.entries(value)) walk(child, [...path, key]);
      return;
    }
    if (path.length === 0) return;
    // The values the embedded engine counts too (search/facets.ts), by type; numbers beyond
    // Typesense's float are left out.
    const numbers = new Set<number>();
    const strings = new Set<string>();
    const booleans = new Set<boolean>();
    for (const element of facetValuesOf(value)) {
      if (typeof element === "number") {
        if (Math.abs(element) <= FLOAT32_MAX) numbers.add(element);
      } else if (typeof element === "string") strings.add(element);
      else booleans.add(element);
    }
    if (numbers.size > 0) {
      out[filterField("n", path)] = [...numbers];
      out[filterField("nmin", path)] = Math.min(...numbers);
      out[filterField("nmax", path)] = Math.max(...numbers);
    }
    if (strings.size > 0) out[filterField("s", path)] = [...strings].map(stringToken);
    if (booleans.size > 0) out[filterField("b", path)] = [...booleans];
    const facetValues = [...numbers, ...booleans, ...strings].map(encodeFacetValue);
    if (facetValues.length > 0) out[filterField("fv", path)] = facetValues;
    if (typeof value === "number" && numbers.size > 0) out[filterField("sn", path)] = value;
    if (typeof value === "string") out[filterField("ss", path)] = value;
  };
  walk(data, []);
  out.fexists = exists;
  return out;
}

/** Presence tokens of the layout-3 typed fields a document has, for `!=` and negations. */
function valuePresence(fields: TypesenseDocument): string[] {
  return Object.keys(fields)
    .filter((name) => /^f[nsb]__/.test(name))
    .map(presenceToken);
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
  const values = valueFields(record.data ?? {});
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
    fpresent: [...Object.keys(flat.fields).map(presenceToken), ...valuePresence(values)],
    ...flat.fields,
    ...values,
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
