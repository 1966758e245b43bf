// The engine conformance suite on the embedded engine, in a throw-away data directory.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createEmbeddedEngine, type EmbeddedEngineOptions } from "../../src/engine/embedded/index.ts";
import { describeEngineConformance } from "./conformance.ts";

function filesUnder(dir: string): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.join(entry.parentPath, entry.name));
}

function embedded(options: Partial<EmbeddedEngineOptions> = {}) {
  return async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "sift-engine-"));
    const engine = createEmbeddedEngine({ dataDir, ...options });
    await engine.open();
    return {
      engine,
      storageHolds: (text: string) => filesUnder(dataDir).some((file) => fs.readFileSync(file).includes(text)),
      cleanup: async () => {
        await engine.close();
        fs.rmSync(dataDir, { recursive: true, force: true });
      },
    };
  };
}

describeEngineConformance("embedded", embedded());
// Every checkpoint layered (versions/layers.ts): its source's base kept, the changes in a delta.
describeEngineConformance("embedded, every checkpoint layered", embedded({ layering: { minBase: 1, maxShare: 1e9 } }));
