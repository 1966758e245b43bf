// What the engine reads from a record's free-form `data`: every string (searchable with
// scope=all, inside arrays too) and every path reachable through object keys with its value
// (the value columns: numbers, booleans, strings, array elements, presence;
// columns/value-columns.ts).

/** Deeper nesting is not searched or filterable (and cannot overflow the stack). */
const MAX_DEPTH = 256;

export function walkData(
  data: unknown,
  onText: (text: string) => void,
  onPath?: (path: readonly string[], value: unknown) => void,
): void {
  // One path array, pushed and popped, keeps the walk allocation-free on the hot bulk path.
  const path: string[] = [];
  const visit = (value: unknown, addressable: boolean, depth: number): void => {
    if (onPath && addressable && path.length > 0 && value !== null) onPath(path, value);
    if (typeof value === "string") onText(value);
    else if (depth < MAX_DEPTH && typeof value === "object" && value !== null) {
      if (Array.isArray(value)) {
        for (const item of value) visit(item, false, depth + 1);
      } else {
        for (const key in value) {
          if (!Object.hasOwn(value, key)) continue;
          path.push(key);
          visit((value as Record<string, unknown>)[key], addressable, depth + 1);
          path.pop();
        }
      }
    }
  };
  visit(data, true, 0);
}
