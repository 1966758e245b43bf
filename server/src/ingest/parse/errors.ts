/** A record that was skipped, named by the 1-based line of the file where it starts. */
export interface RecordError {
  line: number;
  /** The offending field (`weight`, `images[2]`), absent when the record as a whole is unreadable. */
  field?: string;
  message: string;
}

/**
 * The file cannot be read past `line`: empty or unsupported input, a CSV header or quoting error,
 * malformed JSON inside an array, a corrupt gzip stream. Records before that point were already
 * delivered; whether they are kept is the caller's decision.
 */
export class UploadParseError extends Error {
  readonly line: number;

  constructor(line: number, message: string) {
    super(message);
    this.name = "UploadParseError";
    this.line = line;
  }
}

/** The upload passes a limit of the whole file (its expanded size, its record count). */
export class UploadLimitError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UploadLimitError";
  }
}
