// What the Typesense adapter sends, request by request, to a local HTTP server that records
// each request and answers the way Typesense's API documents. This checks request shapes and
// the adapter's handling of answers; it is not an integration test: whether Typesense itself
// ranks and filters as intended is for typesense.conformance.test.ts against a real server.
// One file of some 1,400 lines on purpose: every case shares the recording fake, its answers and
// the request builders, and reads as the adapter's request-by-request specification.
import { createHash } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { CollectionCreateSchema } from "typesense";
import { collectionSchema, toDocument } from "../../src/engine/typesense/documents.ts";
import { createTypesenseEngine, TypesenseEngineError, UnknownVersionError } from "../../src/engine/typesense/index.ts";
import { evalScore, lexicalEntries, signals } from "../../src/engine/typesense/tiers.ts";
import type { SearchEngine, SearchRecord, SearchRequest } from "../../src/ports/engine.ts";
import { random } from "../support/random.ts";

interface Recorded {
  method: string;
  path: string;
  query: Record<string, string>;
  /** The query string as sent, for Typesense's limit on its length. */
  rawQuery: string;
  apiKey: string | undefined;
  body: string;
}

interface Reply {
  status?: number;
  json?: unknown;
  /** Sent as text/plain, as Typesense sends JSONL (import results, exports). */
  text?: string;
}

type Responder = Reply | Reply[] | ((request: Recorded) => Reply);

