// Index version ids (docs/versions.md). A major version ("7") is a self-contained snapshot written
// by a bulk ingest or a checkpoint; a minor version ("7.3") is one record-level change on top of a
// version of major 7. Minor numbers start at 1, so "7.0" is not an id: every layer (services, the
// embedded engine, the Typesense adapter) parses with this one module and agrees on that.

/** A version id as the API carries it: "7" (major) or "7.3" (minor). */
export type VersionId = string;

/** A parsed version id; `minor` is 0 for a major version. */
export interface ParsedVersion {
  readonly major: number;
  readonly minor: number;
}

const PATTERN = /^(0|[1-9]\d*)(?:\.([1-9]\d*))?$/;

export class InvalidVersionIdError extends Error {
  readonly value: string;
  constructor(value: string) {
    super(`invalid version id ${JSON.stringify(value)}: expected "7" or "7.3"`);
    this.name = "InvalidVersionIdError";
    this.value = value;
  }
}

/** The parts of `version`, or null when it is not a canonical id (leading zeros, "7.0", junk). */
export function tryParseVersion(version: string): ParsedVersion | null {
  const match = PATTERN.exec(version);
  if (match === null) return null;
  const major = Number(match[1]);
  const minor = match[2] === undefined ? 0 : Number(match[2]);
  if (!Number.isSafeInteger(major) || !Number.isSafeInteger(minor)) return null;
  return { major, minor };
}

/** The parts of `version`; throws InvalidVersionIdError when it is not a canonical id. */
export function parseVersion(version: string): ParsedVersion {
  const parsed = tryParseVersion(version);
  if (parsed === null) throw new InvalidVersionIdError(version);
  return parsed;
}

/** "7" for (7, 0), "7.3" for (7, 3). */
export function formatVersion(major: number, minor = 0): VersionId {
  if (!Number.isSafeInteger(major) || major < 0 || !Number.isSafeInteger(minor) || minor < 0) {
    throw new RangeError(`invalid version parts ${major}.${minor}`);
  }
  return minor === 0 ? String(major) : `${major}.${minor}`;
}

export const majorOf = (version: VersionId): number => parseVersion(version).major;

/** 0 for a major version. */
export const minorOf = (version: VersionId): number => parseVersion(version).minor;

export const isMajorVersion = (version: VersionId): boolean => parseVersion(version).minor === 0;

/** The major version a version is built on: "7" for "7.3" and for "7". */
export const majorVersionOf = (version: VersionId): VersionId => String(majorOf(version));

/** Orders by major, then minor (numerically: "7.10" after "7.9"). */
export function compareVersions(a: VersionId, b: VersionId): number {
  const x = parseVersion(a);
  const y = parseVersion(b);
  return x.major - y.major || x.minor - y.minor;
}
