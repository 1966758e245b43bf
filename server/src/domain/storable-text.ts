// What every store and engine can hold: text without U+0000 (PostgreSQL's text and jsonb cannot),
// without unpaired surrogates (not Unicode, refused by jsonb and by UTF-8 files) and without
// noncharacters (U+FDD0–U+FDEF and the last two code points of every plane, reserved for a
// program's internal use), and JSON no deeper than MAX_JSON_DEPTH. Requests are checked against
// this before anything is written, so a write can never succeed in one store and fail in another
// (docs/api.md, Limits).

/** Objects and arrays inside one another, counted from the outermost value (a record's `data` is 2). */
export const MAX_JSON_DEPTH = 256;

const UNSTORABLE =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: U+0000 is exactly what is looked for.
  /[\u0000\uFDD0-\uFDEF\uFFFE\uFFFF]|[\uD83F\uD87F\uD8BF\uD8FF\uD93F\uD97F\uD9BF\uD9FF\uDA3F\uDA7F\uDABF\uDAFF\uDB3F\uDB7F\uDBBF\uDBFF][\uDFFE\uDFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Why `text` cannot be stored, or null when it can. */
export function unstorableReason(text: string): string | null {
  const found = UNSTORABLE.exec(text);
  if (found === null) return null;
  const at = found.index;
  const code = found[0].codePointAt(0)!;
  if (code === 0) return `contains U+0000 (NUL) at offset ${at}`;
  if (code >= 0xd800 && code <= 0xdfff && found[0].length === 1) {
    return `contains an unpaired surrogate U+${hex(code)} at offset ${at}`;
  }
  return `contains the noncharacter U+${hex(code)} at offset ${at}`;
}

/** A value of a JSON document that cannot be stored: where it is and why. */
export interface UnstorableValue {
  /** `field.sub[2]` below the document's root (empty for the root itself). */
  path: string;
  message: string;
}

/**
 * The first string or key of a parsed JSON value that cannot be stored, or a nesting deeper than
 * `maxDepth`; null when everything can be. Walks with an explicit stack: a hostile document
 * thousands of levels deep must not exhaust the call stack here either.
 */
export function findUnstorable(value: unknown, maxDepth = MAX_JSON_DEPTH, root = ""): UnstorableValue | null {
  const stack: { value: unknown; path: string; depth: number }[] = [{ value, path: root, depth: 0 }];
  while (stack.length > 0) {
    const item = stack.pop()!;
    if (typeof item.value === "string") {
      const reason = unstorableReason(item.value);
      if (reason !== null) return { path: item.path, message: reason };
      continue;
    }
    if (typeof item.value !== "object" || item.value === null) continue;
    const depth = item.depth + 1;
    if (depth > maxDepth) return { path: item.path, message: `is nested more than ${maxDepth} levels deep` };
    if (Array.isArray(item.value)) {
      for (let i = item.value.length - 1; i >= 0; i--) {
        stack.push({ value: item.value[i], path: `${item.path}[${i}]`, depth });
      }
      continue;
    }
    const keys = Object.keys(item.value);
    for (let i = keys.length - 1; i >= 0; i--) {
      const key = keys[i]!;
      const path = item.path === "" ? key : `${item.path}.${key}`;
      const reason = unstorableReason(key);
      if (reason !== null) return { path: item.path, message: `has a key that ${reason}` };
      stack.push({ value: (item.value as Record<string, unknown>)[key], path, depth });
    }
  }
  return null;
}

const hex = (code: number) => code.toString(16).toUpperCase().padStart(4, "0");
