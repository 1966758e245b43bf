// Replication's settings (docs/replication.md, Configuration): a mirror name NATS would refuse is
// named at start-up, not found out from a failed stream call later.
import { describe, expect, test } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.ts";

const base = {
  SIFT_DATA_DIR: "/tmp/unused",
  SIFT_NATS_URL: "nats://127.0.0.1:4222",
  DATABASE_URL: "postgres://postgres@127.0.0.1:5432/test",
};

describe("SIFT_NATS_MIRROR", () => {
  test("names the stream a node reads the log from", () => {
    expect(loadConfig({ ...base, SIFT_NATS_MIRROR: "SIFT_london" }).nats).toMatchObject({
      stream: "SIFT",
      mirror: "SIFT_london",
    });
    expect(loadConfig(base).nats?.mirror).toBeUndefined();
  });

  test("a name with a dot is refused, saying which setting and why", () => {
    const load = () => loadConfig({ ...base, SIFT_NATS_MIRROR: "sift.london" });
    expect(load).toThrow(ConfigError);
    expect(load).toThrow(/SIFT_NATS_MIRROR must be a stream name.*"sift\.london"/);
  });
});
