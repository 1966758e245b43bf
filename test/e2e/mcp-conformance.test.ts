// The official MCP conformance runner (@modelcontextprotocol/conformance) against a running Sift,
// for every server scenario that applies to a stateless, tools-only server (D-262).
//
// The runner's client sends no credentials, and Sift's /mcp takes an API key, so the runner talks
// to a pass-through proxy on loopback that adds `Authorization: Bearer <key>`, as a host given a
// pasted key does, and forwards everything else untouched: method, path, body and every header,
// Host and Origin included. What the runner sees is Sift's own answer.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { createServer, request, type Server } from "node:http";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { startWorld, type World } from "../support/world.ts";

const require = createRequire(import.meta.url);
const runner = resolve(require.resolve("@modelcontextprotocol/conformance/package.json"), "../dist/index.js");

/**
 * Scenarios a tools-only server can pass. The others test what Sift does not offer: logging,
 * completion, resources, prompts, sampling, elicitation, progress, sessions with SSE streams, or
 * the runner's own fixture tools (test_simple_text, test_image_content, json_schema_2020_12_tool…).
 */
const APPLICABLE = ["server-initialize", "ping", "tools-list", "tools-call-error", "dns-rebinding-protection"];

interface Check {
  id: string;
  status: "SUCCESS" | "FAILURE" | "WARNING" | "INFO" | "SKIPPED";
  errorMessage?: string;
}

let world: World;
let proxy: Server;
let proxyUrl: string;
let outDir: string;

function startKeyProxy(target: URL, key: string): Promise<Server> {
  const server = createServer((incoming, outgoing) => {
    const forwarded = request(
      {
        host: target.hostname,
        port: target.port,
        method: incoming.method,
        path: incoming.url,
        // Host stays the one the runner sent: the DNS rebinding scenario forges it.
        headers: { ...incoming.headers, authorization: `Bearer ${key}` },
      },
      (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      },
    );
    forwarded.on("error", (error) => outgoing.destroy(error));
    incoming.pipe(forwarded);
  });
  return new Promise((done) => server.listen(0, "127.0.0.1", () => done(server)));
}

function runScenario(scenario: string): Promise<{ code: number; output: string }> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      [runner, "server", "--url", `${proxyUrl}/mcp`, "--scenario", scenario, "-o", outDir],
      { timeout: 60_000 },
      (error, stdout, stderr) =>
        done({ code: error ? ((error as { code?: number }).code ?? 1) : 0, output: stdout + stderr }),
    );
  });
}

/** The checks the runner saved for a scenario (it names the folder server-<scenario>-<time>). */
function checksOf(scenario: string): Check[] {
  const dir = readdirSync(outDir).find((d) => d.startsWith(`server-${scenario}-`));
  if (!dir) throw new Error(`the runner saved no results for ${scenario}`);
  return JSON.parse(readFileSync(join(outDir, dir, "checks.json"), "utf8"));
}

beforeAll(async () => {
  world = await startWorld();
  proxy = await startKeyProxy(new URL(world.server.url), world.a.keys.svc);
  proxyUrl = `http://127.0.0.1:${(proxy.address() as { port: number }).port}`;
  outDir = mkdtempSync(join(tmpdir(), "sift-mcp-conformance-"));
});
afterAll(async () => {
  await new Promise((done) => proxy?.close(done));
  await world?.stop();
  if (outDir) rmSync(outDir, { recursive: true, force: true });
});

describe("the MCP conformance runner", () => {
  test.each(APPLICABLE)("%s passes", async (scenario) => {
    const { code, output } = await runScenario(scenario);
    const checks = checksOf(scenario);
    const failed = checks.filter((c) => c.status === "FAILURE" || c.status === "WARNING");
    expect(failed, output).toEqual([]);
    expect(checks.filter((c) => c.status === "SUCCESS").length, output).toBeGreaterThan(0);
    expect(code, output).toBe(0);
  });

  test("dns-rebinding-protection checked what it says: a forged Host was refused, Sift's own name answered", () => {
    const checks = checksOf("dns-rebinding-protection");
    expect(checks.map((c) => [c.id, c.status])).toEqual([
      ["localhost-host-rebinding-rejected", "SUCCESS"],
      ["localhost-host-valid-accepted", "SUCCESS"],
    ]);
  });
});
