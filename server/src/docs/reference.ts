// A self-contained API reference rendered from the OpenAPI document at start-up: no CDN, no
// script, so it works offline and behind strict CSPs, and it can never disagree with the contract.
import { requestExample, type RequestExample } from "./request-examples.ts";
import { TRY_IT } from "./try-it.ts";

// biome-ignore lint/suspicious/noExplicitAny: the OpenAPI document is plain JSON walked by key.
type Json = Record<string, any>;

const esc = (s: unknown) =>
  String(s ?? "").replace(
    /[&<>"']/g,
    (ch) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[ch]!,
  );

/** The little Markdown the contract's docs use: `code`, paragraphs and list items. */
const prose = (text: unknown) =>
  String(text ?? "")
    .split(/\n\s*\n/)
    .map(
      (para) =>
        `<p>${esc(para)
          .replace(/`([^`]+)`/g, "<code>$1</code>")
          .replace(/\n/g, " ")}</p>`,
    )
    .join("");

const anchor = (s: string) => s.replace(/[^A-Za-z0-9]+/g, "-").toLowerCase();

function typeOf(schema: Json | undefined, doc: Json): string {
  if (!schema) return "";
  if (schema.$ref) {
    const name = schema.$ref.split("/").pop();
    const target = doc.components?.schemas?.[name];
    if (target && (target.type === "object" || target.properties || target.anyOf))
      return `<a href="#schema-${anchor(name)}">${esc(name)}</a>`;
    return `${esc(name)} (${typeOf(target, doc)})`;
  }
  if (schema.anyOf || schema.oneOf) return (schema.anyOf ?? schema.oneOf).map((s: Json) => typeOf(s, doc)).join(" | ");
  if (schema.enum) return schema.enum.map((v: unknown) => `<code>${esc(JSON.stringify(v))}</code>`).join(" | ");
  if (schema.const !== undefined) return `<code>${esc(JSON.stringify(schema.const))}</code>`;
  if (schema.type === "array") return `${typeOf(schema.items, doc)}[]`;
  const t = Array.isArray(schema.type) ? schema.type.join(" | ") : (schema.type ?? "any");
  return esc(schema.format ? `${t} (${schema.format})` : t);
}

function constraints(schema: Json | undefined): string {
  if (!schema) return "";
  const parts: string[] = [];
  for (const [k, label] of [
    ["minimum", "≥"],
    ["maximum", "≤"],
    ["minLength", "min length"],
    ["maxLength", "max length"],
    ["maxItems", "max items"],
    ["pattern", "pattern"],
    ["default", "default"],
  ] as const) {
    if (schema[k] !== undefined)
      parts.push(`${label} <code>${esc(typeof schema[k] === "string" ? schema[k] : JSON.stringify(schema[k]))}</code>`);
  }
  return parts.join(", ");
}

function fieldsTable(schema: Json | undefined, doc: Json): string {
  const target = schema?.$ref ? doc.components.schemas[schema.$ref.split("/").pop()] : schema;
  if (!target?.properties) return `<p>${typeOf(schema, doc)}</p>`;
  const required = new Set<string>(target.required ?? []);
  const rows = Object.entries<Json>(target.properties)
    .map(
      ([name, s]) =>
        `<tr><td><code>${esc(name)}</code>${required.has(name) ? " <span class=req>required</span>" : ""}</td><td>${typeOf(s, doc)}</td><td>${prose(s.description)}${constraints(s)}</td></tr>`,
    )
    .join("");
  return `<table><thead><tr><th>Field</th><th>Type</th><th>Description</th></tr></thead><tbody>${rows}</tbody></table>`;
}

/** A request line for an example: its path parameters filled in, its query parameters encoded. */
function exampleRequest(method: string, path: string, values: Record<string, unknown>, params: Json[]): string {
  let filled = path;
  const query = new URLSearchParams();
  for (const p of params) {
    if (!(p.name in values)) continue;
    const value = String(values[p.name]);
    if (p.in === "path") filled = filled.replace(`{${p.name}}`, encodeURIComponent(value));
    else if (p.in === "query") query.set(p.name, value);
  }
  const search = query.toString();
  return `${method.toUpperCase()} ${filled}${search ? `?${search}` : ""}`;
}

const pre = (value: unknown) => `<pre>${esc(typeof value === "string" ? value : JSON.stringify(value, null, 2))}</pre>`;

/** A media type's examples, named: `examples` as given, or the single `example` without a name. */
const namedExamples = (media: Json | undefined): [string, unknown][] =>
  media?.examples
    ? Object.entries<Json>(media.examples).map(([name, e]) => [e.summary ?? name, e.value])
    : media?.example !== undefined
      ? [["", media.example]]
      : [];

/**
 * The operation's examples (the contract's @opExample): each request as it is sent, its body,
 * and the answer. Parameter examples are named like the response examples they go with.
 */
function examples(method: string, path: string, op: Json): string {
  const params = (op.parameters ?? []) as Json[];
  const byName = new Map<string, Record<string, unknown>>();
  for (const p of params) {
    for (const [name, e] of Object.entries<Json>(p.examples ?? {})) {
      const values = byName.get(e.summary ?? name) ?? {};
      values[p.name] = e.value;
      byName.set(e.summary ?? name, values);
    }
  }
  const body = namedExamples(Object.values<Json>(op.requestBody?.content ?? {})[0]);
  const ok = Object.entries<Json>(op.responses ?? {}).find(([status]) => status.startsWith("2"));
  const answers = namedExamples(ok?.[1].content ? Object.values<Json>(ok[1].content)[0] : undefined);
  const names = [...new Set([...byName.keys(), ...answers.map(([name]) => name), ...body.map(([name]) => name)])];
  const parts = names.map((name) => {
    const request =
      byName.has(name) || body.length > 0 ? pre(exampleRequest(method, path, byName.get(name) ?? {}, params)) : "";
    const sent = body.find(([n]) => n === name) ?? (body.length === 1 ? body[0] : undefined);
    const answer = answers.find(([n]) => n === name);
    return `${name ? `<h5>${esc(name)}</h5>` : ""}${request}${sent ? pre(sent[1]) : ""}${answer ? `<p>Answer <code>${esc(ok![0])}</code>:</p>${pre(answer[1])}` : ""}`;
  });
  return parts.length > 0 ? `<h4>Examples</h4>${parts.join("")}` : "";
}

const requestBlock = (r: RequestExample) =>
  `<h4>Request</h4><div class=request><p>curl</p>${pre(r.curl)}<p>SDK</p>${pre(r.sdk)}</div>`;

function operation(method: string, path: string, op: Json, doc: Json): string {
  const params = (op.parameters ?? []) as Json[];
  const paramRows = params
    .map(
      (p) =>
        `<tr><td><code>${esc(p.name)}</code>${p.required ? " <span class=req>required</span>" : ""}</td><td>${esc(p.in)}</td><td>${typeOf(p.schema, doc)}</td><td>${prose(p.description)}${constraints(p.schema)}</td></tr>`,
    )
    .join("");
  const body = op.requestBody?.content;
  const bodyHtml = body
    ? Object.entries<Json>(body)
        .map(([type, media]) => `<h4>Request body <code>${esc(type)}</code></h4>${fieldsTable(media.schema, doc)}`)
        .join("")
    : "";
  const auth = (op.security ?? [])
    .map((s: Json) => (Object.keys(s).length ? Object.keys(s).join(" + ") : "anonymous"))
    .join(" or ");
  const responses = Object.entries<Json>(op.responses ?? {})
    .map(([status, r]) => {
      const media = r.content ? Object.entries<Json>(r.content)[0] : undefined;
      return `<tr><td><code>${esc(status)}</code></td><td>${prose(r.description)}</td><td>${media ? `${esc(media[0])}: ${typeOf(media[1].schema, doc)}` : ""}</td></tr>`;
    })
    .join("");
  return `<section class=op id="op-${anchor(op.operationId)}">
<h3><span class="m ${method}">${method.toUpperCase()}</span> <code>${esc(path)}</code> ${esc(op.summary ?? "")}</h3>
${prose(op.description)}
${auth ? `<p class=auth>Authentication: ${esc(auth)}</p>` : ""}
${paramRows ? `<h4>Parameters</h4><table><thead><tr><th>Name</th><th>In</th><th>Type</th><th>Description</th></tr></thead><tbody>${paramRows}</tbody></table>` : ""}
${bodyHtml}
<h4>Responses</h4><table><thead><tr><th>Status</th><th>Meaning</th><th>Body</th></tr></thead><tbody>${responses}</tbody></table>
${requestBlock(requestExample(method, path, op, doc))}
${examples(method, path, op)}
</section>`;
}

export function renderReference(doc: Json): string {
  const byTag = new Map<string, string[]>();
  const toc = new Map<string, string[]>();
  for (const [path, item] of Object.entries<Json>(doc.paths)) {
    for (const method of ["get", "put", "post", "patch", "delete"]) {
      const op = item[method];
      if (!op) continue;
      const tag = op.tags?.[0] ?? "Other";
      byTag.set(tag, [...(byTag.get(tag) ?? []), operation(method, path, op, doc)]);
      toc.set(tag, [
        ...(toc.get(tag) ?? []),
        `<li><a href="#op-${anchor(op.operationId)}"><span class="m ${method}">${method.toUpperCase()}</span> ${esc(path)}</a></li>`,
      ]);
    }
  }
  const tags: string[] = (doc.tags ?? []).map((t: Json) => t.name).filter((t: string) => byTag.has(t));
  const schemas = Object.entries<Json>(doc.components?.schemas ?? {})
    .filter(([, s]) => s.properties)
    .map(
      ([name, s]) =>
        `<section id="schema-${anchor(name)}"><h3>${esc(name)}</h3>${prose(s.description)}${fieldsTable(s, doc)}</section>`,
    )
    .join("");
  return `<!doctype html><html lang=en><head><meta charset=utf-8><meta name=viewport content="width=device-width, initial-scale=1">
<title>${esc(doc.info.title)} reference</title>
<style>
body{font:15px/1.5 system-ui,sans-serif;margin:0;display:grid;grid-template-columns:18rem 1fr;color:#1d2330}
nav{position:sticky;top:0;height:100vh;overflow:auto;background:#f4f6fa;padding:1rem;box-sizing:border-box;font-size:13px}
nav ul{list-style:none;padding:0;margin:0 0 1rem}nav a{color:inherit;text-decoration:none;overflow-wrap:anywhere}
h3 code{overflow-wrap:anywhere}.request p{margin:.25rem 0;font-size:12px;color:#556}
main{padding:1rem 2rem;max-width:70rem}code{background:#eef1f6;padding:0 .25em;border-radius:3px}
table{border-collapse:collapse;width:100%;margin:.5rem 0}td,th{border-top:1px solid #dde2ea;padding:.35rem .5rem;text-align:left;vertical-align:top}
td p{margin:0}pre{background:#eef1f6;padding:.5rem;border-radius:3px;overflow:auto;font-size:12px}.m{font:600 11px monospace;padding:.1em .4em;border-radius:3px;color:#fff;background:#667}.get{background:#2b7a4b}.post{background:#2456a6}.put{background:#8a5a00}.delete{background:#a32828}.patch{background:#6b3fa0}
.req{color:#a32828;font-size:11px}.op{border-bottom:1px solid #dde2ea;padding-bottom:1rem}.auth{color:#556}
@media (max-width:50rem){body{display:block}nav{position:static;height:auto}}
</style></head><body>
<nav><strong>${esc(doc.info.title)} ${esc(doc.info.version)}</strong><p><a href="/openapi.yaml">openapi.yaml</a> · <a href="/openapi.json">openapi.json</a></p>
${tags.map((t) => `<h4>${esc(t)}</h4><ul>${toc.get(t)!.join("")}</ul>`).join("")}</nav>
<main><h1>${esc(doc.info.title)}</h1>${prose(doc.info.description)}
<section id=try-it><h2>Try it</h2><p>From sign-up to a search in a terminal. The examples below use
<code>SIFT</code> for this server's address and <code>SIFT_KEY</code> for a secret API key; the SDK examples
use <code>const sift = createClient({ baseUrl: SIFT, apiKey: SIFT_KEY })</code> from <code>@sift/sdk</code>.</p>
${pre(TRY_IT)}</section>
${tags.map((t) => `<h2>${esc(t)}</h2>${byTag.get(t)!.join("")}`).join("")}
<h2>Schemas</h2>${schemas}</main></body></html>`;
}
