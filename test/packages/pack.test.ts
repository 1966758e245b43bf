// The packages as a user gets them: each workspace package packed with `npm pack`, the tarballs
// installed into a new project outside this repository, and used there as their READMEs say —
// a strict TypeScript file type-checked with both module resolutions people use, a script run
// under the machine's Node 20 against a running Sift, the `sift` CLI and the `sift-mcp` server.
import { execFile, execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { startWorld, type World } from "../support/world.ts";

const exec = promisify(execFile);
const repo = resolve(import.meta.dirname, "../..");
const PACKAGES = ["generated", "sdk", "cli", "mcp", "widgets"];
// The oldest Node the packages promise (`engines`); Debian's node on these machines.
const NODE20 = process.env.SIFT_NODE20 ?? "/usr/bin/node";

let world: World;
let project: string;
let env: NodeJS.ProcessEnv;

const run = (file: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}) =>
  exec(file, args, { cwd: project, env, maxBuffer: 16 << 20, ...options });

beforeAll(async () => {
  const version = execFileSync(NODE20, ["--version"], { encoding: "utf8" }).trim();
  expect(version, `${NODE20} should be Node 20 (set SIFT_NODE20 to one)`).toMatch(/^v20\./);

  const packs = mkdtempSync(join(tmpdir(), "sift-packs-"));
  // Side by side: each is mostly npm starting up, and this file runs alone on two cores.
  await Promise.all(
    PACKAGES.map((dir) => exec("npm", ["pack", "--silent", "--pack-destination", packs], { cwd: join(repo, dir) })),
  );
  project = mkdtempSync(join(tmpdir(), "sift-user-"));
  // Node 20 first on PATH: the bins' `#!/usr/bin/env node` then run on it, as on a user's machine.
  env = { ...process.env, PATH: `${resolve(NODE20, "..")}:${process.env.PATH}`, npm_config_yes: "true" };
  for (const key of Object.keys(env)) if (key.startsWith("npm_") && key !== "npm_config_yes") delete env[key];
  writeFileSync(
    join(project, "package.json"),
    JSON.stringify({ name: "a-user-project", private: true, type: "module" }),
  );
  const tarballs = readdirSync(packs).map((f) => join(packs, f));
  // typescript comes from the registry (or npm's cache) like everything else the packages need.
  await run("npm", [
    "install",
    "--no-audit",
    "--no-fund",
    "--prefer-offline",
    ...tarballs,
    "typescript@5.9.3",
    "@types/node@20",
  ]);
  world = await startWorld();
}, 300_000);

afterAll(async () => {
  await world?.stop();
  if (project) rmSync(project, { recursive: true, force: true });
});

