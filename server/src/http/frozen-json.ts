// JSON text of values that never change, made once per value while the value lives.
const texts = new WeakMap<object, string>();

/**
 * JSON.stringify(value), remembered when value is a frozen object. Object.isFrozen sees only the
 * top level: pass frozen objects only when they are frozen all the way down (the embedded
 * engine's records are).
 */
export function frozenJson(value: unknown): string {
  if (value === null || typeof value !== "object" || !Object.isFrozen(value)) return JSON.stringify(value);
  let text = texts.get(value);
  if (text === undefined) {
    text = JSON.stringify(value);
    texts.set(value, text);
  }
  return text;
}
