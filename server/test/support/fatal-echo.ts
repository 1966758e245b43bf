// A vitest global setup: when a test process dies of a native failure, vitest's summary names only
// the signal (SIGTRAP for a failed check in V8, SIGABRT for one in Node), and the message the
// process printed before dying (V8's "# Fatal error" block, Node's "FATAL ERROR") lies far above
// the summary in a long CI log. This keeps that message and prints it again when the run ends.
const NATIVE_FAILURE = /# Fatal error|Check failed|FATAL ERROR|Assertion failed|Native stack trace/;
/** How much of what follows the first line of the message is kept (its native stack). */
const KEEP_CHARS = 6_000;

export default function setup(): () => void {
  const write = process.stderr.write.bind(process.stderr);
  let kept = "";
  let keeping = false;
  process.stderr.write = ((chunk: string | Uint8Array, ...rest: never[]) => {
    const text = typeof chunk === "string" ? chunk : Buffer.from(chunk).toString("utf8");
    if (!keeping && NATIVE_FAILURE.test(text)) keeping = true;
    if (keeping && kept.length < KEEP_CHARS) kept += text.slice(0, KEEP_CHARS - kept.length);
    return write(chunk, ...rest);
  }) as typeof process.stderr.write;
  return () => {
    process.stderr.write = write;
    if (kept) write(`\nA test process printed this before it died (repeated from above):\n${kept}\n`);
  };
}
