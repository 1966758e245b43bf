// The contract fuzzer's long run (issue 15): seeded requests for every route, generated from
// generated/openapi.json by test/fuzz/ (the generators `npm test` uses, test/e2e/fuzz.test.ts),
// against a real `sift` process. Counts 5xx answers and error bodies that are not problem
// documents, and writes the fuzzer section of RESULTS.md.
//
//   npm run bench:fuzz                                  (100,000 requests, seed 15)
//   npm run bench:fuzz -- --requests=5000 --seed=7 --concurrency=4 --no-write
//   npm run bench:fuzz -- --replicated --requests=20000   (a node with replication; prints only)
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Finding } from "../test/fuzz/check.ts";
import { DEFAULT_SEED, fuzzRoutes, loadDocument, startFuzzer } from "../test/fuzz/fuzzer.ts";
import { fuzzRun } from "../test/fuzz/run.ts";
import { notThereYet, startFuzzNodes } from "../test/fuzz/nodes.ts";
import type { SiftProcess } from "../test/support/process.ts";

const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const total = Number(args.get("requests") ?? 100_000);
const seed = Number(args.get("seed") ?? process.env.FUZZ_SEED ?? DEFAULT_SEED);
const concurrency = Number(args.get("concurrency") ?? 4);
/**
 * `--replicated`: the node follows a change log on a private NATS server (issue 18), whose paths
 * (waiting for minVersion, readiness, appends) one process never takes. `--replicated=2`: two
 * nodes (regions) on one log and one database, requests sent to each in turn, so that a deletion
 * in one meets a write in the other. Needs DATABASE_URL.
 */
const replicated = args.has("replicated");
const nodeCount = replicated ? Math.max(1, Number(args.get("replicated") || 1)) : 1;
const write = !args.has("no-write") && !replicated;
const MAX_BODY_BYTES = 1024 * 1024;

const document = loadDocument();
const routes = fuzzRoutes(document, MAX_BODY_BYTES);

const running = await startFuzzNodes({
  replicated,
  count: nodeCount,
  env: { SIFT_LOG_LEVEL: "error", SIFT_MAX_BODY_BYTES: String(MAX_BODY_BYTES) },
});
const [server, ...moreNodes] = running.nodes as [SiftProcess, ...SiftProcess[]];
console.log(
  `started Sift (${process.env.DATABASE_URL ? "PostgreSQL" : "PGlite"}${replicated ? `, replication, ${nodeCount} node(s)` : ""})`,
);
const fuzzer = await startFuzzer(
  server.url,
  document,
  moreNodes.map((node) => node.url),
);
/** With several nodes, a region's "not here yet" (notThereYet) is counted apart, not as a finding. */
let regionRetries = 0;

interface RouteCount {
  requests: number;
  statuses: Map<number, number>;
}
const perRoute = new Map<string, RouteCount>(routes.map((r) => [r.name, { requests: 0, statuses: new Map() }]));
const findings = new Map<Finding["kind"], number>();
/** One example of each kind of finding per route and status (the first seen). */
const examples = new Map<string, string>();
const started = performance.now();
let lastLog = started;

await fuzzRun({
  fuzzer,
  routes,
  total,
  seed,
  concurrency,
  seen(route, request, outcome, i) {
    const count = perRoute.get(route.name)!;
    count.requests++;
    const status = outcome.response?.status ?? 0;
    count.statuses.set(status, (count.statuses.get(status) ?? 0) + 1);
    if (moreNodes.length > 0 && notThereYet(outcome)) {
      regionRetries++;
      outcome.findings = outcome.findings.filter((f) => f.kind !== "5xx");
    }
    for (const f of outcome.findings) {
      findings.set(f.kind, (findings.get(f.kind) ?? 0) + 1);
      const key = `${f.kind} ${route.name} ${status}`;
      if (!examples.has(key) && examples.size < 60) examples.set(key, fuzzer.explain(request, outcome));
    }
    if (performance.now() - lastLog > 10_000) {
      lastLog = performance.now();
      const rate = Math.round(i / ((lastLog - started) / 1000));
      console.log(
        `${i.toLocaleString("en")} requests, ${rate}/s, findings: ${JSON.stringify(Object.fromEntries(findings))}`,
      );
    }
  },
});
const seconds = (performance.now() - started) / 1000;
fuzzer.close();
// A server that died (a crash, the OOM killer) says how here; its requests were "no answer".
const exit = await Promise.race([server.exited(), new Promise((r) => setTimeout(() => r("running"), 100))]);
if (exit !== "running") console.log(`the server process had exited: ${exit}`);
const serverOutput = running.nodes.map((node) => node.output()).join("\n");
await running.stop();
if (moreNodes.length > 0) console.log(`503 with Retry-After, from a region not there yet: ${regionRetries}`);

