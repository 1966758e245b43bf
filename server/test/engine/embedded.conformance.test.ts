// The engine conformance suite on the embedded engine, in a throw-away data directory.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createEmbeddedEngine } from "../../src/engine/embedded/index.ts";
import { describeEngineConformance } from "./conformance.ts";

describeEngineConformance("embedded", async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "sift-engine-"));
  const engine = createEmbeddedEngine({ dataDir });
  await engine.open();
  return {
    engine,
    cleanup: async () => {
      await engine.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
});
