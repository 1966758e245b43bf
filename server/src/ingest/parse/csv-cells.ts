// How one CSV cell becomes a record value. CSV has no types, so a cell is typed only when doing
// so loses nothing: `12` and `-3.5` become numbers (filterable), `007`, `1e999` and long digit
// runs stay strings because a number could not give the same text back.

/** A cell whose text cannot be the value of its field; reported on the record's line. */
export class CellError extends Error {
  readonly field: string;

  constructor(field: string, message: string) {
    super(message);
    this.field = field;
  }
}

const DECIMAL = /^-?(?:0|[1-9]\d*)(?:\.\d+)?$/;
/** Every decimal of at most 15 significant digits survives a round trip through a double. */
const EXACT_DIGITS = 15;

/** A `data` cell: number, boolean, string, or undefined for an empty cell (the key is omitted). */
export function typedCell(text: string): string | number | boolean | undefined {
  if (text === "") return undefined;
  if (text.length === 4 || text.length === 5) {
    const lower = text.toLowerCase();
    if (lower === "true") return true;
    if (lower === "false") return false;
  }
  if (DECIMAL.test(text)) {
    const value = Number(text);
    if (significantDigits(text) <= EXACT_DIGITS || String(value) === text) return value;
  }
  return text;
}

function significantDigits(decimal: string): number {
  let digits = decimal.replace(/^-/, "").replace(".", "").replace(/^0+/, "");
  if (decimal.includes(".")) digits = digits.replace(/0+$/, "");
  return digits.length;
}

/**
 * `weight`: a decimal becomes a number and anything else stays text, so that checkRecord names
 * the field (`weight must be an integer`) instead of the value being dropped.
 */
export function weightCell(text: string): unknown {
  if (text === "") return undefined;
  return DECIMAL.test(text) ? Number(text) : text;
}

/** `images`: a JSON array (`["https://…"]`) or a `|`-separated list of URLs. */
export function imagesCell(text: string): unknown {
  const trimmed = text.trim();
  if (trimmed === "") return undefined;
  if (trimmed.startsWith("[")) {
    try {
      return JSON.parse(trimmed);
    } catch {
      throw new CellError("images", "images must be a JSON array of URLs or a |-separated list of URLs");
    }
  }
  return trimmed
    .split("|")
    .map((url) => url.trim())
    .filter((url) => url !== "");
}
