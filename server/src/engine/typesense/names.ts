// Names of collections, aliases, documents and flattened fields. Index keys and data keys are
// caller-chosen strings, while Typesense names and filter_by field names are safest as plain
// ASCII, so every such string goes through one injective escape.
import { createHash } from "node:crypto";

/**
 * Keeps ASCII letters and digits; every other UTF-8 byte becomes `_xx` (lower-case hex), `_`
 * included. The result never contains `__`, which is therefore free to act as a separator.
 */
function escapeName(raw: string): string {
  let out = "";
  for (const byte of Buffer.from(raw, "utf8")) {
    const isAlnum = (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a);
    out += isAlnum ? String.fromCharCode(byte) : `_${byte.toString(16).padStart(2, "0")}`;
  }
  return out;
}

interface IndexNames {
  /** The alias that points at the active major's collection. */
  alias: string;
  /** The collection that holds the version tree. */
  versions: string;
  major(major: number): string;
  /** True for every collection this index owns (majors, leftovers of aborted writes, the tree). */
  owns(collection: string): boolean;
}

export function indexNames(prefix: string, indexKey: string): IndexNames {
  const base = `${prefix}${escapeName(indexKey)}`;
  return {
    alias: base,
    versions: `${base}__versions`,
    major: (major) => `${base}__v${major}`,
    owns: (collection) => collection.startsWith(`${base}__`),
  };
}

const sha256 = (text: string): string => createHash("sha256").update(text, "utf8").digest("hex");

/**
 * Record ids can be any string up to 512 characters, and a filter_by value cannot escape a
 * backtick; a hex digest is one plain token that always filters exactly.
 */
export const idKey = (recordId: string): string => sha256(recordId).slice(0, 32);

/** One stored document per record id and writing version, so versions share a collection. */
export const documentId = (recordId: string, writer: string): string => `${idKey(recordId)}-${writer}`;

/**
 * The typed fields of `data.<path>` (documents.ts). Layout 2: `num`, `bool`, scalars only. Layout
 * 3 adds, for every path through plain objects (an array's scalar elements count for its path):
 * `n` every number, `nmin`/`nmax` the least and greatest, `s` every string as a hash token, `b`
 * every boolean, `fv` every value encoded for facet counts, `sn`/`ss` the number or string when
 * the value is one (for sort_by, which takes no arrays).
 */
export type FieldKind = "num" | "bool" | "n" | "nmin" | "nmax" | "s" | "b" | "fv" | "sn" | "ss";

/** Typed field that holds `data.<path>` for filtering, e.g. ["price"] -> `fnum__price`. */
export const filterField = (kind: FieldKind, path: readonly string[]): string =>
  `f${kind}__${path.map(escapeName).join("__")}`;

/**
 * A string value as one plain token: filter_by cannot escape a backtick, and a token compares
 * exactly and case-sensitively whatever Typesense's own string matching does.
 */
export const stringToken = (value: string): string => sha256(`s:${value}`).slice(0, 32);

/** Token recorded in `fexists` for a document where `data.<path>` is present and not null. */
export const existsToken = (path: readonly string[]): string => sha256(`exists:${JSON.stringify(path)}`).slice(0, 32);

/** Token recorded in `fpresent` for a document that has `field`; lets a filter say "missing". */
export const presenceToken = (field: string): string => sha256(field).slice(0, 16);