for (const e of examples.values()) console.log(`\n${e}`);
const count = (kind: Finding["kind"]) => findings.get(kind) ?? 0;
const fiveXx = count("5xx");
const nonProblem = count("non-problem error");
const others = (["stack trace", "no answer", "2xx not as the contract says"] as const).map(
  (k) => [k, count(k)] as const,
);
console.log({ requests: total, seconds: Math.round(seconds), fiveXx, nonProblem, ...Object.fromEntries(others) });
if (serverOutput.trim()) console.log(`\nserver output (errors):\n${serverOutput.slice(-20_000)}`);

if (write) {
  const commit = execFileSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim();
  const dirty = execFileSync("git", ["status", "--porcelain", "--untracked-files=no"], { encoding: "utf8" }).trim();
  const cpu = os.cpus()[0]?.model.trim() ?? "unknown CPU";
  const statusClass = (s: number) => (s === 0 ? "none" : `${Math.floor(s / 100)}xx`);
  const rows = [...perRoute].map(([name, c]) => {
    const classes = new Map<string, number>();
    for (const [s, n] of c.statuses) classes.set(statusClass(s), (classes.get(statusClass(s)) ?? 0) + n);
    const cell = (k: string) => (classes.get(k) ?? 0).toLocaleString("en");
    return `| ${name} | ${c.requests.toLocaleString("en")} | ${cell("2xx")} | ${cell("3xx")} | ${cell("4xx")} | ${cell("5xx")} |`;
  });
  const verdict = fiveXx === 0 && nonProblem === 0 && total >= 100_000 ? "met" : "**not met**";
  const section = `<!-- fuzz:start -->
## Contract fuzzer (\`npm run bench:fuzz\`)

- Date: ${new Date().toISOString().slice(0, 10)}. Machine: ${os.cpus().length} cores, ${cpu}, ${Math.round(os.totalmem() / 1e9)} GB RAM, Node ${process.version}. Commit ${commit}${dirty ? " (with uncommitted changes)" : ""}.
- A real \`sift\` process (embedded engine, ${process.env.DATABASE_URL ? "PostgreSQL" : "PGlite"}, body limit ${MAX_BODY_BYTES / 1024 / 1024} MiB) with a tenant set up over HTTP (a service, a PUBLIC and a PRIVATE index with records, keys of every type, a session, a started upload) and a second tenant; ${total.toLocaleString("en")} requests from test/fuzz/ (seed ${seed}, ${concurrency} at a time), round robin over ${routes.length} routes: every operation of the contract, then pages, widget files, \`/mcp\` with other methods, CORS preflights and routes that do not exist. Requests that deleted or revoked part of the tenant were followed by putting it back: those requests are not counted, but a 5xx answered to one of them is a 5xx finding.
- Duration: ${Math.round(seconds)} s (${Math.round(total / seconds)} requests/s, generation and checks included).
- Checked on every answer: status below 500; an error body is \`application/problem+json\` with \`type\`, \`title\`, \`status\` (equal to the HTTP status) and \`resultCode\`, unless the contract declares another body for that status (MCP's JSON-RPC errors); no stack trace or server path in an error; a 2xx body the contract declares as JSON is JSON matching the schema.

| findings | count |
|---|---|
| 5xx answers | ${fiveXx} |
| error bodies that are not problem documents | ${nonProblem} |
${others.map(([k, n]) => `| ${k} | ${n} |`).join("\n")}

Target: 100,000 requests across every route, 0 5xx, 0 non-problem error bodies: **${verdict}**.

| route | requests | 2xx | 3xx | 4xx | 5xx |
|---|---|---|---|---|---|
${rows.join("\n")}
<!-- fuzz:end -->`;
  const resultsPath = path.join(import.meta.dirname, "RESULTS.md");
  const current = readFileSync(resultsPath, "utf8");
  const updated = current.includes("<!-- fuzz:start -->")
    ? current.replace(/<!-- fuzz:start -->[\s\S]*<!-- fuzz:end -->/, section)
    : `${current.trimEnd()}\n\n${section}\n`;
  writeFileSync(resultsPath, updated);
  console.log(`wrote the fuzzer section of ${resultsPath}`);
}
process.exit(fiveXx + nonProblem + count("stack trace") + count("no answer") > 0 ? 1 : 0);