interface Fake {
  url: string;
  requests: Recorded[];
  /** Later registrations win; an array answers in turn, repeating its last reply. */
  on(method: string, path: string, responder: Responder): void;
  close(): Promise<void>;
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

async function startFake(): Promise<Fake> {
  const routes: { method: string; path: string; responder: Responder }[] = [];
  const requests: Recorded[] = [];
  const server: Server = createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", "http://fake");
    const recorded: Recorded = {
      method: req.method ?? "",
      path: decodeURIComponent(url.pathname),
      query: Object.fromEntries(url.searchParams),
      rawQuery: url.search.slice(1),
      apiKey: req.headers["x-typesense-api-key"] as string | undefined,
      body: await readBody(req),
    };
    requests.push(recorded);
    const route = routes.findLast((r) => r.method === recorded.method && r.path === recorded.path);
    let reply: Reply = { status: 418, json: { message: `unexpected ${recorded.method} ${recorded.path}` } };
    if (route) {
      const { responder } = route;
      if (typeof responder === "function") reply = responder(recorded);
      else if (Array.isArray(responder)) reply = (responder.length > 1 ? responder.shift() : responder[0])!;
      else reply = responder;
    }
    res.statusCode = reply.status ?? 200;
    if (reply.text !== undefined) {
      res.setHeader("content-type", "text/plain; charset=utf-8");
      res.end(reply.text);
    } else {
      res.setHeader("content-type", "application/json; charset=utf-8");
      res.end(JSON.stringify(reply.json ?? {}));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    on: (method, path, responder) => void routes.push({ method, path, responder }),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

const sha256 = (text: string): string => createHash("sha256").update(text).digest("hex");
const idKey = (id: string): string => sha256(id).slice(0, 32);
const presence = (field: string): string => sha256(field).slice(0, 16);
const stringTok = (value: string): string => sha256(`s:${value}`).slice(0, 32);
const existsTok = (...path: string[]): string => sha256(`exists:${JSON.stringify(path)}`).slice(0, 32);

const jsonl = (rows: unknown[]): string => rows.map((row) => JSON.stringify(row)).join("\n");
const lines = (body: string): unknown[] => body.split("\n").map((line) => JSON.parse(line) as unknown);
const importOk = (request: Recorded): Reply => ({
  text: request.body
    .split("\n")
    .map(() => '{"success":true}')
    .join("\n"),
});

/**
 * Version-tree documents as stored in `<index>__versions`; majors of the current document layout
 * unless told otherwise (`legacy`: written before layouts were numbered).
 */
const entry = (id: string, major: number, records: number, parent?: string, state = "ready", legacy = false) => ({
  id,
  major,
  records,
  state,
  ...(parent === undefined ? (legacy ? {} : { layout: 2 }) : { parent }),
});

const collection = (name: string, fields: string[], numDocuments = 0) => ({
  name,
  num_documents: numDocuments,
  created_at: 1_700_000_000,
  fields: fields.map((field) => ({ name: field, type: "string" })),
});

const hit = (record: SearchRecord, score = "1157451471441100921", distance?: number) => ({
  document: { id: `${idKey(record.id)}-0`, rec: JSON.stringify(record) },
  highlight: {},
  highlights: [],
  text_match: Number(score),
  text_match_info: {
    best_field_score: "1108091338752",
    best_field_weight: 15,
    fields_matched: 1,
    score,
    tokens_matched: 1,
  },
  ...(distance === undefined ? {} : { geo_distance_meters: { location: distance } }),
});

const searchAnswer = (hits: unknown[], found = hits.length) => ({
  facet_counts: [],
  found,
  hits,
  out_of: 1000,
  page: 1,
  request_params: { collection_name: "t_idx__v7", per_page: 10, q: "x" },
  search_time_ms: 0,
});

const pizza: SearchRecord = {
  id: "p-1",
  title: "Crème Brûlée Pizza",
  weight: 5,
  images: ["https://img.example/p.jpg"],
  latitude: "48.8566",
  longitude: "2.3522",
  data: { price: 12.5, inStock: true, tags: ["Spicy", "hot", 3], dims: { w: 3 }, note: "Wood-fired", "odd key": 1 },
};

const request = (overrides: Partial<SearchRequest> = {}): SearchRequest => ({
  query: "creme bru",
  scope: "title",
  weighted: false,
  limit: 10,
  ...overrides,
});

let fake: Fake;
let engine: SearchEngine;

beforeEach(async () => {
  fake = await startFake();
  engine = createTypesenseEngine({
    url: `${fake.url}/`,
    apiKey: "test-key",
    collectionPrefix: "t_",
    retry: { retries: 0 },
  });
  await engine.open();
});

afterEach(async () => {
  await engine.close();
  await fake.close();
});

/** Serves the version tree of index "idx": 7 <- 7.1 <- 7.3, and a branch 7.1 <- 7.2. */
function serveTree(
  rows: unknown[] = [entry("7", 7, 3), entry("7.1", 7, 4, "7"), entry("7.2", 7, 4, "7.1"), entry("7.3", 7, 5, "7.1")],
): void {
  fake.on("GET", "/collections/t_idx__versions/documents/export", { text: jsonl(rows) });
}

const calls = (): string[] => fake.requests.map((r) => `${r.method} ${r.path}`);

describe("typesense adapter: index lifecycle", () => {
  it("creates the version-tree collection with the API key, and accepts one that already exists", async () => {
    fake.on("POST", "/collections", [
      { status: 201, json: collection("t_idx__versions", ["major"]) },
      { status: 409, json: { message: "A collection with name `t_idx__versions` already exists." } },
    ]);
    await engine.createIndex("idx");
    await engine.createIndex("idx");
    expect(fake.requests).toHaveLength(2);
    expect(fake.requests[0]!.apiKey).toBe("test-key");
    expect(JSON.parse(fake.requests[0]!.body)).toEqual({
      name: "t_idx__versions",
      fields: [{ name: "major", type: "int32" }],
    });
  });

  it("escapes index keys into plain collection names", async () => {
    fake.on("POST", "/collections", { status: 201, json: {} });
    await engine.createIndex("shop/ü_1");
    expect(JSON.parse(fake.requests[0]!.body).name).toBe("t_shop_2f_c3_bc_5f1__versions");
  });

  it("drops the alias and exactly the collections the index owns", async () => {
    fake.on("DELETE", "/aliases/t_idx", { status: 404, json: { message: "Not Found" } });
    fake.on("GET", "/collections", {
      json: [
        collection("t_idx__v7", []),
        collection("t_idx__versions", []),
        collection("t_idx2__v1", []),
        collection("t_other__v7", []),
      ],
    });
    fake.on("DELETE", "/collections/t_idx__v7", { json: collection("t_idx__v7", []) });
    fake.on("DELETE", "/collections/t_idx__versions", { json: collection("t_idx__versions", []) });
    await engine.dropIndex("idx");
    expect(calls()).toEqual([
      "DELETE /aliases/t_idx",
      "GET /collections",
      "DELETE /collections/t_idx__v7",
      "DELETE /collections/t_idx__versions",
    ]);
    expect(fake.requests[1]!.query).toEqual({ exclude_fields: "fields" });
  });

  it("pings /health", async () => {
    fake.on("GET", "/health", [{ json: { ok: true } }, { status: 503, json: { ok: false } }]);
    expect(await engine.ping()).toBe(true);
    expect(await engine.ping()).toBe(false);
  });
});

describe("typesense adapter: bulk ingest", () => {
  it("creates the major's collection with the ranking, visibility and filter fields", async () => {
    serveTree([]);
    fake.on("DELETE", "/collections/t_idx__v1", {
      status: 404,
      json: { message: "No collection with name `t_idx__v1` found." },
    });
    fake.on("POST", "/collections", { status: 201, json: {} });
    await engine.bulkWriter("idx", 1);
    expect(calls()).toEqual([
      "GET /collections/t_idx__versions/documents/export",
      "DELETE /collections/t_idx__v1",
      "POST /collections",
    ]);
    const sent = JSON.parse(fake.requests[2]!.body) as CollectionCreateSchema;
    expect(sent).toEqual(collectionSchema("t_idx__v1"));
    // What the requests below rely on: the fields they query, filter and sort by, with Typesense
    // types that allow it. The documents only ever carry fields declared here.
    const field = (name: string) => sent.fields!.find((f) => f.name === name);
    expect(field("title_text")).toMatchObject({ type: "string" });
    expect(field("title_tags")).toMatchObject({ type: "string" });
    // Sortable (numbers are by default); int64, since the key passes 2^31 from 128 tokens.
    expect(field("title_length")).toMatchObject({ type: "int64" });
    expect(field("title_length")).not.toHaveProperty("sort", false);
    expect(field("data_text")).toMatchObject({ type: "string[]" });
    expect(field("rid")).toMatchObject({ type: "string", sort: true });
    expect(field("weight")).toMatchObject({ type: "int32" });
    expect(field("weight")).not.toHaveProperty("optional");
    expect(field("location")).toMatchObject({ type: "geopoint" });
    for (const name of ["rid_key", "writer"]) expect(field(name)).toMatchObject({ type: "string" });
    for (const name of ["superseded_by", "fpresent"]) expect(field(name)).toMatchObject({ type: "string[]" });
    expect(field("fnum__.*")).toMatchObject({ type: "float", optional: true });
    expect(field("fbool__.*")).toMatchObject({ type: "bool", optional: true });
    // Layout 3: value lists filter (arrays' elements included), facet fields count and give
    // stats, scalar fields sort (sort_by takes no arrays; strings must say so).
    expect(field("fexists")).toMatchObject({ type: "string[]" });
    expect(field("fn__.*")).toMatchObject({ type: "float[]", facet: true });
    for (const name of ["fnmin__.*", "fnmax__.*", "fsn__.*"]) expect(field(name)).toMatchObject({ type: "float" });
    expect(field("fs__.*")).toMatchObject({ type: "string[]" });
    expect(field("fb__.*")).toMatchObject({ type: "bool[]" });
    expect(field("ffv__.*")).toMatchObject({ type: "string[]", facet: true });
    expect(field("fss__.*")).toMatchObject({ type: "string", sort: true });
    const document = toDocument(pizza, "0");
    for (const key of Object.keys(document)) {
      if (key === "id" || key === "rec") continue;
      expect(
        sent.fields!.some((f) => new RegExp(`^(?:${f.name})$`).test(key)),
        `field ${key}`,
      ).toBe(true);
    }
  });

  it("imports records as JSONL upserts in batches, one document per record, and commits the count", async () => {
    const small = createTypesenseEngine({
      url: fake.url,
      apiKey: "test-key",
      collectionPrefix: "t_",
      importBatchSize: 2,
      retry: { retries: 0 },
    });
    serveTree([]);
    fake.on("DELETE", "/collections/t_idx__v1", { status: 404, json: { message: "Not Found" } });
    fake.on("POST", "/collections", { status: 201, json: {} });
    fake.on("POST", "/collections/t_idx__v1/documents/import", importOk);
    fake.on("GET", "/collections/t_idx__v1", { json: collection("t_idx__v1", [], 3) });
    fake.on("POST", "/collections/t_idx__versions/documents", (r) => ({ status: 201, json: JSON.parse(r.body) }));

    const writer = await small.bulkWriter("idx", 1);
    await writer.add([pizza, { id: "p-2", title: "Margherita" }, { id: "p-3", title: "Quattro stagioni", data: {} }]);
    expect(await writer.commit()).toEqual({ records: 3 });

    const imports = fake.requests.filter((r) => r.path.endsWith("/import"));
    expect(imports.map((r) => r.query.action)).toEqual(["upsert", "upsert"]);
    expect(imports.map((r) => lines(r.body).length)).toEqual([2, 1]);
    expect(lines(imports[0]!.body)[0]).toEqual({
      id: `${idKey("p-1")}-0`,
      rid: "p-1",
      rid_key: idKey("p-1"),
      writer: "0",
      superseded_by: [],
      title_text: "creme brulee pizza",
      // Which token stands where, and its first 1 to 4 code points, for the rank order's tiers.
      title_tags: [
        "w0creme p0c p0cr p0cre p0crem",
        "w1brulee p1b p1br p1bru p1brul",
        "w2pizza p2p p2pi p2piz p2pizz",
      ].join(" "),
      // 3 tokens, then 18 UTF-16 units: fewer tokens always rank first.
      title_length: 3 * 2 ** 24 + 18,
      data_text: ["spicy", "hot", "wood fired"],
      weight: 5,
      location: [48.8566, 2.3522],
      fpresent: [
        presence("fnum__price"),
        presence("fbool__inStock"),
        presence("fnum__dims__w"),
        presence("fnum__odd_20key"),
        // Layout 3: the value lists a record has, for != and negations.
        presence("fn__price"),
        presence("fb__inStock"),
        presence("fn__tags"),
        presence("fs__tags"),
        presence("fn__dims__w"),
        presence("fs__note"),
        presence("fn__odd_20key"),
      ],
      // Layout 2: scalar numbers and booleans, kept for majors written before layout 3.
      fnum__price: 12.5,
      fbool__inStock: true,
      fnum__dims__w: 3,
      fnum__odd_20key: 1,
      // Layout 3: every value at a path, an array's elements included; numbers with their least
      // and greatest, strings as tokens, facet values typed, scalars again for sort_by.
      fn__price: [12.5],
      fnmin__price: 12.5,
      fnmax__price: 12.5,
      ffv__price: ["n:12.5"],
      fsn__price: 12.5,
      fb__inStock: [true],
      ffv__inStock: ["b:true"],
      fn__tags: [3],
      fnmin__tags: 3,
      fnmax__tags: 3,
      fs__tags: [stringTok("Spicy"), stringTok("hot")],
      ffv__tags: ["n:3", "s:Spicy", "s:hot"],
      fn__dims__w: [3],
      fnmin__dims__w: 3,
      fnmax__dims__w: 3,
      ffv__dims__w: ["n:3"],
      fsn__dims__w: 3,
      fs__note: [stringTok("Wood-fired")],
      ffv__note: ["s:Wood-fired"],
      fss__note: "Wood-fired",
      fn__odd_20key: [1],
      fnmin__odd_20key: 1,
      fnmax__odd_20key: 1,
      ffv__odd_20key: ["n:1"],
      fsn__odd_20key: 1,
      // EXISTS: every path through objects whose value is not null, objects and arrays included.
      fexists: [
        existsTok("price"),
        existsTok("inStock"),
        existsTok("tags"),
        existsTok("dims"),
        existsTok("dims", "w"),
        existsTok("note"),
        existsTok("odd key"),
      ],
      rec: JSON.stringify(pizza),
    });
    // No weight: 0, below every weighted record; no coordinates: no location.
    expect(lines(imports[0]!.body)[1]).toMatchObject({ weight: 0, data_text: [], fpresent: [], fexists: [] });
    expect(lines(imports[0]!.body)[1]).not.toHaveProperty("location");

    const commit = fake.requests.at(-1)!;
    expect(`${commit.method} ${commit.path}`).toBe("POST /collections/t_idx__versions/documents");
    expect(commit.query).toEqual({ action: "upsert" });
    // The collection's layout goes with the version, so reads know which fields they may sort by.
    expect(JSON.parse(commit.body)).toEqual({ id: "1", major: 1, records: 3, state: "ready", layout: 3 });
  });

  it("drops the collection on abort and refuses a second commit", async () => {
    serveTree([]);
    fake.on("DELETE", "/collections/t_idx__v2", { status: 404, json: { message: "Not Found" } });
    fake.on("POST", "/collections", { status: 201, json: {} });
    const writer = await engine.bulkWriter("idx", 2);
    fake.on("DELETE", "/collections/t_idx__v2", { json: {} });
    await writer.abort();
    expect(calls().at(-1)).toBe("DELETE /collections/t_idx__v2");
    await expect(writer.commit()).rejects.toThrow(/cannot commit version 2 of idx: it was aborted/);
  });

  it("replaces a major left by a write the service could not record, but not one with changes on top", async () => {
    serveTree([entry("1", 1, 10)]);
    fake.on("DELETE", "/collections/t_idx__versions/documents", { json: { num_deleted: 1 } });
    fake.on("DELETE", "/collections/t_idx__v1", { json: {} });
    fake.on("POST", "/collections", { status: 201, json: {} });
    await engine.bulkWriter("idx", 1);
    expect(calls().slice(1)).toEqual([
      "DELETE /collections/t_idx__versions/documents",
      "DELETE /collections/t_idx__v1",
      "POST /collections",
    ]);
    expect(fake.requests[1]!.query).toEqual({ filter_by: "major:=1" });

    serveTree([entry("1", 1, 10), entry("1.1", 1, 11, "1")]);
    fake.requests.length = 0;
    await expect(engine.bulkWriter("idx", 1)).rejects.toThrow(
      /version 1 of idx already exists and has changes on top of it/,
    );
    expect(calls()).toEqual(["GET /collections/t_idx__versions/documents/export"]);
  });

  it("reports documents Typesense rejected", async () => {
    serveTree([]);
    fake.on("DELETE", "/collections/t_idx__v1", { status: 404, json: { message: "Not Found" } });
    fake.on("POST", "/collections", { status: 201, json: {} });
    fake.on("POST", "/collections/t_idx__v1/documents/import", {
      text: '{"success":true}\n{"success":false,"error":"Field `weight` must be an int32.","code":400,"document":"{}"}',
    });
    const writer = await engine.bulkWriter("idx", 1);
    const failure = writer.add([pizza, { id: "p-2", title: "Margherita" }]);
    await expect(failure).rejects.toThrow(
      "typesense: import into t_idx__v1: 1 of 2 documents rejected, first: Field `weight` must be an int32.",
    );
    await expect(failure).rejects.toMatchObject({ status: 400 });
  });
});

describe("typesense adapter: search", () => {
  beforeEach(() => serveTree());

  const SEARCH = "/collections/t_idx__v7/documents/search";
  const searches = (): Recorded[] => fake.requests.filter((r) => r.path === SEARCH);
  /** What every search asks, exact or with typos: all tokens, no splitting, this version's documents. */
  const common = {
    query_by: "title_text",
    prefix: "true",
    drop_tokens_threshold: "0",
    split_join_tokens: "off",
    prioritize_exact_match: "false",
    prioritize_token_position: "true",
    text_match_type: "max_score",
    max_candidates: "100",
    filter_by: "writer:=[0,1,3] && superseded_by:!=[1,3]",
    include_fields: "rec",
  };
  /** `_eval([...]):desc` as Typesense reads it: conditions in order, the first that holds scores. */
  const evalOf = (...entries: [string, number][]): string =>
    `_eval([${entries.map(([condition, score]) => `${condition}:${score}`).join(", ")}]):desc`;
  /** The query as a phrase at each later tagged position (1 to 7), the last token by tag `last`. */
  const later = (first: string, last: (position: number) => string): string =>
    `(${Array.from({ length: 6 }, (_, i) => `(title_tags:w${i + 1}${first} && title_tags:${last(i + 2)})`).join(" || ")})`;

  it("asks for exact matches first, ordered by start, then whole last word, then title length and id", async () => {
    const margherita: SearchRecord = { id: "m", title: "Margherita", data: { n: 1.5, nested: { keep: "as stored" } } };
    fake.on("GET", SEARCH, { json: searchAnswer([hit(margherita)], 12) });
    const { hits } = await engine.search("idx", "7.3", request({ query: "BRU!" }));
    expect(hits).toEqual([{ record: margherita }]);
    // The page is full of exact matches: nothing is asked with typos.
    expect(searches()).toHaveLength(1);
    expect(searches()[0]!.query).toEqual({
      ...common,
      q: "bru",
      num_typos: "0",
      typo_tokens_threshold: "0",
      sort_by: [
        evalOf(["(title_tags:w0bru)", 5], ["(title_tags:p0bru)", 4], ["(title_text:bru)", 1]),
        "title_length:asc",
        "rid:asc",
      ].join(","),
      per_page: "10",
    });
  });

  it("ranks a phrase at the start, then one later, by tags of the first eight positions", async () => {
    fake.on("GET", SEARCH, { json: searchAnswer([], 10) });
    await engine.search("idx", "7.3", request({ query: "Crème BRU" }));
    expect(searches()[0]!.query.sort_by).toBe(
      [
        evalOf(
          ["(title_tags:w0creme && title_tags:w1bru)", 5],
          ["(title_tags:w0creme && title_tags:p1bru)", 4],
          [later("creme", (p) => `w${p}bru`), 3],
          [later("creme", (p) => `p${p}bru`), 2],
          ["(title_text:bru)", 1],
        ),
        "title_length:asc",
        "rid:asc",
      ].join(","),
    );
    // A last token longer than four code points is matched by its first four.
    await engine.search("idx", "7.3", request({ query: "pizzas", weighted: true }));
    expect(searches()[1]!.query.sort_by).toBe(`${evalOf(["(title_tags:p0pizz)", 2])},weight:desc,title_length:asc`);
  });

  it("puts each page in the full rank order, which Typesense's three keys only approach", async () => {
    // Weighted: Typesense sorts by start, weight, then title length; the last token as a whole
    // word comes before title length in the rank order, so "Par Avion" passes "Paris" here.
    const paris: SearchRecord = { id: "paris", title: "Paris", weight: 5 };
    const avion: SearchRecord = { id: "avion", title: "Par Avion", weight: 5 };
    const heavy: SearchRecord = { id: "gare", title: "Gare de Paris", weight: 9 };
    fake.on("GET", SEARCH, { json: searchAnswer([hit(paris), hit(avion), hit(heavy)], 30) });
    const { hits } = await engine.search("idx", "7.3", request({ query: "par", weighted: true }));
    expect(hits.map((h) => h.record.id)).toEqual(["avion", "paris", "gare"]);
    expect(searches()[0]!.query.sort_by).toBe(`${evalOf(["(title_tags:p0par)", 2])},weight:desc,title_length:asc`);
  });

  it("with typos on and an exact match, asks once: typos only count when nothing matches exactly", async () => {
    fake.on("GET", SEARCH, { json: searchAnswer([hit({ id: "z", title: "Napoletana", weight: 1 })], 1) });
    const { hits } = await engine.search("idx", "7.3", request({ query: "napoletana", weighted: true }));
    expect(hits.map((h) => h.record.id)).toEqual(["z"]);
    expect(searches()).toHaveLength(1);
  });

  it("with typos on and no exact match, asks again with typos and orders fewest typos first", async () => {
    const oneTypo: SearchRecord = { id: "b", title: "Napoletano", weight: 1 };
    const twoTypos: SearchRecord = { id: "a", title: "Nopoletano", weight: 9 };
    fake.on("GET", SEARCH, (r) =>
      r.query.num_typos === "0"
        ? { json: searchAnswer([], 0) }
        : // Typesense's own order, here not fewest typos first.
          { json: searchAnswer([hit(twoTypos, "9"), hit(oneTypo, "8")], 2) },
    );
    const { hits } = await engine.search("idx", "7.3", request({ query: "napoletana", weighted: true }));
    expect(hits.map((h) => h.record.id)).toEqual(["b", "a"]);
    const [first, second] = searches();
    expect(first!.query).toMatchObject({ num_typos: "0", typo_tokens_threshold: "0", per_page: "10" });
    expect(second!.query).toEqual({
      ...common,
      q: "napoletana",
      num_typos: "2",
      min_len_1typo: "4",
      min_len_2typo: "8",
      enable_typos_for_numerical_tokens: "false",
      // Typo variants are sought until the page's worth of records match.
      typo_tokens_threshold: "10",
      per_page: "10",
      sort_by: "_text_match:desc,weight:desc,title_length:asc",
    });
  });

  it("drops what Typesense matched beyond Sift's typo rules, which count code points, not bytes", async () => {
    fake.on("GET", SEARCH, (r) =>
      r.query.num_typos === "0"
        ? { json: searchAnswer([], 0) }
        : // "пица" is 8 bytes, two typos for Typesense; 4 code points, one for Sift.
          { json: searchAnswer([hit({ id: "2", title: "Поцо" }), hit({ id: "1", title: "Пицо" })], 2) },
    );
    const { hits } = await engine.search("idx", "7.3", request({ query: "пица" }));
    expect(hits.map((h) => h.record.id)).toEqual(["1"]);
  });

  it("with typos off, asks once and never with typos", async () => {
    fake.on("GET", SEARCH, { json: searchAnswer([], 0) });
    await engine.search("idx", "7.3", request({ query: "pizza", typoTolerance: false }));
    expect(searches()).toHaveLength(1);
    expect(searches()[0]!.query).toMatchObject({ num_typos: "0", typo_tokens_threshold: "0" });
    expect(searches()[0]!.query).not.toHaveProperty("min_len_1typo");
  });

  it("never lets a digits-only token match with typos", async () => {
    fake.on("GET", SEARCH, (r) =>
      r.query.num_typos === "0"
        ? { json: searchAnswer([], 0) }
        : { json: searchAnswer([hit({ id: "x", title: "Pizzo 1234" }), hit({ id: "y", title: "Pizza 1235" })], 2) },
    );
    // No token of "1234" may have a typo: the second request could add nothing.
    await engine.search("idx", "7.3", request({ query: "1234" }));
    expect(searches()).toHaveLength(1);
    // With "pizza" it is asked, telling Typesense to leave numbers alone; a match that changed
    // one anyway (Typesense counts only ASCII digits as numbers) is not passed on.
    const { hits } = await engine.search("idx", "7.3", request({ query: "pizza 1234" }));
    expect(searches()[2]!.query).toMatchObject({ q: "pizza 1234", enable_typos_for_numerical_tokens: "false" });
    expect(hits.map((h) => h.record.id)).toEqual(["x"]);
  });

  it("sorts by distance after the tiers, with the distance from Typesense", async () => {
    const near: SearchRecord = { id: "b", title: "Pizza", latitude: "48.86", longitude: "2.35" };
    const far: SearchRecord = { id: "a", title: "Pizza", latitude: "45.76", longitude: "4.83" };
    const nowhere: SearchRecord = { id: "0", title: "Pizza" };
    fake.on("GET", SEARCH, {
      json: searchAnswer([hit(near, "9", 712), hit(far, "9", 392_000), hit(nowhere, "9", 2_147_483_647)], 10),
    });
    const { hits } = await engine.search(
      "idx",
      "7.3",
      request({ query: "pizza", geo: { latitude: 48.85, longitude: 2.35 } }),
    );
    expect(searches()[0]!.query.sort_by).toBe(
      `${evalOf(["(title_tags:p0pizz)", 2])},location(48.85, 2.35):asc,title_length:asc`,
    );
    // Typesense reports a distance for records without coordinates too; it is not passed on.
    expect(hits).toEqual([
      { record: near, distanceMeters: 712 },
      { record: far, distanceMeters: 392_000 },
      { record: nowhere },
    ]);
  });

  it("with weight and distance (Typesense's three keys), orders their ties by title length, then id", async () => {
    const b: SearchRecord = { id: "b", title: "Pizza", weight: 3 };
    const a: SearchRecord = { id: "a", title: "Pizza", weight: 3 };
    const longer: SearchRecord = { id: "0", title: "Pizza Roma", weight: 3 };
    const heavy: SearchRecord = { id: "1", title: "Pizza Napoletana", weight: 9 };
    // Code point order (as UTF-8 bytes sort), not UTF-16: U+1F355 after U+FF5A.
    const emoji: SearchRecord = { id: "\u{1F355}", title: "Pizza", weight: 3 };
    const fullwidth: SearchRecord = { id: "\uFF5A", title: "Pizza", weight: 3 };
    const later: SearchRecord = { id: "00", title: "Una pizza", weight: 9 };
    fake.on("GET", SEARCH, {
      json: searchAnswer(
        [heavy, emoji, longer, b, fullwidth, a, later].map((record) => hit(record, "9", 2_147_483_647)),
        10,
      ),
    });
    const { hits } = await engine.search(
      "idx",
      "7",
      request({ query: "pizza", weighted: true, geo: { latitude: 1, longitude: 2 } }),
    );
    expect(fake.requests.at(-1)!.query.sort_by).toBe(
      `${evalOf(["(title_tags:p0pizz)", 2])},weight:desc,location(1, 2):asc`,
    );
    expect(hits.map((h) => h.record.id)).toEqual(["1", "a", "b", "\uFF5A", "\u{1F355}", "0", "00"]);
  });

  it("matches whole tokens over title and data text for scope=all, title before data", async () => {
    fake.on("GET", SEARCH, { json: searchAnswer([], 10) });
    await engine.search("idx", "7", request({ scope: "all", query: "wood-fired" }));
    expect(fake.requests.at(-1)!.query).toMatchObject({
      q: "wood fired",
      query_by: "title_text,data_text",
      prefix: "false",
      sort_by: [
        evalOf(
          ["(title_tags:w0wood && title_tags:w1fired)", 3],
          [
            `(${Array.from({ length: 6 }, (_, i) => `(title_tags:w${i + 1}wood && title_tags:w${i + 2}fired)`).join(" || ")})`,
            2,
          ],
          ["(title_text:wood && title_text:fired)", 1],
        ),
        "title_length:asc",
        "rid:asc",
      ].join(","),
    });
    expect(fake.requests.at(-1)!.query).not.toHaveProperty("query_by_weights");
  });

  it("keeps the query string within Typesense's 4000 characters, giving up the finest conditions first", async () => {
    fake.on("GET", SEARCH, { json: searchAnswer([], 10) });
    const ask = async (length: number) => {
      const words = ["a", "b", "c", "d"].map((letter) => letter.repeat(length));
      await engine.search("idx", "7.3", request({ query: words.join(" ") }));
      const sent = searches().at(-1)!;
      expect(sent.rawQuery.length).toBeLessThanOrEqual(4000);
      const start = `(${words.map((w, i) => `title_tags:${i < 3 ? `w${i}${w}` : "p3dddd"}`).join(" && ")})`;
      return { sent: sent.query.sort_by!, start, words };
    };
    // Four words of 70 letters: the whole-last-word conditions go, the two tiers stay.
    const medium = await ask(70);
    expect(medium.sent).toMatch(/^_eval\(\[\(title_tags:w0a+ && [^\]]*\):2, \(\(title_tags:w1a+ [^\]]*\):1\]\):desc,/);
    expect(medium.sent.startsWith(`_eval([${medium.start}:2, `)).toBe(true);
    // Of 160: only the start tier is left.
    const long = await ask(160);
    expect(long.sent).toBe(`${evalOf([long.start, 2])},title_length:asc,rid:asc`);
  });

  it("ranks collections written before title tags as before: text match, weight, distance, id", async () => {
    serveTree([entry("7", 7, 3, undefined, "ready", true)]);
    fake.on("GET", "/collections/t_idx__v7/documents/search", { json: searchAnswer([], 10) });
    await engine.search("idx", "7", request({ query: "Crème BRU" }));
    expect(searches()[0]!.query).toEqual({
      ...common,
      filter_by: "writer:=0",
      q: "creme bru",
      num_typos: "0",
      typo_tokens_threshold: "0",
      sort_by: "_text_match:desc,rid:asc",
      per_page: "10",
    });
    await engine.search("idx", "7", request({ weighted: true, geo: { latitude: 1, longitude: 2 } }));
    expect(searches()[1]!.query.sort_by).toBe("_text_match(buckets: 10):desc,weight:desc,location(1, 2):asc");
  });

  it("reads a branch through its own lineage only", async () => {
    fake.on("GET", SEARCH, { json: searchAnswer([]) });
    await engine.search("idx", "7.2", request());
    await engine.search("idx", "7", request());
    // Exact, then with typos (nothing matched exactly), for each version.
    expect(searches().map((r) => r.query.filter_by)).toEqual([
      "writer:=[0,1,2] && superseded_by:!=[1,2]",
      "writer:=[0,1,2] && superseded_by:!=[1,2]",
      "writer:=0",
      "writer:=0",
    ]);
  });

  it("sends nothing for a query without tokens", async () => {
    expect(await engine.search("idx", "7", request({ query: " ?! " }))).toEqual({
      hits: [],
      totalHits: 0,
      totalHitsExact: true,
    });
    expect(fake.requests.filter((r) => r.path.endsWith("/search"))).toEqual([]);
  });

  it("serves known versions from the cached tree, re-reads it for an unknown one, then fails clearly", async () => {
    fake.on("GET", SEARCH, { json: searchAnswer([]) });
    await engine.search("idx", "7.3", request());
    await engine.search("idx", "7.2", request());
    await expect(engine.search("idx", "7.9", request())).rejects.toBeInstanceOf(UnknownVersionError);
    expect(calls().filter((c) => c.endsWith("/export"))).toHaveLength(2);
  });
});

describe("typesense adapter: data filters", () => {
  const schema = [
    "rid",
    "writer",
    "fpresent",
    "fnum__.*",
    "fbool__.*",
    "fnum__price",
    "fbool__inStock",
    "fnum__dims__w",
  ];

  async function filterFor(expr: SearchRequest["filter"]): Promise<string | undefined> {
    fake.requests.length = 0;
    await engine.search("idx", "7", request({ filter: expr }));
    return fake.requests.find((r) => r.path.endsWith("/search"))?.query.filter_by;
  }

  beforeEach(() => {
    serveTree();
    fake.on("GET", "/collections/t_idx__v7", { json: collection("t_idx__v7", schema, 3) });
    // A full page of exact matches: one search request each.
    fake.on("GET", "/collections/t_idx__v7/documents/search", { json: searchAnswer([], 10) });
  });

  it("compares typed, flattened fields", async () => {
    expect(
      await filterFor({
        kind: "and",
        args: [
          { kind: "cmp", path: ["price"], op: "<", value: 20 },
          { kind: "cmp", path: ["inStock"], op: "=", value: true },
          { kind: "cmp", path: ["dims", "w"], op: ">=", value: -1.5 },
        ],
      }),
    ).toBe("(writer:=0 && (fnum__price:<20 && fbool__inStock:=true && fnum__dims__w:>=-1.5))");
  });

  it("keeps != to records that have the field, and lets a negation include records without it", async () => {
    const price = (op: "!=" | "=" | "<") => ({ kind: "cmp" as const, path: ["price"], op, value: 5 });
    const token = presence("fnum__price");
    expect(await filterFor(price("!="))).toBe(`(writer:=0 && (fnum__price:!=5 && fpresent:=[${token}]))`);
    expect(await filterFor({ kind: "not", arg: price("=") })).toBe("(writer:=0 && fnum__price:!=5)");
    expect(await filterFor({ kind: "not", arg: price("<") })).toBe(
      `(writer:=0 && (fnum__price:>=5 || fpresent:!=[${token}]))`,
    );
    expect(
      await filterFor({
        kind: "not",
        arg: { kind: "or", args: [price("<"), { kind: "cmp", path: ["inStock"], op: "=", value: false }] },
      }),
    ).toBe(`(writer:=0 && ((fnum__price:>=5 || fpresent:!=[${token}]) && fbool__inStock:!=false))`);
  });

  it("settles comparisons on fields no record has without asking Typesense to filter on them", async () => {
    const color = { kind: "cmp" as const, path: ["color"], op: "<" as const, value: 3 };
    expect(await filterFor(color)).toBeUndefined();
    expect(await filterFor({ kind: "not", arg: color })).toBe("writer:=0");
    expect(await filterFor({ kind: "or", args: [color, { kind: "cmp", path: ["price"], op: ">", value: 1 }] })).toBe(
      "(writer:=0 && fnum__price:>1)",
    );
    // The schema learns pattern fields as documents arrive: an unknown field re-reads it once.
    expect(calls()).toEqual(["GET /collections/t_idx__v7", "GET /collections/t_idx__v7/documents/search"]);
  });
});

describe("typesense adapter: string, IN and EXISTS filters on layout 3", () => {
  const schema = [
    "rid",
    "writer",
    "fpresent",
    "fexists",
    "fn__price",
    "fnmin__price",
    "fnmax__price",
    "fs__brand",
    "fs__tags",
    "fn__tags",
    "fb__inStock",
  ];

  async function filterFor(expr: SearchRequest["filter"]): Promise<string | undefined> {
    fake.requests.length = 0;
    await engine.search("idx", "7", request({ filter: expr }));
    return fake.requests.find((r) => r.path.endsWith("/search"))?.query.filter_by;
  }
  const brand = (op: "=" | "!=", value: string) => ({ kind: "cmp" as const, path: ["brand"], op, value });
  const price = (op: "<" | ">=" | "=" | "!=", value: number) => ({ kind: "cmp" as const, path: ["price"], op, value });

  beforeEach(() => {
    serveTree([{ ...entry("7", 7, 3), layout: 3 }]);
    fake.on("GET", "/collections/t_idx__v7", { json: collection("t_idx__v7", schema, 3) });
    fake.on("GET", "/collections/t_idx__v7/documents/search", { json: searchAnswer([], 10) });
  });

  it("compares strings exactly as tokens, which need no escaping, backticks included", async () => {
    expect(await filterFor(brand("=", "Acme"))).toBe(`(writer:=0 && fs__brand:=${stringTok("Acme")})`);
    expect(await filterFor(brand("=", "a`b, c]"))).toBe(`(writer:=0 && fs__brand:=${stringTok("a`b, c]")})`);
    // != needs a string there and none equal; its negation is "equal, or no string at all".
    const token = presence("fs__brand");
    expect(await filterFor(brand("!=", "Acme"))).toBe(
      `(writer:=0 && (fs__brand:!=${stringTok("Acme")} && fpresent:=[${token}]))`,
    );
    expect(await filterFor({ kind: "not", arg: brand("!=", "Acme") })).toBe(
      `(writer:=0 && (fs__brand:=${stringTok("Acme")} || fpresent:!=[${token}]))`,
    );
    expect(await filterFor({ kind: "not", arg: brand("=", "Acme") })).toBe(
      `(writer:=0 && fs__brand:!=${stringTok("Acme")})`,
    );
  });

  it("reads ranges on numbers from their least and greatest value, so arrays negate exactly", async () => {
    const token = presence("fn__price");
    expect(await filterFor(price("<", 20))).toBe("(writer:=0 && fnmin__price:<20)");
    expect(await filterFor(price(">=", 20))).toBe("(writer:=0 && fnmax__price:>=20)");
    // No element below 20: the least is not, or there is no number at all.
    expect(await filterFor({ kind: "not", arg: price("<", 20) })).toBe(
      `(writer:=0 && (fnmin__price:>=20 || fpresent:!=[${token}]))`,
    );
    expect(await filterFor(price("=", 5))).toBe("(writer:=0 && fn__price:=5)");
    expect(await filterFor(price("!=", 5))).toBe(`(writer:=0 && (fn__price:!=5 && fpresent:=[${token}]))`);
  });

  it("splits IN by type, one list per typed field; its negation keeps records with none of them", async () => {
    const tags = { kind: "in" as const, path: ["tags"], values: ["red", 3, "blue", "red", true] };
    expect(await filterFor(tags)).toBe(
      `(writer:=0 && (fn__tags:[3] || fs__tags:[${stringTok("red")},${stringTok("blue")}]))`,
    );
    expect(await filterFor({ kind: "not", arg: tags })).toBe(
      `(writer:=0 && (fn__tags:![3] && fs__tags:![${stringTok("red")},${stringTok("blue")}]))`,
    );
    // No record has a boolean tag: IN [true] alone matches nothing, and asks nothing.
    expect(await filterFor({ kind: "in", path: ["tags"], values: [true] })).toBeUndefined();
  });

  it("tests EXISTS by the path's token, and its negation by its absence", async () => {
    const exists = { kind: "exists" as const, path: ["specs", "color"] };
    expect(await filterFor(exists)).toBe(`(writer:=0 && fexists:=${existsTok("specs", "color")})`);
    expect(await filterFor({ kind: "not", arg: exists })).toBe(
      `(writer:=0 && fexists:!=${existsTok("specs", "color")})`,
    );
  });

  it("answers string filters and EXISTS on a major of layout 2 as if no record had the field", async () => {
    serveTree();
    fake.on("GET", "/collections/t_idx__v7", { json: collection("t_idx__v7", ["rid", "fnum__price"], 3) });
    expect(await filterFor(brand("=", "Acme"))).toBeUndefined();
    expect(await filterFor({ kind: "exists", path: ["price"] })).toBeUndefined();
    expect(await filterFor({ kind: "not", arg: brand("=", "Acme") })).toBe("writer:=0");
    expect(await filterFor({ kind: "in", path: ["price"], values: [1, "x"] })).toBe("(writer:=0 && fnum__price:[1])");
  });
});

describe("typesense adapter: totals, pages, facets and sort", () => {
  const SEARCH = "/collections/t_idx__v7/documents/search";
  const searches = (): Recorded[] => fake.requests.filter((r) => r.path === SEARCH);
  const schema = ["rid", "writer", "ffv__brand", "fn__price", "ffv__price", "fsn__price", "fss__price"];

  beforeEach(() => {
    serveTree([{ ...entry("7", 7, 3), layout: 3 }]);
    fake.on("GET", "/collections/t_idx__v7", { json: collection("t_idx__v7", schema, 3) });
  });

  it("answers found as the total, and pages by offset and limit past the first", async () => {
    fake.on("GET", SEARCH, { json: searchAnswer([hit({ id: "a", title: "Pizza" })], 1234) });
    const first = await engine.search("idx", "7", request({ query: "pizza" }));
    expect(first).toEqual({ hits: [{ record: { id: "a", title: "Pizza" } }], totalHits: 1234, totalHitsExact: true });
    expect(searches()[0]!.query).toMatchObject({ per_page: "10" });
    await engine.search("idx", "7", request({ query: "pizza", offset: 990 }));
    expect(searches()[1]!.query).toMatchObject({ offset: "990", limit: "10" });
    expect(searches()[1]!.query).not.toHaveProperty("per_page");
  });

  it("asks again with typos for the same page, up to its end, when nothing matches exactly", async () => {
    fake.on("GET", SEARCH, [
      { json: searchAnswer([], 0) },
      // Typesense counts bytes: "пица" reaches a record Sift's rules refuse.
      { json: searchAnswer([hit({ id: "b", title: "Pizza" }), hit({ id: "c", title: "Пицца" })], 5) },
    ]);
    const page = await engine.search("idx", "7", request({ query: "pizzza", offset: 20 }));
    expect(searches()[1]!.query).toMatchObject({ offset: "20", limit: "10", typo_tokens_threshold: "30" });
    expect(page.hits.map((h) => h.record.id)).toEqual(["b"]);
    expect(page).toMatchObject({ totalHits: 4, totalHitsExact: false });
  });

  it("facets by the typed values and the numbers, orders them, cuts them, and reads float32 stats back", async () => {
    fake.on("GET", SEARCH, {
      json: {
        ...searchAnswer([], 40),
        facet_counts: [
          {
            field_name: "ffv__brand",
            sampled: false,
            stats: { total_values: 4 },
            counts: [
              { value: "s:bolt", count: 3, highlighted: "" },
              { value: "s:Acme", count: 7, highlighted: "" },
              { value: "n:42", count: 3, highlighted: "" },
              { value: "b:false", count: 3, highlighted: "" },
              { value: "s:Bolt", count: 3, highlighted: "" },
            ],
          },
          {
            field_name: "ffv__price",
            sampled: false,
            stats: {},
            counts: [{ value: "n:19.99", count: 2, highlighted: "" }],
          },
          {
            field_name: "fn__price",
            sampled: false,
            stats: { min: 0.10000000149011612, max: 19.989999771118164, avg: 10, sum: 20, total_values: 2 },
            counts: [{ value: "19.989999771118164", count: 2, highlighted: "" }],
          },
        ],
      },
    });
    const page = await engine.search(
      "idx",
      "7",
      request({
        query: "pizza",
        facets: [
          { path: ["brand"], maxValues: 4 },
          { path: ["price"], maxValues: 10 },
          { path: ["nothing"], maxValues: 10 },
        ],
      }),
    );
    const sent = searches()[0]!.query;
    // Every field the schema has, once; more values than shown, so ties at the cut are all there.
    expect(sent.facet_by).toBe("ffv__brand,ffv__price,fn__price");
    expect(sent.max_facet_values).toBe("250");
    expect(page.facets).toEqual([
      {
        path: ["brand"],
        values: [
          { value: "Acme", count: 7 },
          { value: 42, count: 3 },
          { value: false, count: 3 },
          { value: "Bolt", count: 3 },
        ],
      },
      { path: ["price"], values: [{ value: 19.99, count: 2 }], stats: { min: 0.1, max: 19.99 } },
      { path: ["nothing"], values: [] },
    ]);
    expect(page.totalHits).toBe(40);
  });

  it("sorts by the field in place of weight, numbers then strings, missing last, and orders the page alike", async () => {
    const rec = (id: string, price?: unknown): SearchRecord => ({
      id,
      title: "Pizza",
      weight: 9,
      ...(price === undefined ? {} : { data: { price } }),
    });
    // Typesense's page, out of order: the adapter settles it with the same keys.
    fake.on("GET", SEARCH, {
      json: searchAnswer([
        hit(rec("none")),
        hit(rec("s", "cheap")),
        hit(rec("n1", 5)),
        hit(rec("n2", 12)),
        hit(rec("arr", [1])),
      ]),
    });
    const page = await engine.search(
      "idx",
      "7",
      request({ query: "pizza", weighted: true, sort: { path: ["price"], direction: "desc" } }),
    );
    const sortBy = searches()[0]!.query.sort_by!;
    expect(sortBy.split(",").slice(1)).toEqual([
      "fsn__price(missing_values: last):desc",
      "fss__price(missing_values: last):desc",
    ]);
    expect(sortBy).not.toContain("weight");
    // An array is no sort value: it ties with the record without one, and the id settles it.
    expect(page.hits.map((h) => h.record.id)).toEqual(["n2", "n1", "s", "arr", "none"]);
  });

  it("answers no tokens with nothing, and empty facets, without asking", async () => {
    const page = await engine.search(
      "idx",
      "7",
      request({ query: "?!", facets: [{ path: ["brand"], maxValues: 10 }] }),
    );
    expect(page).toEqual({ hits: [], totalHits: 0, totalHitsExact: true, facets: [{ path: ["brand"], values: [] }] });
    expect(searches()).toEqual([]);
  });
});

describe("typesense adapter: record changes", () => {
  const a: SearchRecord = { id: "a", title: "Apple pie", data: {} };

  function answerChange(visible: { rid: string; superseded_by: string[] }[]) {
    fake.on("POST", "/collections/t_idx__versions/documents", (r) => ({ status: 201, json: JSON.parse(r.body) }));
    fake.on("GET", "/collections/t_idx__v7/documents/search", {
      json: searchAnswer(
        visible.map((v) => ({
          document: { id: `${idKey(v.rid)}-0`, rid: v.rid, superseded_by: v.superseded_by },
          text_match: 100,
        })),
      ),
    });
    fake.on("POST", "/collections/t_idx__v7/documents/import", importOk);
  }

  it("writes the new documents, marks what the parent saw as superseded, then records the version", async () => {
    serveTree([entry("7", 7, 3)]);
    answerChange([
      { rid: "a", superseded_by: [] },
      { rid: "b", superseded_by: ["4"] },
    ]);
    await engine.applyChange("idx", { version: "7.5", parent: "7", upserts: [a], deletes: ["b", "zz"] });

    expect(calls()).toEqual([
      "GET /collections/t_idx__versions/documents/export",
      "POST /collections/t_idx__versions/documents",
      "GET /collections/t_idx__v7/documents/search",
      "POST /collections/t_idx__v7/documents/import",
      "POST /collections/t_idx__v7/documents/import",
      "POST /collections/t_idx__versions/documents",
    ]);
    const [, pending, lookup, upsert, marks, ready] = fake.requests;
    expect(JSON.parse(pending!.body)).toEqual({ id: "7.5", major: 7, parent: "7", records: 0, state: "pending" });
    expect(lookup!.query).toMatchObject({
      q: "*",
      filter_by: `rid_key:=[${idKey("a")},${idKey("b")},${idKey("zz")}] && writer:=0`,
      per_page: "250",
      include_fields: "id,rid,superseded_by",
    });
    expect(upsert!.query.action).toBe("upsert");
    expect(lines(upsert!.body)).toEqual([
      expect.objectContaining({ id: `${idKey("a")}-5`, rid: "a", writer: "5", superseded_by: [] }),
    ]);
    expect(marks!.query.action).toBe("update");
    expect(lines(marks!.body)).toEqual([
      { id: `${idKey("a")}-0`, superseded_by: ["5"] },
      { id: `${idKey("b")}-0`, superseded_by: ["4", "5"] },
    ]);
    // 3 records, "a" replaced, "b" deleted, "zz" was not there.
    expect(JSON.parse(ready!.body)).toEqual({ id: "7.5", major: 7, parent: "7", records: 2, state: "ready" });
  });

  it("erases what an earlier attempt of the same version left before applying the change again", async () => {
    serveTree([entry("7", 7, 3), entry("7.1", 7, 0, "7", "pending")]);
    fake.on("DELETE", "/collections/t_idx__v7/documents", { json: { num_deleted: 1 } });
    let markSearches = 0;
    fake.on("GET", "/collections/t_idx__v7/documents/search", (r) => {
      if (r.query.filter_by !== "superseded_by:=[1]") return { json: searchAnswer([]) };
      markSearches++;
      const stale = { document: { id: `${idKey("a")}-0`, rid: "a", superseded_by: ["1", "3"] }, text_match: 100 };
      return { json: searchAnswer(markSearches === 1 ? [stale] : []) };
    });
    fake.on("POST", "/collections/t_idx__v7/documents/import", importOk);
    fake.on("POST", "/collections/t_idx__versions/documents", (r) => ({ status: 201, json: JSON.parse(r.body) }));

    await engine.applyChange("idx", { version: "7.1", parent: "7", upserts: [], deletes: ["nope"] });

    expect(calls().slice(1, 6)).toEqual([
      "POST /collections/t_idx__versions/documents",
      "DELETE /collections/t_idx__v7/documents",
      "GET /collections/t_idx__v7/documents/search",
      "POST /collections/t_idx__v7/documents/import",
      "GET /collections/t_idx__v7/documents/search",
    ]);
    expect(JSON.parse(fake.requests[1]!.body)).toMatchObject({ id: "7.1", state: "pending" });
    expect(fake.requests[2]!.query).toEqual({ filter_by: "writer:=1" });
    expect(fake.requests[4]!.query.action).toBe("update");
    expect(lines(fake.requests[4]!.body)).toEqual([{ id: `${idKey("a")}-0`, superseded_by: ["3"] }]);
    expect(JSON.parse(fake.requests.at(-1)!.body)).toMatchObject({ id: "7.1", state: "ready", records: 3 });
  });

  it("refuses to redo a version others build on, a parent it does not know, and a change across majors", async () => {
    serveTree([entry("7", 7, 3), entry("7.1", 7, 3, "7"), entry("7.2", 7, 3, "7.1")]);
    await expect(engine.applyChange("idx", { version: "7.1", parent: "7", upserts: [a], deletes: [] })).rejects.toThrow(
      /version 7.1 of idx already exists and has versions on top of it/,
    );
    await expect(
      engine.applyChange("idx", { version: "7.3", parent: "7.4", upserts: [a], deletes: [] }),
    ).rejects.toBeInstanceOf(UnknownVersionError);
    await expect(engine.applyChange("idx", { version: "8.1", parent: "7", upserts: [a], deletes: [] })).rejects.toThrow(
      /a change is a minor of its parent's major/,
    );
    expect(fake.requests.every((r) => r.method === "GET")).toBe(true);
  });
});

describe("typesense adapter: versions", () => {
  it("lists ready versions with their parents and counts", async () => {
    serveTree([entry("7", 7, 3), entry("7.1", 7, 4, "7"), entry("7.2", 7, 0, "7.1", "pending")]);
    expect(await engine.versions("idx")).toEqual([
      { version: "7", parent: null, records: 3 },
      { version: "7.1", parent: "7", records: 4 },
    ]);
    fake.on("GET", "/collections/t_gone__versions/documents/export", { status: 404, json: { message: "Not Found" } });
    expect(await engine.versions("gone")).toEqual([]);
  });

  it("points the alias at the active version's major", async () => {
    serveTree();
    fake.on("PUT", "/aliases/t_idx", (r) => ({ json: { name: "t_idx", ...JSON.parse(r.body) } }));
    await engine.activate("idx", "7.3");
    expect(JSON.parse(fake.requests.at(-1)!.body)).toEqual({ collection_name: "t_idx__v7" });
  });

  it("gets one record and counts records through the version's lineage", async () => {
    serveTree();
    fake.on("GET", "/collections/t_idx__v7/documents/search", (r) =>
      r.query.per_page === "1" && r.query.include_fields === "rec"
        ? { json: searchAnswer([hit(pizza)]) }
        : { json: searchAnswer([], 5) },
    );
    expect(await engine.get("idx", "7.2", "p-1")).toEqual(pizza);
    expect(await engine.count("idx", "7.3")).toBe(5);
    const [get, count] = fake.requests.filter((r) => r.path.endsWith("/search"));
    expect(get!.query).toMatchObject({
      q: "*",
      filter_by: `rid_key:=${idKey("p-1")} && writer:=[0,1,2] && superseded_by:!=[1,2]`,
    });
    expect(count!.query).toMatchObject({
      q: "*",
      filter_by: "writer:=[0,1,3] && superseded_by:!=[1,3]",
      include_fields: "id",
    });
  });

  it("returns null for a record the version does not see", async () => {
    serveTree();
    fake.on("GET", "/collections/t_idx__v7/documents/search", { json: searchAnswer([]) });
    expect(await engine.get("idx", "7", "gone")).toBeNull();
  });

  it("checkpoints a version's visible records into a new major", async () => {
    serveTree();
    const b: SearchRecord = { id: "b", title: "Banana bread", weight: 2 };
    fake.on("GET", "/collections/t_idx__v7/documents/export", {
      text: `${jsonl([{ rec: JSON.stringify(pizza) }, { rec: JSON.stringify(b) }])}\n`,
    });
    fake.on("DELETE", "/collections/t_idx__v9", { status: 404, json: { message: "Not Found" } });
    fake.on("POST", "/collections", { status: 201, json: {} });
    fake.on("POST", "/collections/t_idx__v9/documents/import", importOk);
    fake.on("POST", "/collections/t_idx__versions/documents", (r) => ({ status: 201, json: JSON.parse(r.body) }));

    expect(await engine.checkpoint("idx", "7.2", 9)).toEqual({ records: 2 });
    const exported = fake.requests.find((r) => r.path === "/collections/t_idx__v7/documents/export")!;
    expect(exported.query).toEqual({ filter_by: "writer:=[0,1,2] && superseded_by:!=[1,2]", include_fields: "rec" });
    const imported = fake.requests.find((r) => r.path === "/collections/t_idx__v9/documents/import")!;
    expect(lines(imported.body)).toEqual([
      expect.objectContaining({ id: `${idKey("p-1")}-0`, writer: "0", rec: JSON.stringify(pizza) }),
      expect.objectContaining({ id: `${idKey("b")}-0`, writer: "0", weight: 2 }),
    ]);
    expect(JSON.parse(fake.requests.at(-1)!.body)).toEqual({
      id: "9",
      major: 9,
      records: 2,
      state: "ready",
      layout: 3,
    });
  });

  it("drops a minor: unlisted first, then its documents and marks, then its entry", async () => {
    serveTree();
    fake.on("POST", "/collections/t_idx__versions/documents", (r) => ({ status: 201, json: JSON.parse(r.body) }));
    fake.on("DELETE", "/collections/t_idx__v7/documents", { json: { num_deleted: 2 } });
    fake.on("GET", "/collections/t_idx__v7/documents/search", { json: searchAnswer([]) });
    fake.on("DELETE", "/collections/t_idx__versions/documents/7.3", { json: entry("7.3", 7, 5, "7.1") });
    await engine.dropVersion("idx", "7.3");
    expect(calls().slice(1)).toEqual([
      "POST /collections/t_idx__versions/documents",
      "DELETE /collections/t_idx__v7/documents",
      "GET /collections/t_idx__v7/documents/search",
      "DELETE /collections/t_idx__versions/documents/7.3",
    ]);
    expect(JSON.parse(fake.requests[1]!.body)).toMatchObject({ id: "7.3", state: "pending" });
    expect(fake.requests[2]!.query).toEqual({ filter_by: "writer:=3" });
    expect(fake.requests[3]!.query.filter_by).toBe("superseded_by:=[3]");
  });

  it("drops a major: its collection, then its entries and its minors'", async () => {
    fake.on("DELETE", "/collections/t_idx__v7", { json: {} });
    fake.on("DELETE", "/collections/t_idx__versions/documents", { json: { num_deleted: 4 } });
    await engine.dropVersion("idx", "7");
    expect(calls()).toEqual(["DELETE /collections/t_idx__v7", "DELETE /collections/t_idx__versions/documents"]);
    expect(fake.requests[1]!.query).toEqual({ filter_by: "major:=7" });
  });
});

describe("typesense adapter: erasure", () => {
  it("deletes a record's documents from every major and lowers the counts of the versions that saw one", async () => {
    serveTree([
      entry("7", 7, 3),
      entry("7.1", 7, 4, "7"),
      entry("7.2", 7, 4, "7.1"),
      entry("7.3", 7, 5, "7.1"),
      entry("8", 8, 2),
    ]);
    // "s" as the major wrote it, replaced by 7.1, whose document 7.2 deleted.
    fake.on("GET", "/collections/t_idx__v7/documents/search", {
      json: searchAnswer([
        { document: { id: `${idKey("s")}-0`, writer: "0", superseded_by: ["1"] }, text_match: 100 },
        { document: { id: `${idKey("s")}-1`, writer: "1", superseded_by: ["2"] }, text_match: 100 },
      ]),
    });
    fake.on("GET", "/collections/t_idx__v8/documents/search", { json: searchAnswer([]) });
    fake.on("DELETE", "/collections/t_idx__v7/documents", { json: { num_deleted: 2 } });
    fake.on("POST", "/collections/t_idx__versions/documents", (r) => ({ status: 201, json: JSON.parse(r.body) }));

    expect(await engine.purge("idx", "s")).toEqual({
      found: true,
      changed: [
        { version: "7", records: 2 },
        { version: "7.1", records: 3 },
        { version: "7.3", records: 4 },
      ],
    });
    expect(calls()).toEqual([
      "GET /collections/t_idx__versions/documents/export",
      "GET /collections/t_idx__v7/documents/search",
      "DELETE /collections/t_idx__v7/documents",
      "POST /collections/t_idx__versions/documents",
      "POST /collections/t_idx__versions/documents",
      "POST /collections/t_idx__versions/documents",
      "GET /collections/t_idx__v8/documents/search",
    ]);
    const [, find, erase, ...rest] = fake.requests;
    expect(find!.query).toMatchObject({
      q: "*",
      filter_by: `rid_key:=${idKey("s")}`,
      per_page: "250",
      include_fields: "id,writer,superseded_by",
    });
    expect(erase!.query).toEqual({ filter_by: `rid_key:=${idKey("s")}` });
    expect(rest.slice(0, 3).map((r) => JSON.parse(r.body))).toEqual([
      { id: "7", major: 7, records: 2, state: "ready", layout: 2 },
      { id: "7.1", major: 7, parent: "7", records: 3, state: "ready" },
      { id: "7.3", major: 7, parent: "7.1", records: 4, state: "ready" },
    ]);
    expect(rest[3]!.query.filter_by).toBe(`rid_key:=${idKey("s")}`);
  });

  it("reports a record no collection holds, deleting nothing", async () => {
    serveTree([entry("7", 7, 3)]);
    fake.on("GET", "/collections/t_idx__v7/documents/search", { json: searchAnswer([]) });
    expect(await engine.purge("idx", "nobody")).toEqual({ found: false, changed: [] });
    expect(fake.requests.every((r) => r.method === "GET")).toBe(true);
  });
});

describe("typesense adapter: failures", () => {
  it("retries 503 and 429 with backoff, then succeeds", async () => {
    const patient = createTypesenseEngine({
      url: fake.url,
      apiKey: "k",
      collectionPrefix: "t_",
      retry: { retries: 3, baseDelayMs: 1, maxDelayMs: 2 },
    });
    fake.on("PUT", "/aliases/t_idx", [
      { status: 503, json: { message: "Not Ready or Lagging" } },
      { status: 429, json: { message: "Rate limit exceeded or blocked" } },
      { json: { name: "t_idx", collection_name: "t_idx__v7" } },
    ]);
    serveTree([entry("7", 7, 1)]);
    await patient.activate("idx", "7");
    expect(calls().filter((c) => c === "PUT /aliases/t_idx")).toHaveLength(3);
  });

  it("gives up after the retries with the operation, status and Typesense's message", async () => {
    const patient = createTypesenseEngine({
      url: fake.url,
      apiKey: "k",
      collectionPrefix: "t_",
      retry: { retries: 2, baseDelayMs: 1, maxDelayMs: 2 },
    });
    fake.on("GET", "/collections/t_idx__versions/documents/export", {
      status: 503,
      json: { message: "Not Ready or Lagging" },
    });
    const failure = patient.versions("idx");
    await expect(failure).rejects.toThrow(
      "typesense: read versions of idx: Typesense failed after 3 attempt(s) (HTTP 503: Not Ready or Lagging)",
    );
    await expect(failure).rejects.toBeInstanceOf(TypesenseEngineError);
    expect(fake.requests).toHaveLength(3);
  });

  it("does not retry a request Typesense refused", async () => {
    const patient = createTypesenseEngine({
      url: fake.url,
      apiKey: "k",
      collectionPrefix: "t_",
      retry: { retries: 3, baseDelayMs: 1 },
    });
    serveTree();
    fake.on("GET", "/collections/t_idx__v7/documents/search", {
      status: 400,
      json: { message: "Could not parse the filter query." },
    });
    const failure = patient.search("idx", "7", request());
    await expect(failure).rejects.toThrow(
      "typesense: search version 7 of idx: HTTP 400: Could not parse the filter query.",
    );
    await expect(failure).rejects.toMatchObject({ status: 400 });
    expect(fake.requests.filter((r) => r.path.endsWith("/search"))).toHaveLength(1);
  });

  it("names a rejected API key", async () => {
    fake.on("GET", "/collections/t_idx__versions/documents/export", {
      status: 401,
      json: { message: "Forbidden - a valid `x-typesense-api-key` header must be sent." },
    });
    await expect(engine.versions("idx")).rejects.toThrow(
      "typesense: read versions of idx: Typesense rejected the API key (HTTP 401)",
    );
  });

  it("names an unreachable server after retrying it", async () => {
    await fake.close();
    const patient = createTypesenseEngine({ url: fake.url, apiKey: "k", retry: { retries: 1, baseDelayMs: 1 } });
    const failure = patient.versions("idx");
    await expect(failure).rejects.toThrow(
      /typesense: read versions of idx: Typesense unreachable after 2 attempt\(s\) \(ECONNREFUSED\)/,
    );
    await expect(failure).rejects.toMatchObject({ status: undefined });
    fake = await startFake();
  });
});

describe("typesense adapter: the tiers' tags", () => {
  // What the `_eval` conditions must mean, straight from docs/ranking.md: the query as a phrase
  // (the last token as a prefix with scope=title) at the title's start, or at a later position.
  function phraseAt(title: string[], q: string[], at: number, scope: "title" | "all"): boolean {
    return q.every((token, i) => {
      const word = title[at + i];
      if (word === undefined) return false;
      return scope === "title" && i === q.length - 1 ? word.startsWith(token) : word === token;
    });
  }

  it("agree with the rank order's start and consecutive tiers within eight positions and four letters", () => {
    const next = random(14);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
    const vocabulary = ["a", "ab", "abc", "abcd", "b", "ba", "bab", "c"];
    let starts = 0;
    let later = 0;
    for (let round = 0; round < 3000; round++) {
      const title = Array.from({ length: 1 + Math.floor(next() * 8) }, () => pick(vocabulary));
      const length = 1 + Math.floor(next() * 3);
      // Half the queries are cut from the title, so that phrases are common.
      const at = Math.floor(next() * title.length);
      const q =
        next() < 0.5 && at + length <= title.length
          ? title.slice(at, at + length)
          : Array.from({ length }, () => pick(vocabulary));
      if (next() < 0.5) q[q.length - 1] = q.at(-1)!.slice(0, 1);
      for (const scope of ["title", "all"] as const) {
        const { tiers } = lexicalEntries(q, scope);
        const start = phraseAt(title, q, 0, scope);
        const phrase = q.length > 1 && title.some((_, at) => at > 0 && phraseAt(title, q, at, scope));
        const score = evalScore(tiers, signals(title));
        const context = `${scope}: "${q.join(" ")}" in "${title.join(" ")}"`;
        if (scope === "title") expect(score, context).toBe(start ? 2 : phrase ? 1 : 0);
        // scope=all: 1 is "every token in the title", which a phrase implies.
        else expect(score >= 2 ? score : 0, context).toBe(start ? 3 : phrase ? 2 : 0);
        if (start) starts++;
        else if (phrase) later++;
      }
    }
    // Both tiers were exercised, not only the fallthrough.
    expect(starts).toBeGreaterThan(300);
    expect(later).toBeGreaterThan(300);
  });

  it("tell a whole last word from a prefix within each tier", () => {
    const score = (title: string, query: string) => {
      const tokens = title.split(" ");
      return evalScore(lexicalEntries(query.split(" "), "title").fine, signals(tokens));
    };
    expect(score("new york city", "new york")).toBe(5);
    expect(score("new yorkshire", "new york")).toBe(4);
    expect(score("old new york", "new york")).toBe(3);
    expect(score("old new yorkshire", "new york")).toBe(2);
    expect(score("york is new", "new york")).toBe(1);
    expect(score("yorkshire is new", "new york")).toBe(0);
  });
});
