// Which Host names the server answers to (D-260): the loopback names only when it listens on
// loopback, the configured names always, and a configuration that would refuse every request
// fails at start-up instead.
import { describe, expect, test } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.ts";
import { hostAllowed, hostnameOf, hostPolicy, isLoopback } from "../../src/http/host-check.ts";

const policy = (env: Record<string, string>) => hostPolicy(loadConfig({ SIFT_DATA_DIR: "/tmp/unused", ...env }));

describe("the Host policy", () => {
  test("on loopback: localhost, 127.0.0.1 and [::1] at any port, plus the configured names", () => {
    const p = policy({ SIFT_PUBLIC_URL: "https://sift.example/base", SIFT_ALLOWED_HOSTS: "a.example, *.b.example" });
    for (const host of ["localhost:1", "127.0.0.1", "[::1]:7700", "sift.example:8443", "A.example", "x.y.b.example"]) {
      expect([host, hostAllowed(p, hostnameOf(host)!)]).toEqual([host, true]);
    }
    for (const host of ["evil.example", "b.example", "127.0.0.2", "localhost.evil.example", "sift.example.evil"]) {
      expect([host, hostAllowed(p, hostnameOf(host)!)]).toEqual([host, false]);
    }
  });

  test("elsewhere: only the configured names, the region URLs' included; * turns the check off", () => {
    const p = policy({
      HOST: "0.0.0.0",
      SIFT_PUBLIC_URL: "https://sift.example",
      SIFT_REGION_URL_TOKYO: "https://tyo.sift.example",
    });
    expect(["sift.example", "tyo.sift.example", "localhost", "127.0.0.1"].map((h) => hostAllowed(p, h))).toEqual([
      true,
      true,
      false,
      false,
    ]);
    expect(hostAllowed(policy({ HOST: "::", SIFT_ALLOWED_HOSTS: "*" }), "anything.example")).toBe(true);
  });

  test("a Host header that is not a name and a port is no name", () => {
    for (const host of ["a@b.example", "b.example/x", "", "a b"]) expect(hostnameOf(host)).toBeUndefined();
  });

  test("loopback addresses", () => {
    expect(["127.0.0.1", "127.8.0.1", "localhost", "::1", "[::1]"].every(isLoopback)).toBe(true);
    expect(["0.0.0.0", "::", "10.0.0.1", "localhost.example"].some(isLoopback)).toBe(false);
  });
});

describe("the configuration", () => {
  const problems = (env: Record<string, string>) => {
    try {
      loadConfig({ SIFT_DATA_DIR: "/tmp/unused", ...env });
      return [];
    } catch (error) {
      if (error instanceof ConfigError) return error.problems;
      throw error;
    }
  };

  test("off loopback without SIFT_PUBLIC_URL or SIFT_ALLOWED_HOSTS is refused at start-up, saying what to set", () => {
    expect(problems({ HOST: "0.0.0.0" })).toEqual([
      expect.stringMatching(/HOST=0\.0\.0\.0 .*SIFT_PUBLIC_URL.*SIFT_ALLOWED_HOSTS/),
    ]);
    expect(problems({ HOST: "0.0.0.0", SIFT_PUBLIC_URL: "https://sift.example" })).toEqual([]);
    expect(problems({ HOST: "0.0.0.0", SIFT_ALLOWED_HOSTS: "10.0.0.5" })).toEqual([]);
  });

  test("SIFT_SESSION_COOKIE_DOMAIN is a parent domain of this server's host and of every region's", () => {
    const regions = {
      SIFT_PUBLIC_URL: "https://london.sift.example",
      SIFT_REGION_URL_FRANKFURT: "https://de.sift.example",
    };
    expect(problems({ ...regions, SIFT_SESSION_COOKIE_DOMAIN: ".Sift.example" })).toEqual([]);
    expect(loadConfig({ SIFT_DATA_DIR: "/tmp/unused", SIFT_SESSION_COOKIE_DOMAIN: ".Sift.example" })).toMatchObject({
      sessionCookieDomain: "sift.example",
    });
    // A browser takes no cookie for a top-level domain, nor for a domain the host is not under.
    expect(problems({ SIFT_SESSION_COOKIE_DOMAIN: "example" })).toEqual([
      expect.stringMatching(/SIFT_SESSION_COOKIE_DOMAIN must be a domain of two labels or more.*"example"/),
    ]);
    expect(
      problems({
        ...regions,
        SIFT_REGION_URL_NEWARK: "https://sift-us.example",
        SIFT_SESSION_COOKIE_DOMAIN: "sift.example",
      }),
    ).toEqual([
      expect.stringMatching(
        /parent domain of every region's host: SIFT_REGION_URL_NEWARK is https:\/\/sift-us\.example/,
      ),
    ]);
    expect(
      problems({ SIFT_PUBLIC_URL: "https://sift.example", SIFT_SESSION_COOKIE_DOMAIN: "eu.sift.example" }),
    ).toEqual([expect.stringMatching(/SIFT_PUBLIC_URL is https:\/\/sift\.example/)]);
  });

  test("SIFT_ALLOWED_HOSTS takes names without ports", () => {
    expect(problems({ SIFT_ALLOWED_HOSTS: "api.example.com:443, ok.example, https://x.example" })).toEqual([
      expect.stringMatching(/SIFT_ALLOWED_HOSTS .*"api\.example\.com:443"/),
      expect.stringMatching(/SIFT_ALLOWED_HOSTS .*"https:\/\/x\.example"/),
    ]);
    expect(problems({ SIFT_ALLOWED_HOSTS: "[::1], *.example.com, *" })).toEqual([]);
  });
});
