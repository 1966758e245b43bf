// Which characters of a title the query matched, under the server's matching rules (docs/ranking.md,
// Which records match): with scope=title every query token but the last matches a whole title token and the
// last matches a prefix; with scope=all every token matches whole.
import { fold, tokens, WORD } from "./fold.ts";

export interface Segment {
  text: string;
  match: boolean;
}

export function highlight(title: string, query: string, prefixLast = true): Segment[] {
  const wanted = tokens(query);
  const last = wanted.length - 1;
  const folded = fold(title);
  const ranges: [number, number][] = [];
  for (const m of folded.text.matchAll(WORD)) {
    const token = m[0];
    let length = 0;
    wanted.forEach((w, i) => {
      const hit = prefixLast && i === last ? token.startsWith(w) : token === w;
      if (hit && w.length > length) length = w.length;
    });
    if (length > 0) ranges.push([folded.start[m.index]!, folded.end[m.index + length - 1]!]);
  }
  const segments: Segment[] = [];
  let at = 0;
  for (const [from, to] of ranges) {
    if (from > at) segments.push({ text: title.slice(at, from), match: false });
    segments.push({ text: title.slice(from, to), match: true });
    at = to;
  }
  if (at < title.length) segments.push({ text: title.slice(at), match: false });
  return segments;
}
