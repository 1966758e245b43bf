// Search services with flat documents (Algolia, Typesense, Meilisearch) take every attribute at
// the top level; Sift keeps tenant attributes under `data`. Folding unknown top-level keys into
// `data` lets such exports upload unchanged, the same way extra CSV columns land in `data`.

const RECORD_FIELDS = ["id", "title", "weight", "images", "latitude", "longitude", "data"];
const IS_RECORD_FIELD = new Set(RECORD_FIELDS);

export type FoldResult = { ok: true; candidate: unknown } | { ok: false; field: string; message: string };

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

export function foldUnknownFields(value: unknown): FoldResult {
  if (!isPlainObject(value)) return { ok: true, candidate: value };
  let extra: [string, unknown][] | undefined;
  for (const key in value) {
    if (IS_RECORD_FIELD.has(key)) continue;
    extra ??= [];
    extra.push([key, value[key]]);
  }
  if (extra === undefined) return { ok: true, candidate: value };

  const data = value.data ?? {};
  // A `data` that is not an object fails checkRecord with its own message; nothing to merge into.
  if (!isPlainObject(data)) return { ok: true, candidate: value };
  for (const [key] of extra) {
    if (Object.hasOwn(data, key)) {
      return { ok: false, field: key, message: `${key} is given both at the top level and inside data` };
    }
  }
  // Entries, not assignment, so that a `__proto__` key stays an own property as JSON.parse made it.
  const candidate: Record<string, unknown> = { data: Object.fromEntries([...Object.entries(data), ...extra]) };
  for (const key of RECORD_FIELDS) {
    if (key !== "data" && Object.hasOwn(value, key)) candidate[key] = value[key];
  }
  return { ok: true, candidate };
}
