import { describe, expect, it } from "vitest";
import {
  compareVersions,
  formatVersion,
  InvalidVersionIdError,
  isMajorVersion,
  majorOf,
  majorVersionOf,
  minorOf,
  parseVersion,
  tryParseVersion,
} from "../../src/domain/version-id.ts";

describe("VersionId", () => {
  it("parses majors with minor 0 and minors with their number", () => {
    expect(parseVersion("0")).toEqual({ major: 0, minor: 0 });
    expect(parseVersion("7")).toEqual({ major: 7, minor: 0 });
    expect(parseVersion("7.3")).toEqual({ major: 7, minor: 3 });
    expect(parseVersion("12.105")).toEqual({ major: 12, minor: 105 });
  });

  it("refuses ids that are not canonical, naming the value", () => {
    for (const bad of [
      "",
      "7.",
      ".3",
      "7.0",
      "07",
      "7.03",
      "7.3.1",
      "-1",
      "1e3",
      " 7",
      "7 ",
      "a",
      "99999999999999999999",
    ]) {
      expect(tryParseVersion(bad), bad).toBeNull();
      expect(() => parseVersion(bad), bad).toThrow(InvalidVersionIdError);
    }
    expect(() => parseVersion("7.0")).toThrow('invalid version id "7.0"');
  });

  it("formats what it parses", () => {
    for (const id of ["0", "7", "7.3", "12.105"]) {
      const { major, minor } = parseVersion(id);
      expect(formatVersion(major, minor)).toBe(id);
    }
    expect(formatVersion(4)).toBe("4");
    expect(() => formatVersion(-1)).toThrow(RangeError);
    expect(() => formatVersion(1.5, 2)).toThrow(RangeError);
  });

  it("reads major and minor parts", () => {
    expect(majorOf("7.3")).toBe(7);
    expect(minorOf("7.3")).toBe(3);
    expect(minorOf("7")).toBe(0);
    expect(isMajorVersion("7")).toBe(true);
    expect(isMajorVersion("7.1")).toBe(false);
    expect(majorVersionOf("7.3")).toBe("7");
    expect(majorVersionOf("7")).toBe("7");
  });

  it("compares numerically, major first", () => {
    const sorted = ["7.10", "10", "7", "7.9", "2.1", "0"].sort(compareVersions);
    expect(sorted).toEqual(["0", "2.1", "7", "7.9", "7.10", "10"]);
    expect(compareVersions("3.2", "3.2")).toBe(0);
  });
});
