// The API reference page (/docs), rendered from the contract: every operation with its
// parameters, and the contract's examples as requests and answers a reader can copy.
import { beforeAll, describe, expect, test } from "vitest";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { renderReference } from "../../src/docs/reference.ts";
import { sampleBody } from "../../src/docs/request-examples.ts";
import { TRY_IT } from "../../src/docs/try-it.ts";
import { loadContract } from "../../src/http/contract.ts";

let html: string;
beforeAll(() => {
  html = renderReference(loadContract().document);
});

/** The HTML of one operation's section. */
const section = (operationId: string): string => {
  const start = html.indexOf(`id="op-${operationId.toLowerCase().replace(/[^a-z0-9]+/g, "-")}"`);
  expect(start, operationId).toBeGreaterThan(0);
  return html.slice(start, html.indexOf("</section>", start));
};
type Json = Record<string, unknown>;
const decode = (s: string) => s.replaceAll("&quot;", '"').replaceAll("&amp;", "&").replaceAll("&lt;", "<");

describe("the API reference", () => {
  test("search lists offset, facets, maxFacetValues and sort with their limits", () => {
    const search = section("Search_search");
    for (const name of ["offset", "facets", "maxFacetValues", "sort"]) expect(search).toContain(`<code>${name}</code>`);
    expect(search).toMatch(/<code>offset<\/code>.*≤ <code>1000<\/code>/s);
  });

  test("search shows each example as a request and its answer, facets and totals included", () => {
    const search = decode(section("Search_search"));
    expect(search).toContain("<h5>A second page with facets, a filter and a sort</h5>");
    expect(search).toContain("GET /v1/search?query=san&indexName=cities&serviceName=demo");
    const line = /GET \/v1\/search\?[^<]*facets=data\.country%2Cdata\.population[^<]*/.exec(search)?.[0];
    expect(line).toContain("offset=1");
    expect(line).toContain("sort=data.population%3Adesc");
    expect(search).toContain('"facetStats"');
    expect(search).toContain('"totalHits": 3');
  });

  test("the multi-search is listed with its body, and its example answers a problem in place", () => {
    expect(html).toContain('<a href="#op-multisearch-multi"><span class="m post">POST</span> /v1/search/multi</a>');
    const multi = decode(section("MultiSearch_multi"));
    expect(multi).toContain("<h4>Request body <code>application/json</code></h4>");
    expect(multi).toContain("POST /v1/search/multi");
    expect(multi).toContain('"searches"');
    expect(multi).toMatch(/"status": 400,\s+"detail": "invalid search: offset must be <= 1000"/);
  });
});

describe("every operation", () => {
  const doc = loadContract().document;
  const operations = Object.entries(doc.paths as Record<string, Record<string, { operationId?: string }>>).flatMap(
    ([path, item]) =>
      Object.entries(item)
        .filter(([, op]) => op.operationId)
        .map(([method, op]) => ({ method, path, id: op.operationId! })),
  );

  test.each(operations)("$method $path has a curl and an SDK example", ({ method, path, id }) => {
    const request = decode(section(id)).split("<h4>Request</h4>")[1]!;
    const [curl, sdk] = [...request.matchAll(/<pre>([\s\S]*?)<\/pre>/g)].map((m) => m[1]!);
    expect(curl).toMatch(new RegExp(`^curl${method === "get" ? "" : ` -X ${method.toUpperCase()}`} "\\$SIFT/`));
    // The path is the operation's, its parameters filled in.
    const filled = path.replace(/\{[^}]+\}/g, '[^/?"]+');
    expect(curl).toMatch(new RegExp(`\\$SIFT${filled}[?"]`));
    expect(sdk).toMatch(/^(const .* = )?await sift\.|^\/\/ /);
  });

  test("sample bodies are valid requests of the contract", () => {
    const contract = loadContract();
    for (const { method, path, id } of operations) {
      const op = contract.byId.get(id as never)!;
      const body = sampleBody((doc.paths as Record<string, Json>)[path]![method] as Json, doc);
      if (!op.validateBody || body?.value === undefined) continue;
      expect(op.validateBody(body.value), `${id}: ${JSON.stringify(op.validateBody.errors)}`).toBe(true);
    }
  });

  test("the README's Try it is the reference's, word for word", () => {
    const readme = readFileSync(resolve(import.meta.dirname, "../../../README.md"), "utf8");
    const block = /## Try it\n[\s\S]*?```sh\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(block).toBe(TRY_IT);
    expect(decode(html)).toContain(`<section id=try-it>`);
  });

  test("long paths wrap instead of being cut off", () => {
    expect(html).toMatch(/nav a\{[^}]*overflow-wrap:anywhere/);
    expect(html).toMatch(/h3 code\{overflow-wrap:anywhere/);
  });
});
