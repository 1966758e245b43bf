// Text normalisation shared by every engine adapter, so that "Zürich", "ZURICH" and "zurich"
// are the same token everywhere (docs/ranking.md, Tokens).

const NONSPACING_MARKS = /\p{Mn}/gu;
const SEPARATORS = /[^\p{L}\p{N}\p{Mc}]+/u;
// biome-ignore lint/suspicious/noControlCharactersInRegex: the ASCII range starts at U+0000 by definition.
const ASCII_ONLY = /^[\x00-\x7f]*$/;
const ASCII_SEPARATORS = /[^a-z0-9]+/;

/** Lowercase, compatibility-decomposed (NFKD), with diacritics (nonspacing marks) removed. */
export function normalize(text: string): string {
  if (ASCII_ONLY.test(text)) return text.toLowerCase();
  // Decompose before lowercasing: compatibility forms like "ℌ" only become lowercasable letters
  // after NFKD, and "İ" becomes "I" + a combining dot, which is then folded away.
  return text.normalize("NFKD").toLowerCase().replace(NONSPACING_MARKS, "");
}

/** Normalised tokens in text order; separators are anything but letters, digits and spacing marks. */
export function tokenize(text: string): string[] {
  const normal = normalize(text);
  // Spacing combining marks (e.g. Devanagari vowel signs) stay inside words; only \p{Mn} is folded.
  const parts = normal.split(ASCII_ONLY.test(normal) ? ASCII_SEPARATORS : SEPARATORS);
  const tokens: string[] = [];
  for (const part of parts) if (part !== "") tokens.push(part);
  return tokens;
}

/** One token of a text, and the characters of the original text it came from. */
export interface TokenSpan {
  /** The token, as tokenize() gives it. */
  token: string;
  /** UTF-16 offsets of the token in the original text, end exclusive. */
  start: number;
  end: number;
  /**
   * For each code point of `token`, the UTF-16 offset in the original text just after the
   * characters it came from: `ends[k - 1]` ends the original of the token's first k code points,
   * so "zur" on "Zürich" covers [start, ends[2]] = [0, 3]. A diacritic folded away belongs to the
   * character before it; a character folded into several ("ﬁ" into "fi") is covered whole.
   */
  ends: number[];
}

const WORD_CHARACTER = /^[\p{L}\p{N}\p{Mc}]$/u;

/** A-Z, a-z, 0-9: the ASCII characters tokenize() keeps. */
const isAsciiWordCode = (code: number): boolean =>
  (code >= 97 && code <= 122) || (code >= 65 && code <= 90) || (code >= 48 && code <= 57);

/**
 * tokenize(text) with where each token is in `text` (for highlighting). The text is folded one
 * code point at a time, as tokenize() folds it whole; the two differ only where lowercasing
 * depends on context (a final Greek sigma) or combining marks are reordered, which changes no
 * boundary and no length, so the tokens are tokenize()'s own strings.
 */
export function tokenSpans(text: string): TokenSpan[] {
  const spans: TokenSpan[] = [];
  if (ASCII_ONLY.test(text)) {
    // Lowercasing ASCII keeps every offset. A loop over char codes: highlighting runs this on
    // every title it serves, and a regular expression's match objects cost more than the rest.
    let start = -1;
    for (let i = 0; i <= text.length; i++) {
      if (i < text.length && isAsciiWordCode(text.charCodeAt(i))) {
        if (start < 0) start = i;
      } else if (start >= 0) {
        const ends = new Array<number>(i - start);
        for (let k = 0; k < ends.length; k++) ends[k] = start + k + 1;
        spans.push({ token: text.slice(start, i).toLowerCase(), start, end: i, ends });
        start = -1;
      }
    }
    return spans;
  }
  let open: { token: string; start: number; ends: number[] } | undefined;
  const close = () => {
    if (open) spans.push({ ...open, end: open.ends[open.ends.length - 1]! });
    open = undefined;
  };
  let at = 0;
  for (const c of text) {
    const next = at + c.length;
    const code = c.charCodeAt(0);
    if (code < 0x80) {
      // ASCII inside a text that is not all ASCII (most of a place name's letters): lowercased
      // here, without folding the character through NFKD and a regular expression.
      if (isAsciiWordCode(code)) {
        open ??= { token: "", start: at, ends: [] };
        open.token += code >= 65 && code <= 90 ? String.fromCharCode(code + 32) : c;
        open.ends.push(next);
      } else close();
      at = next;
      continue;
    }
    const folded = normalize(c);
    // A mark folded away ("u" + U+0308) is part of the letter before it.
    if (folded === "" && open) open.ends[open.ends.length - 1] = next;
    for (const f of folded) {
      if (!WORD_CHARACTER.test(f)) close();
      else {
        open ??= { token: "", start: at, ends: [] };
        open.token += f;
        open.ends.push(next);
      }
    }
    at = next;
  }
  close();
  const tokens = tokenize(text);
  if (spans.length === tokens.length) {
    spans.forEach((span, i) => {
      const token = tokens[i]!;
      if (Array.from(token).length === span.ends.length) span.token = token;
    });
  }
  return spans;
}
