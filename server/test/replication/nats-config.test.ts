// Replication's settings (docs/replication.md, Configuration): a mirror name NATS would refuse is
// named at start-up, not found out from a failed stream call later; so is a read replica URL.
import { describe, expect, test } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.ts";
import { serversOf, serversShown } from "../../src/replication/nats/servers.ts";

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

describe("DATABASE_READ_URL", () => {
  test("names the region's read replica of DATABASE_URL", () => {
    const replica = "postgres://postgres@replica.london:5432/sift";
    expect(loadConfig({ ...base, DATABASE_READ_URL: replica }).databaseReadUrl).toBe(replica);
    expect(loadConfig(base).databaseReadUrl).toBeUndefined();
  });

  test("is refused without DATABASE_URL, or when it is not a postgres URL, hiding its password", () => {
    const { DATABASE_URL: _, SIFT_NATS_URL: __, ...single } = base;
    expect(() => loadConfig({ ...single, DATABASE_READ_URL: "postgres://postgres@replica:5432/sift" })).toThrow(
      /DATABASE_READ_URL names a read replica of DATABASE_URL: set DATABASE_URL too/,
    );
    const load = () => loadConfig({ ...base, DATABASE_READ_URL: "mysql://sift:secret@replica/sift" });
    expect(load).toThrow(ConfigError);
    expect(load).toThrow(/DATABASE_READ_URL must be a postgres:\/\/ URL \(got "mysql:\/\/sift:\*\*\*@replica\/sift"\)/);
  });
});

describe("credentials in SIFT_NATS_URL (D-371)", () => {
  test("a user and password, or a token, are handed to the client apart from the URLs, and never shown", () => {
    const urls = loadConfig({ ...base, SIFT_NATS_URL: "nats://sift:s%40cret@n1:4222,nats://n2:4222" }).nats!.servers;
    expect(serversOf(urls)).toEqual({ servers: ["nats://n1:4222", "nats://n2:4222"], user: "sift", pass: "s@cret" });
    expect(serversShown(urls)).toBe("nats://n1:4222,nats://n2:4222");
    expect(serversOf(["tls://T0KEN@n1:4222"])).toEqual({ servers: ["tls://n1:4222"], token: "T0KEN" });
    expect(serversOf(["nats://n1:4222"])).toEqual({ servers: ["nats://n1:4222"] });
  });
});

describe("SIFT_NATS_CREDS (D-371)", () => {
  test("names a credentials file the node connects with; one that is not there is refused at start-up", () => {
    expect(loadConfig({ ...base, SIFT_NATS_CREDS: "/etc/hostname" }).nats?.credsFile).toBe("/etc/hostname");
    expect(loadConfig(base).nats?.credsFile).toBeUndefined();
    expect(() => loadConfig({ ...base, SIFT_NATS_CREDS: "/nowhere/sift.creds" })).toThrow(
      /SIFT_NATS_CREDS must name a NATS credentials file.*"\/nowhere\/sift\.creds"/,
    );
  });
});

describe("SIFT_NATS_TLS_CA, SIFT_NATS_TLS_CERT, SIFT_NATS_TLS_KEY (D-371)", () => {
  test("name the PEM files of TLS to the servers; a missing one, or a certificate without its key, is refused", () => {
    const pem = "/etc/hostname";
    expect(loadConfig({ ...base, SIFT_NATS_TLS_CA: pem }).nats?.tls).toEqual({ caFile: pem });
    expect(loadConfig({ ...base, SIFT_NATS_TLS_CERT: pem, SIFT_NATS_TLS_KEY: pem }).nats?.tls).toEqual({
      certFile: pem,
      keyFile: pem,
    });
    expect(loadConfig(base).nats?.tls).toBeUndefined();
    expect(() => loadConfig({ ...base, SIFT_NATS_TLS_CA: "/nowhere/ca.pem" })).toThrow(
      /SIFT_NATS_TLS_CA must name a PEM file.*"\/nowhere\/ca\.pem"/,
    );
    expect(() => loadConfig({ ...base, SIFT_NATS_TLS_CERT: pem })).toThrow(
      /SIFT_NATS_TLS_CERT and SIFT_NATS_TLS_KEY go together/,
    );
  });
});
