// One definition of a valid record, shared by the Records endpoint and bulk ingest, so a record
// that PUT refuses is refused by an upload too (with the same field named).
import { findUnstorable, unstorableReason } from "../domain/storable-text.ts";
import type { SearchRecord } from "../ports/engine.ts";

export const MAX_WEIGHT = 2_147_483_647;
export const MAX_ID_LENGTH = 512;
export const MAX_TITLE_LENGTH = 4_096;
export const MAX_IMAGES = 100;

export interface FieldError {
  /** JSON-pointer-like field path, e.g. `weight` or `images[2]`. */
  field: string;
  message: string;
}

export type RecordCheck = { ok: true; record: SearchRecord } | { ok: false; errors: FieldError[] };

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** Coordinates arrive as strings (docs/api.md, Record fields); numbers are accepted and kept as strings. */
function checkCoordinate(name: "latitude" | "longitude", raw: unknown, errors: FieldError[]): string | undefined {
  if (raw === undefined || raw === null || raw === "") return undefined;
  const text = typeof raw === "number" ? String(raw) : raw;
  if (typeof text !== "string") {
    errors.push({ field: name, message: `${name} must be a string holding a decimal number` });
    return undefined;
  }
  const value = Number(text.trim());
  const limit = name === "latitude" ? 90 : 180;
  if (text.trim() === "" || !Number.isFinite(value) || Math.abs(value) > limit) {
    errors.push({ field: name, message: `${name} must be a decimal number between -${limit} and ${limit}` });
    return undefined;
  }
  return text.trim();
}

/**
 * Validates and normalises one record. `idOverride` is the path id of a PUT, which wins over any
 * body id (docs/api.md, Records). `generateId` supplies an id when the record has none (uploads).
 */
export function checkRecord(
  input: unknown,
  options: { idOverride?: string; generateId?: () => string } = {},
): RecordCheck {
  const errors: FieldError[] = [];
  if (!isPlainObject(input)) {
    return { ok: false, errors: [{ field: "", message: "a record must be a JSON object" }] };
  }
  // Before anything else: such a record would be written to the engine and then fail in the
  // store, or nest deep enough to exhaust a stack somewhere on its way.
  const unstorable = findUnstorable(input);
  if (unstorable !== null) return { ok: false, errors: [{ field: unstorable.path, message: unstorable.message }] };

  let id: string | undefined = options.idOverride;
  const idReason = id === undefined ? null : unstorableReason(id);
  if (idReason !== null) return { ok: false, errors: [{ field: "id", message: idReason }] };
  if (id === undefined) {
    const raw = input.id;
    if (raw === undefined || raw === null || raw === "") id = options.generateId?.();
    else if (typeof raw === "string") id = raw;
    else if (typeof raw === "number" && Number.isSafeInteger(raw)) id = String(raw);
    else errors.push({ field: "id", message: "id must be a string" });
  }
  if (id !== undefined && (id.length === 0 || id.length > MAX_ID_LENGTH)) {
    errors.push({ field: "id", message: `id must be 1 to ${MAX_ID_LENGTH} characters` });
  }

  const title = input.title;
  if (title === undefined || title === null) {
    errors.push({ field: "title", message: "title is required" });
  } else if (typeof title !== "string") {
    errors.push({ field: "title", message: "title must be a string" });
  } else if (title.trim() === "") {
    errors.push({ field: "title", message: "title must not be empty" });
  } else if (title.length > MAX_TITLE_LENGTH) {
    errors.push({ field: "title", message: `title must be at most ${MAX_TITLE_LENGTH} characters` });
  }

  let weight: number | undefined;
  if (input.weight !== undefined && input.weight !== null) {
    if (typeof input.weight !== "number" || !Number.isInteger(input.weight)) {
      errors.push({ field: "weight", message: "weight must be an integer" });
    } else if (input.weight < 1 || input.weight > MAX_WEIGHT) {
      errors.push({ field: "weight", message: `weight must be a positive integer no larger than ${MAX_WEIGHT}` });
    } else {
      weight = input.weight;
    }
  }

  let images: string[] | undefined;
  if (input.images !== undefined && input.images !== null) {
    if (!Array.isArray(input.images)) {
      errors.push({ field: "images", message: "images must be an array of URL strings" });
    } else if (input.images.length > MAX_IMAGES) {
      errors.push({ field: "images", message: `images may hold at most ${MAX_IMAGES} URLs` });
    } else {
      images = [];
      input.images.forEach((url, i) => {
        if (typeof url !== "string" || !URL.canParse(url)) {
          errors.push({ field: `images[${i}]`, message: "each image must be an absolute URL" });
        } else {
          images!.push(url);
        }
      });
    }
  }

  const latitude = checkCoordinate("latitude", input.latitude, errors);
  const longitude = checkCoordinate("longitude", input.longitude, errors);
  if ((latitude === undefined) !== (longitude === undefined) && !errors.some((e) => e.field.endsWith("tude"))) {
    errors.push({
      field: latitude === undefined ? "latitude" : "longitude",
      message: "latitude and longitude must be given together",
    });
  }

  let data: Record<string, unknown> | undefined;
  if (input.data !== undefined && input.data !== null) {
    if (!isPlainObject(input.data)) errors.push({ field: "data", message: "data must be a JSON object" });
    else data = input.data;
  }

  if (errors.length > 0) return { ok: false, errors };
  if (id === undefined) return { ok: false, errors: [{ field: "id", message: "id is required" }] };

  const record: SearchRecord = { id, title: title as string };
  if (weight !== undefined) record.weight = weight;
  if (images !== undefined) record.images = images;
  if (latitude !== undefined && longitude !== undefined) {
    record.latitude = latitude;
    record.longitude = longitude;
  }
  record.data = data ?? {};
  return { ok: true, record };
}
