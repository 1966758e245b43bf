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
