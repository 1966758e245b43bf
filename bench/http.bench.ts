// HTTP load on the demo cities index (135k records): a real `sift` process, autocannon with 32
// concurrent connections cycling through autocomplete queries of every length, one in ten with a
// typo. Writes the HTTP section of RESULTS.md.
//
//   npm run bench:http                  (also run by `npm run bench`)
//   npm run bench:http -- --seconds=20
import { readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import autocannon from "autocannon";
import { siftProcess } from "../test/support/process.ts";

const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const seconds = Number(args.get("seconds") ?? 15);
const connections = 32;

// Prefixes a person types, letter by letter, plus two-word queries: weighted, some geo-biased.
const words = [
  "p",
  "pa",
  "par",
  "pari",
  "paris",
  "l",
  "lo",
  "lon",
  "lond",
  "new",
  "new y",
  "new yo",
  "san",
  "san f",
  "san fr",
  "be",
  "ber",
  "berl",
  "to",
  "tok",
  "mu",
  "mum",
  "sy",
  "syd",
  "rio",
  "rio de",
  "mex",
  "ca",
  "cai",
  "cairo",
  "ba",
  "ban",
  "bang",
  "st p",
  "st pe",
  "k",
  "ky",
  "kyo",
  "los a",
  "los an",
];
const geo = [
  "",
  "&latitude=48.85&longitude=2.35",
  "&latitude=40.71&longitude=-74.0",
  "&latitude=35.68&longitude=139.69",
];
// One query in ten has a typo (one edit, never of the first letter), searched with typo tolerance
// on, the default (docs/api.md): three as the last word, one before the prefix of the next.
const typos = ["londn", "amsterdma", "sao paolo", "frankfrut am"];
const queries = words.flatMap((w, i) => (i % 10 === 9 ? [w, typos[(i - 9) / 10]!] : [w]));
const requests = queries.map((w, i) => ({
  method: "GET" as const,
  path: `/v1/search?query=${encodeURIComponent(w)}&indexName=cities&serviceName=demo&weighted=true${geo[i % geo.length]}`,
}));
const geoBiased = requests.filter((r) => r.path.includes("latitude")).length;

// Every search here comes from one address without a key: the limit is set out of reach, so the
// figures include what counting each request costs but no search is refused.
const server = await siftProcess({
  SIFT_DEMO: "true",
  SIFT_LOG_LEVEL: "warn",
  DATABASE_URL: "",
  SIFT_RATE_LIMIT_ANONYMOUS: "1000000",
  SIFT_MAX_CONNECTIONS_PER_CLIENT: "1000",
});
console.log("starting Sift with the demo cities index…");
await server.start();
const probe = await fetch(`${server.url}${requests[2]!.path}`).then(
  (r) => r.json() as Promise<{ suggestions: { title: string }[] }>,
);
if (!probe.suggestions.length) throw new Error("the demo index answered no suggestions; is the demo loaded?");

const run = (duration: number) =>
  new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon({ url: server.url, connections, duration, requests }, (error, result) =>
      error ? reject(error) : resolve(result),
    );
    autocannon.track(instance, { renderProgressBar: false, renderResultsTable: false });
  });

await run(3); // warm up: JIT, caches
console.log(`load: ${connections} connections for ${seconds} s…`);
const result = await run(seconds);

// What highlighting adds to one search, as one client sees it: requests one at a time (under
// load, p50 is mostly queueing), each query without and then with highlight=true, so that a
// drift of the machine's speed falls on both alike.
const PAIRS = 2000;
const WARM_UP_PAIRS = 400;
const sequential: Record<"plain" | "highlighted", number[]> = { plain: [], highlighted: [] };
for (let i = 0; i < WARM_UP_PAIRS + PAIRS; i++) {
  for (const kind of ["plain", "highlighted"] as const) {
    const path = requests[i % requests.length]!.path + (kind === "highlighted" ? "&highlight=true" : "");
    const t0 = performance.now();
    const response = await fetch(`${server.url}${path}`);
    await response.arrayBuffer();
    if (i >= WARM_UP_PAIRS) sequential[kind].push(performance.now() - t0);
  }
}
await server.destroy();
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const plainP50 = median(sequential.plain);
const highlightedP50 = median(sequential.highlighted);
const highlightCost = highlightedP50 / plainP50 - 1;
console.log({ plainP50, highlightedP50, highlightCost });

const non2xx = result.non2xx + result.errors + result.timeouts;
const figures = {
  requestsPerSecond: Math.round(result.requests.average),
  p50: result.latency.p50,
  p99: result.latency.p99,
  max: result.latency.max,
  total: result.requests.total,
  non2xx,
};
console.log(figures);

const cpu = os.cpus()[0]?.model.trim() ?? "unknown CPU";
const section = `<!-- http:start -->
## HTTP load (\`npm run bench:http\`, part of \`npm run bench\`)

- Date: ${new Date().toISOString().slice(0, 10)}. Machine: ${os.cpus().length} cores, ${cpu}, ${Math.round(os.totalmem() / 1e9)} GB RAM, Node ${process.version}.
- A real \`sift\` process on the demo cities index (135k records, embedded engine, PGlite), anonymous searches of a PUBLIC index; autocannon (same machine, so the load generator shares the 2 cores) with ${connections} connections for ${seconds} s after a 3 s warm-up, cycling through ${requests.length} weighted autocomplete queries of 1 to 6 characters and two words, ${geoBiased} of them geo-biased; ${typos.length} of them have one typo (${typos.map((t) => `\`${t}\``).join(", ")}), with typo tolerance on (the default).

| requests/s | p50 | p99 | max | requests | errors / non-2xx |
|---|---|---|---|---|---|
| ${figures.requestsPerSecond.toLocaleString("en")} | ${figures.p50} ms | ${figures.p99} ms | ${figures.max} ms | ${figures.total.toLocaleString("en")} | ${non2xx} |

Target: ≥ 5,000 searches/s at 32 concurrent clients, p99 ≤ 15 ms: **${figures.requestsPerSecond >= 5000 && figures.p99 <= 15 ? "met" : "not met"}**.

Highlighting, one request at a time (${PAIRS} requests each, each query without and then with highlighting): p50 ${plainP50.toFixed(3)} ms without, ${highlightedP50.toFixed(3)} ms with \`highlight=true\` (${highlightCost >= 0 ? "+" : ""}${(100 * highlightCost).toFixed(1)}%). Target: highlighting adds ≤ 10% to a search's p50: **${highlightCost <= 0.1 ? "met" : "not met"}**.
<!-- http:end -->`;

const resultsPath = path.join(import.meta.dirname, "RESULTS.md");
const current = readFileSync(resultsPath, "utf8");
const updated = current.includes("<!-- http:start -->")
  ? current.replace(/<!-- http:start -->[\s\S]*<!-- http:end -->/, section)
  : `${current.trimEnd()}\n\n${section}\n`;
writeFileSync(resultsPath, updated);
console.log(`wrote the HTTP section of ${resultsPath}`);
