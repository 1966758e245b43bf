// Test pages that load the one-script-tag build and record what the widget tells the page.

export interface WidgetPageOptions {
  /** Attributes of <sift-autocomplete>; `true` for a bare boolean attribute. */
  attrs: Record<string, string | true>;
  dir?: "ltr" | "rtl";
  /** The build under test: `<script src>` (iife) or `<script type="module">` (esm). */
  build?: "iife" | "esm";
  /** Where the build is loaded from; the page's own origin when absent. */
  scriptOrigin?: string;
}

const attr = (s: string) => s.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;");

export function widgetPage(options: WidgetPageOptions): string {
  const attrs = Object.entries(options.attrs)
    .map(([k, v]) => (v === true ? k : `${k}="${attr(v)}"`))
    .join(" ");
  const script =
    options.build === "esm"
      ? `<script type="module" src="${options.scriptOrigin ?? ""}/widget/sift-autocomplete.js"></script>`
      : `<script src="${options.scriptOrigin ?? ""}/widget/sift-autocomplete.iife.js"></script>`;
  return `<!doctype html>
<html lang="en" dir="${options.dir ?? "ltr"}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Widget under test</title>
${script}
<style>body { font: 16px/1.5 system-ui, sans-serif; margin: 24px; color: #1f2328; } label { display: block; font-weight: 600; margin-block-end: 4px; }</style>
</head>
<body>
<main>
<h1>Find a city</h1>
<form id="form" action="/__test/submitted">
<label for="city">City</label>
<sift-autocomplete id="city" ${attrs}></sift-autocomplete>
<button id="go">Go</button>
</form>
</main>
<script>
window.events = [];
for (const type of ["sift-query", "sift-select", "sift-error"]) {
  document.addEventListener(type, (e) => events.push({ type, bubbles: e.bubbles, composed: e.composed, detail: type === "sift-error" ? { query: e.detail.query, error: String(e.detail.error) } : e.detail }));
}
window.submitted = [];
document.getElementById("form").addEventListener("submit", (e) => {
  e.preventDefault();
  submitted.push({ fields: Object.fromEntries(new FormData(e.target, e.submitter)), submitter: e.submitter && e.submitter.id });
});
</script>
</body>
</html>`;
}

/** A 160x160 SVG thumbnail: a coloured tile with the city's initials. */
export function thumbnailSvg(label: string, hue: number): string {
  return `<svg xmlns="http://www.w3.org/2000/svg" width="160" height="160" viewBox="0 0 160 160">
<defs><linearGradient id="g" x1="0" y1="0" x2="1" y2="1"><stop offset="0" stop-color="hsl(${hue} 70% 62%)"/><stop offset="1" stop-color="hsl(${(hue + 40) % 360} 65% 42%)"/></linearGradient></defs>
<rect width="160" height="160" fill="url(#g)"/>
<path d="M0 120 L30 90 L55 110 L90 70 L125 105 L160 80 L160 160 L0 160 Z" fill="rgb(255 255 255 / .25)"/>
<text x="80" y="92" text-anchor="middle" font-family="sans-serif" font-size="54" font-weight="700" fill="#fff">${label}</text>
</svg>`;
}