describe("the packed packages, installed into a project of their own", () => {
  test("a strict TypeScript file using the SDK type-checks with bundler and nodenext resolution", async () => {
    writeFileSync(
      join(project, "use-sdk.ts"),
      `import { createClient, SiftError, SiftApiError, type IndexRecord } from "@sift/sdk";
import { createSearchClient, type SearchResponse } from "@sift/sdk/search";
import type { components } from "@sift/contract";

const sift = createClient({ baseUrl: "http://127.0.0.1:7700", apiKey: "sk-sift-adm-x" });
const search = createSearchClient({ baseUrl: "http://127.0.0.1:7700" });
type Key = components["schemas"]["ApiKey"]["type"];
const key: Key = "srh";

export async function demo(): Promise<number> {
  const answer: SearchResponse = await search.search({ query: "par", indexName: "cities", serviceName: "demo" });
  const record: IndexRecord = await sift.records.get("cities", answer.suggestions[0]!.id);
  try {
    await sift.services.get("demo");
  } catch (error) {
    if (error instanceof SiftApiError) return error.status;
    if (error instanceof SiftError) return -1;
  }
  return record.title.length + key.length;
}
`,
    );
    const strict = {
      strict: true,
      noEmit: true,
      target: "ES2022",
      lib: ["ES2022", "DOM"],
      skipLibCheck: false,
      exactOptionalPropertyTypes: true,
      noUncheckedIndexedAccess: true,
    };
    const resolutions = [
      ["tsconfig.bundler.json", { module: "ESNext", moduleResolution: "bundler" }],
      ["tsconfig.nodenext.json", { module: "NodeNext", moduleResolution: "NodeNext" }],
    ] as const;
    // Both at once, one per core.
    const outputs = await Promise.all(
      resolutions.map(async ([name, options]) => {
        writeFileSync(
          join(project, name),
          JSON.stringify({ compilerOptions: { ...strict, ...options }, files: ["use-sdk.ts"] }),
        );
        const tsc = await run(NODE20, [join(project, "node_modules/typescript/bin/tsc"), "-p", name]).catch(
          (e: { stdout: string }) => e,
        );
        return [name, "stdout" in tsc ? tsc.stdout : ""] as const;
      }),
    );
    for (const [name, stdout] of outputs) expect(stdout, `tsc -p ${name}`).toBe("");
  });

  test("every TypeScript example of the SDK README type-checks against the installed package", async () => {
    const readme = readFileSync(join(repo, "sdk/README.md"), "utf8");
    const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!);
    expect(blocks.length).toBeGreaterThanOrEqual(8);
    // What an example takes from its surroundings: a client made earlier, a text input, a renderer.
    const context = `import { createClient as __create } from "@sift/sdk";
declare const input: HTMLInputElement;
declare function render(suggestions: unknown): void;
`;
    const files = blocks.map((code, i) => {
      const name = `readme-${i + 1}.ts`;
      const needsClient = !/const sift = /.test(code);
      writeFileSync(
        join(project, name),
        `${context}${needsClient ? 'const sift = __create({ baseUrl: "http://127.0.0.1:7700" });\n' : ""}${code}\nexport {};\n`,
      );
      return name;
    });
    writeFileSync(
      join(project, "tsconfig.readme.json"),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noEmit: true,
          target: "ES2022",
          lib: ["ES2022", "DOM"],
          module: "NodeNext",
          moduleResolution: "NodeNext",
          types: ["node"],
        },
        files,
      }),
    );
    const tsc = await run(NODE20, [
      join(project, "node_modules/typescript/bin/tsc"),
      "-p",
      "tsconfig.readme.json",
    ]).catch((e: { stdout: string }) => e);
    expect("stdout" in tsc ? tsc.stdout : "").toBe("");
  });

  // The SDK uses fetch only: the same script runs on Node 20, Bun and Deno (both from the npm registry).
  const runtimes: [string, (script: string) => [string, string[]]][] = [
    ["Node 20", (script) => [NODE20, [script]]],
    ["Bun", (script) => [join(repo, "node_modules/.bin/bun"), ["run", script]]],
    [
      "Deno",
      (script) => [join(repo, "node_modules/.bin/deno"), ["run", "--allow-net", "--allow-env", "--allow-read", script]],
    ],
  ];
  test.each(runtimes)("a script using the SDK runs on %s against a running Sift", async (name, command) => {
    const id = `pkg-${name.replace(/\W/g, "").toLowerCase()}`;
    writeFileSync(
      join(project, `${id}.mjs`),
      `import { createClient, SiftError, SiftApiError } from "@sift/sdk";
const env = (globalThis.Deno ? globalThis.Deno.env.toObject() : process.env);
const sift = createClient({ baseUrl: env.SIFT_BASE_URL, apiKey: env.SIFT_API_KEY });
const index = env.SIFT_INDEX;
const write = await sift.records.put(index, ${JSON.stringify(id)}, { title: "Packed parcel ${name}", weight: 2 });
const { suggestions, totalHits } = await sift.search({ query: "packed parcel ${name.split(" ")[0]!.toLowerCase()}", indexName: index, serviceName: env.SIFT_SERVICE });
const missing = await sift.records.get(index, "no-such-record").catch((e) => e);
console.log(JSON.stringify({
  version: write.indexVersion,
  found: suggestions.map((s) => s.id),
  totalHits,
  missing: { status: missing.status, api: missing instanceof SiftApiError, base: missing instanceof SiftError },
}));
`,
    );
    const [file, args] = command(`${id}.mjs`);
    const { stdout } = await run(file, args, {
      env: {
        ...env,
        SIFT_BASE_URL: world.server.url,
        SIFT_API_KEY: world.a.keys.adm,
        SIFT_INDEX: world.a.publicIndex,
        SIFT_SERVICE: world.a.service,
        NO_COLOR: "1",
      },
    });
    const out = JSON.parse(stdout.trim().split("\n").at(-1)!);
    expect(out.found).toEqual([id]);
    expect(out.totalHits).toBe(1);
    expect(out.missing).toEqual({ status: 404, api: true, base: true });
  });

  test("the sift CLI answers --help and uploads a file", async () => {
    const sift = join(project, "node_modules/.bin/sift");
    const help = await run(sift, ["--help"]);
    expect(help.stdout).toMatch(/^usage: sift COMMAND/);
    // As the READMEs say to run them: through npx, by package name.
    expect((await run("npx", ["-y", "@sift/cli", "upload", "--help"])).stdout).toMatch(/^usage: sift upload/);
    expect((await run("npx", ["-y", "@sift/mcp", "--help"])).stdout).toMatch(/^usage: sift-mcp/);
    writeFileSync(join(project, "items.csv"), "id,title\nc1,Crate\nc2,Carton\n");
    const index = `packed-${process.pid}`;
    const created = await world.a.session.post("/v1/indexes", {
      name: index,
      serviceName: world.a.service,
      visibility: "PUBLIC",
    });
    expect(created.status).toBe(201);
    const upload = await run(sift, ["upload", "items.csv", "--index", index], {
      env: { ...env, SIFT_BASE_URL: world.server.url, SIFT_API_KEY: world.a.keys.adm },
    });
    expect(upload.stdout).toMatch(new RegExp(`^${index} version 1: 2 records ingested from csv, now active`));
    const found = await world.http.get(`/v1/search?query=c&indexName=${index}&serviceName=${world.a.service}`);
    expect(found.body.suggestions.map((s: { id: string }) => s.id).sort()).toEqual(["c1", "c2"]);
  });

  test("sift-mcp, started as an MCP host starts it, lists the tools and the key's indexes", async () => {
    const client = new Client({ name: "pack-test", version: "1.0.0" });
    await client.connect(
      new StdioClientTransport({
        command: join(project, "node_modules/.bin/sift-mcp"),
        args: ["--base-url", world.server.url, "--api-key", world.a.keys.adm],
        env: env as Record<string, string>,
        stderr: "pipe",
      }),
    );
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual(["listIndexes", "lookupById", "search"]);
      const listed = await client.callTool({ name: "listIndexes", arguments: {} });
      const { indexes } = listed.structuredContent as { indexes: { name: string }[] };
      expect(indexes.map((i) => i.name)).toContain(world.a.publicIndex);
    } finally {
      await client.close();
    }
  });

  test("the widget package has its module and its one-file builds", async () => {
    const { stdout } = await run(NODE20, [
      "--input-type=module",
      "-e",
      `import { createRequire } from "node:module";
const require = createRequire(import.meta.url + "/");
const fs = await import("node:fs");
const files = ["@sift/widgets/sift-autocomplete.js", "@sift/widgets/sift-autocomplete.iife.js"].map((f) => fs.statSync(require.resolve(f)).size);
console.log(JSON.stringify(files));`,
    ]);
    const sizes = JSON.parse(stdout) as number[];
    for (const size of sizes) expect(size).toBeGreaterThan(5_000);
  });
});
