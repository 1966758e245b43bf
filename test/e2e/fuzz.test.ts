// The contract fuzzer, bounded (issue 15): for every route of the contract and the routes around
// it, seeded requests generated from generated/openapi.json (test/fuzz/), each answer checked:
// never a 5xx, every error a problem document without a stack trace, JSON as the contract says.
// The long run is `npm run bench:fuzz` (bench/fuzz.ts). Reproduce a failure with the printed seed:
//   cd test && FUZZ_SEED=<seed> npx vitest run e2e/fuzz.test.ts
import fc from "fast-check";
import { afterAll, beforeAll, describe, test } from "vitest";
import { DEFAULT_SEED, FUZZ_SERVER_ENV, type Fuzzer, fuzzRoutes, loadDocument, startFuzzer } from "../fuzz/fuzzer.ts";
import { startSift, type RunningSift } from "../support/server.ts";

const SEED = Number(process.env.FUZZ_SEED ?? DEFAULT_SEED);
/** Requests per route: 2,340 in all, about 30 s on a shared 2-core machine (the budget is a minute). */
const RUNS = Number(process.env.FUZZ_RUNS ?? 60);
const MAX_BODY_BYTES = 1024 * 1024;

const document = loadDocument();
const routes = fuzzRoutes(document, MAX_BODY_BYTES);

let server: RunningSift;
let fuzzer: Fuzzer;

beforeAll(async () => {
  server = await startSift({ ...FUZZ_SERVER_ENV, SIFT_MAX_BODY_BYTES: String(MAX_BODY_BYTES) });
  fuzzer = await startFuzzer(server.url, document);
  console.log(
    `contract fuzzer: seed ${SEED} (FUZZ_SEED), ${RUNS} requests per route (FUZZ_RUNS), ${routes.length} routes`,
  );
});
afterAll(async () => {
  fuzzer?.close();
  await server?.stop();
});

describe("contract fuzzer", () => {
  for (const [index, route] of routes.entries()) {
    test(route.name, { timeout: 180_000 }, async () => {
      await fc.assert(
        fc.asyncProperty(route.arbitrary, async (request) => {
          const outcome = await fuzzer.send(route, request);
          if (outcome.findings.length > 0) throw new Error(fuzzer.explain(request, outcome));
        }),
        {
          // One seed per route from the run's seed: the same seed for all would line up their choices.
          seed: SEED * 1_000 + index,
          numRuns: RUNS,
          // The shrunk request, as sent, instead of fast-check's dump of the generated value.
          reporter: (details) => {
            if (!details.failed) return;
            throw new Error(
              `route ${route.name}: failed after ${details.numRuns} requests, shrunk ${details.numShrinks} times ` +
                `(FUZZ_SEED=${SEED}, fast-check path ${details.counterexamplePath}):\n` +
                String((details.errorInstance as Error | undefined)?.message ?? details.errorInstance),
            );
          },
        },
      );
    });
  }
});
