import { checkRecord } from "../../records/validate.ts";
import type { SearchRecord } from "../../ports/engine.ts";
import type { RecordError } from "./errors.ts";
import type { RecordSink } from "./format-parser.ts";

export interface ParsedBatch {
  /** Valid records in file order; a later record with the same id replaces an earlier one. */
  records: SearchRecord[];
  /** Skipped records in file order, one entry per failing field. */
  errors: RecordError[];
}

/**
 * Validates candidates with the same checkRecord the Records endpoint uses and groups them into
 * batches of `batchSize` entries (records plus errors, so a file of bad lines cannot grow one
 * batch without bound).
 */
export class BatchCollector implements RecordSink {
  private readonly generateId: () => string;
  private readonly batchSize: number;
  private current: ParsedBatch = { records: [], errors: [] };
  private size = 0;
  private full: ParsedBatch[] = [];

  constructor(generateId: () => string, batchSize: number) {
    this.generateId = generateId;
    this.batchSize = batchSize;
  }

  record(candidate: unknown, line: number): void {
    const checked = checkRecord(candidate, { generateId: this.generateId });
    if (checked.ok) {
      this.current.records.push(checked.record);
    } else {
      for (const { field, message } of checked.errors) {
        this.current.errors.push(field === "" ? { line, message } : { line, field, message });
      }
    }
    this.added();
  }

  error(line: number, message: string, field?: string): void {
    this.current.errors.push(field === undefined ? { line, message } : { line, field, message });
    this.added();
  }

  /** Batches completed since the last call. */
  takeFull(): ParsedBatch[] {
    const full = this.full;
    this.full = [];
    return full;
  }

  /** Everything left, including a partial batch. */
  takeAll(): ParsedBatch[] {
    if (this.size > 0) this.complete();
    return this.takeFull();
  }

  private added(): void {
    if (++this.size >= this.batchSize) this.complete();
  }

  private complete(): void {
    this.full.push(this.current);
    this.current = { records: [], errors: [] };
    this.size = 0;
  }
}
