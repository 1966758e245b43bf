// The engine conformance suite on the embedded engine, in a throw-away data directory.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createEmbeddedEngine } from "../../src/engine/embedded/index.ts";
import { describeEngineConformance } from "./conformance.ts";

function filesUnder(dir: string): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.join(entry.parentPath, entry.name));
}

describeEngineConformance("embedded", async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "sift-engine-"));
  const engine = createEmbeddedEngine({ dataDir });
  await engine.open();
  return {
    engine,
    storageHolds: (text: string) => filesUnder(dataDir).some((file) => fs.readFileSync(file).includes(text)),
    cleanup: async () => {
      await engine.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
});
