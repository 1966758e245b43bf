// One listbox row: thumbnail (or a placeholder), the title with the match marked, a detail line.
import type { SearchResult } from "@sift/sdk/search";
import { highlight } from "./highlight.ts";

export interface RowOptions {
  /** Reserve the thumbnail column (some row of this answer has an image). */
  thumbnails: boolean;
  detailField: string | null;
}

const el = <K extends keyof HTMLElementTagNameMap>(tag: K, part: string, text?: string): HTMLElementTagNameMap[K] => {
  const node = document.createElement(tag);
  node.setAttribute("part", part);
  if (text !== undefined) node.textContent = text;
  return node;
};

const placeholder = (title: string): HTMLElement => {
  const node = el("span", "thumbnail placeholder", [...title][0]?.toUpperCase() ?? "");
  node.setAttribute("aria-hidden", "true");
  return node;
};

function thumbnail(record: SearchResult): HTMLElement {
  const src = record.images?.[0];
  if (!src) return placeholder(record.title);
  const img = el("img", "thumbnail");
  // Decorative: the title beside it names the row; a text alternative would be read twice.
  img.alt = "";
  img.width = img.height = 40;
  img.loading = "lazy";
  img.decoding = "async";
  img.addEventListener("error", () => img.replaceWith(placeholder(record.title)), { once: true });
  img.src = src;
  return img;
}

/** `data.a.b` for the field path "a.b", when it is text, a number or a boolean. */
function detail(record: SearchResult, path: string): string | undefined {
  let value: unknown = record.data;
  for (const key of path.split("."))
    value = value && typeof value === "object" ? (value as Record<string, unknown>)[key] : undefined;
  return ["string", "number", "boolean"].includes(typeof value) && value !== "" ? String(value) : undefined;
}

export function renderRow(record: SearchResult, index: number, options: RowOptions): HTMLLIElement {
  const row = el("li", "option");
  row.id = `option-${index}`;
  row.setAttribute("role", "option");
  row.setAttribute("aria-selected", "false");
  if (options.thumbnails) row.append(thumbnail(record));
  const text = el("span", "text");
  const title = el("span", "title");
  for (const s of highlight(record.title, record.highlight?.title)) {
    title.append(s.match ? el("mark", "highlight", s.text) : s.text);
  }
  text.append(title);
  const line = options.detailField ? detail(record, options.detailField) : undefined;
  if (line !== undefined) text.append(el("span", "detail", line));
  row.append(text);
  return row;
}
