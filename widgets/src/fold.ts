// Text folding as the server does it (server/src/engine/tokenize.ts: lowercase, NFKD, nonspacing
// marks removed), done one code point at a time so that every folded character remembers which
// original characters it came from: the highlight must mark "Zü" in "Zürich" for the query "zu".

const NONSPACING_MARKS = /\p{Mn}/gu;
/** The server's token characters: letters, digits and spacing marks. */
export const WORD = /[\p{L}\p{N}\p{Mc}]+/gu;

export interface Folded {
  text: string;
  /** For each UTF-16 unit of `text`, the [start, end) range of the original it came from. */
  start: number[];
  end: number[];
}

const foldChar = (c: string) => c.normalize("NFKD").toLowerCase().replace(NONSPACING_MARKS, "");

export function fold(original: string): Folded {
  let text = "";
  const start: number[] = [];
  const end: number[] = [];
  let at = 0;
  for (const c of original) {
    const f = foldChar(c);
    if (f === "" && end.length > 0) {
      // A combining mark belongs to the letter before it: "u" + U+0308 is highlighted whole.
      end[end.length - 1] = at + c.length;
    }
    for (let i = 0; i < f.length; i++) {
      start.push(at);
      end.push(at + c.length);
    }
    text += f;
    at += c.length;
  }
  return { text, start, end };
}

/** Folded tokens of a query, in order. */
export const tokens = (text: string): string[] => fold(text).text.match(WORD) ?? [];
