// GET /demo (the widget on the demo PUBLIC index) and the widget's two builds under /widget/.
// The builds are the files the @sift/widgets package ships (made by its build), read on first request.
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import type { Hono } from "hono";
import type { AppEnv } from "../http/env.ts";

export interface DemoOptions {
  demo?: { serviceName: string; indexName: string } | undefined;
  /** With replication, other regions' URLs are known: the widget fails over between them (D-366). */
  regions?: boolean;
}

// The widget's one-file builds, as the @sift/widgets package ships them.
const require = createRequire(import.meta.url);
const ASSETS = new Set(["sift-autocomplete.js", "sift-autocomplete.iife.js"]);

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);

function page(origin: string, demo: DemoOptions["demo"], regions: boolean): string {
  const failover = regions ? ` regions="discover"` : "";
  const attrs = demo
    ? `service="${escapeHtml(demo.serviceName)}" index="${escapeHtml(demo.indexName)}"${failover}`
    : "";
  const snippet = `<script src="${origin}/widget/sift-autocomplete.iife.js" defer></script>
<sift-autocomplete base-url="${origin}" service="${demo?.serviceName ?? "SERVICE"}" index="${demo?.indexName ?? "INDEX"}"
  api-key="pk-sift-srh-…"${failover} weighted placeholder="Search…"></sift-autocomplete>`;
  const body = demo
    ? `<label for="demo-search">Search the demo index “${escapeHtml(demo.indexName)}”</label>
<sift-autocomplete id="demo-search" name="q" ${attrs} weighted detail-field="country" placeholder="Try a few letters…"></sift-autocomplete>
<p id="chosen" aria-live="polite"></p>
<script>document.addEventListener("sift-select", (e) => { document.getElementById("chosen").textContent = "Selected: " + e.detail.record.title; });</script>`
    : `<p>This server was started without the demo dataset, so there is nothing to search here yet.
Start Sift with <code>SIFT_DEMO=true</code> (the default) on a fresh data directory, or put the widget on your own page
with a PUBLIC index as below.</p>`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sift autocomplete demo</title>
<script src="/widget/sift-autocomplete.iife.js" defer></script>
<style>
body { font: 16px/1.5 system-ui, sans-serif; max-width: 40rem; margin: 2rem auto; padding: 0 1rem; color: #1f2328; }
label { display: block; font-weight: 600; margin-block-end: .25rem; }
sift-autocomplete { inline-size: 100%; }
pre { background: #f6f8fa; padding: 1rem; white-space: pre-wrap; overflow-wrap: anywhere; }
</style>
</head>
<body>
<main>
<h1>Sift autocomplete</h1>
${body}
<h2>On your own page</h2>
<p>Make an <code>srh</code> key (POST /v1/api-keys with type <code>srh</code>) and mark the index PUBLIC, then:</p>
<pre><code>${escapeHtml(snippet)}</code></pre>
</main>
</body>
</html>`;
}

export function mountDemo(app: Hono<AppEnv>, options: DemoOptions): void {
  const builds = new Map<string, Promise<{ code: string; etag: string }>>();

  app.get("/demo", (c) => c.html(page(new URL(c.req.url).origin, options.demo, options.regions === true)));

  app.get("/widget/:file", async (c) => {
    const file = c.req.param("file");
    if (!ASSETS.has(file)) return c.notFound();
    let build = builds.get(file);
    if (!build) {
      build = readFile(require.resolve(`@sift/widgets/${file}`), "utf8").then((code) => ({
        code,
        etag: `"${createHash("sha256").update(code).digest("base64url").slice(0, 22)}"`,
      }));
      // A failed read is retried on the next request rather than cached.
      build.catch(() => builds.delete(file));
      builds.set(file, build);
    }
    const { code, etag } = await build;
    const headers = {
      "content-type": "text/javascript; charset=utf-8",
      // Unversioned URL: short freshness, then a cheap revalidation by ETag.
      "cache-control": "public, max-age=300, must-revalidate",
      etag,
      // Other sites load it (a module script is fetched with CORS).
      "access-control-allow-origin": "*",
      "cross-origin-resource-policy": "cross-origin",
    };
    if (c.req.header("if-none-match") === etag) return c.body(null, 304, headers);
    return c.body(code, 200, headers);
  });
}
