// The `facets` and `sort` parameters of a search: paths into `data` spelled as in filters
// (search/filter.ts): `data.` then segments joined by dots, each a name of letters, digits, `_`,
// `$` and `-`, or a JSON-quoted string (`data."a.b".c`), so a quoted name may hold `,` or `:`.
import { InvalidArgumentError } from "../domain/errors.ts";
import type { SortRequest } from "../ports/engine.ts";
import { readDataPath } from "./filter.ts";

/** A requested facet: its path, and the key the response gives it (the request's spelling, trimmed). */
export interface FacetPath {
  key: string;
  path: string[];
}

export const MAX_FACETS = 10;

/** A position-carrying failure; the callers name the parameter. */
class PathError extends Error {
  readonly position: number;
  constructor(position: number, expected: string, text: string) {
    const found = position < text.length ? JSON.stringify(text.slice(position, position + 10)) : "the end";
    super(`at character ${position + 1}: expected ${expected}, found ${found}`);
    this.position = position;
  }
}

/** Reads one path starting at `at` (filter.ts's reader); returns it and where it ends. */
function readPath(text: string, at: number): { path: string[]; end: number } {
  const read = readDataPath(text, at);
  if ("failAt" in read)
    throw new PathError(read.failAt, read.expected ?? "a field path starting with data. (e.g. data.brand)", text);
  return read;
}

const skipSpace = (text: string, at: number) => {
  let pos = at;
  while (pos < text.length && /\s/.test(text[pos]!)) pos++;
  return pos;
};

/** `data.brand, data.country` → one FacetPath each; 400 naming `facets` when malformed, repeated or too many. */
export function parseFacets(text: string): FacetPath[] {
  const facets: FacetPath[] = [];
  let pos = skipSpace(text, 0);
  if (pos === text.length) return facets;
  try {
    for (;;) {
      const { path, end } = readPath(text, pos);
      const key = text.slice(pos, end);
      if (facets.some((f) => f.key === key)) throw InvalidArgumentError.field("facets", `${key} is given twice`);
      facets.push({ key, path });
      pos = skipSpace(text, end);
      if (pos === text.length) break;
      if (text[pos] !== ",") throw new PathError(pos, ", between paths or the end", text);
      pos = skipSpace(text, pos + 1);
    }
  } catch (error) {
    if (error instanceof PathError) throw InvalidArgumentError.field("facets", error.message);
    throw error;
  }
  if (facets.length > MAX_FACETS)
    throw InvalidArgumentError.field("facets", `at most ${MAX_FACETS} paths (got ${facets.length})`);
  return facets;
}

/** `data.price:desc` → the engine's SortRequest; 400 naming `sort` when malformed. */
export function parseSort(text: string): SortRequest {
  try {
    const start = skipSpace(text, 0);
    const { path, end } = readPath(text, start);
    const direction = /^:(asc|desc)\s*$/.exec(text.slice(end));
    if (!direction) throw new PathError(end, ":asc or :desc after the path", text);
    return { path, direction: direction[1] as "asc" | "desc" };
  } catch (error) {
    if (error instanceof PathError) throw InvalidArgumentError.field("sort", error.message);
    throw error;
  }
}
