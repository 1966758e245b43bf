// The title cut into marked and unmarked pieces, from the ranges the server matched
// (`highlight.title`, docs/api.md Highlighting): the widget does not re-match titles itself, so it
// marks exactly what the search matched, typos included.
import type { HighlightRange } from "@sift/sdk/search";

export interface Segment {
  text: string;
  match: boolean;
}

export function highlight(title: string, ranges: readonly HighlightRange[] = []): Segment[] {
  const segments: Segment[] = [];
  let at = 0;
  for (const range of ranges) {
    // The server sends sorted, non-overlapping ranges within the title; anything else is skipped.
    const from = Math.max(at, range[0] ?? 0);
    const to = Math.min(title.length, range[1] ?? 0);
    if (to <= from) continue;
    if (from > at) segments.push({ text: title.slice(at, from), match: false });
    segments.push({ text: title.slice(from, to), match: true });
    at = to;
  }
  if (at < title.length) segments.push({ text: title.slice(at), match: false });
  return segments;
}
