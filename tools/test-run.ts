// `npm test`: turbo runs every package's lint, typecheck and tests one after another, and this
// repeats, once turbo ends with a failure, what each failed task printed about it. A package's own
// failure summary otherwise lies thousands of lines above the end of a CI log (seen: a failure in
// the end-to-end suite whose summary was followed by the whole server suite's output), beyond the
// part of the log a reader is shown.
import { spawn } from "node:child_process";
import { stripVTControlCharacters } from "node:util";

const TURBO_ARGS = ["run", "lint", "typecheck", "test", "--concurrency=1", "--continue"];
/** Lines kept of a failed task that printed no test summary (a lint or type error). */
const TAIL_LINES = 60;
/** At most this much of a task's test failures is repeated. */
const KEEP_CHARS = 20_000;

interface Task {
  tail: string[];
  failures: string;
  inFailures: boolean;
  failed: boolean;
}

const tasks = new Map<string, Task>();

function taskOf(name: string): Task {
  let task = tasks.get(name);
  if (!task) {
    task = { tail: [], failures: "", inFailures: false, failed: false };
    tasks.set(name, task);
  }
  return task;
}

function keep(raw: string): void {
  const line = stripVTControlCharacters(raw);
  // turbo names a task that failed "<package>#<task>", before "ERROR"...
  const error = /^(\S+)#(\S+):\s+ERROR\s/.exec(line);
  if (error) taskOf(`${error[1]}:${error[2]}`).failed = true;
  // ...and prefixes what a task prints with "<package>:<task>: ".
  const match = /^(@?[\w./-]+:[\w-]+): ?(.*)$/.exec(line);
  if (!match) return;
  const task = taskOf(match[1]);
  const text = match[2];
  task.tail.push(text);
  if (task.tail.length > TAIL_LINES) task.tail.shift();
  // vitest's summary of what failed starts with a rule naming it and ends before its totals.
  if (/⎯ (Failed|Unhandled) /.test(text)) task.inFailures = true;
  else if (/^\s*Test Files\s/.test(text)) task.inFailures = false;
  if (task.inFailures && task.failures.length < KEEP_CHARS) task.failures += `${text}\n`;
}

function relay(stream: NodeJS.ReadableStream, out: NodeJS.WriteStream): void {
  let rest = "";
  stream.setEncoding("utf8");
  stream.on("data", (chunk: string) => {
    out.write(chunk);
    const lines = (rest + chunk).split("\n");
    rest = lines.pop() ?? "";
    for (const line of lines) keep(line);
  });
  stream.on("end", () => rest && keep(rest));
}

// Arguments after `npm test --` reach turbo (`-- --filter=@sift/mcp`).
const turbo = spawn("turbo", [...TURBO_ARGS, ...process.argv.slice(2)], { stdio: ["inherit", "pipe", "pipe"] });
// A CI's timeout stops turbo too, whose own handling stops the tasks it runs. A Ctrl-C reaches
// turbo from the terminal itself: this process only waits for it to end.
let stopped = false;
process.on("SIGTERM", () => {
  stopped = true;
  turbo.kill("SIGTERM");
});
process.on("SIGINT", () => {});
relay(turbo.stdout, process.stdout);
relay(turbo.stderr, process.stderr);
turbo.on("close", (code, signal) => {
  // turbo stopped so may exit with 0: a run that did not finish never passes (128 + SIGTERM's 15).
  const status = stopped ? 143 : (code ?? (signal ? 1 : 0));
  if (status !== 0) {
    const failed = [...tasks].filter(([, task]) => task.failed);
    for (const [name, task] of failed) {
      console.error(`\n==== ${name} failed; what it printed about it (repeated from above) ====`);
      console.error(task.failures || task.tail.join("\n"));
    }
  }
  process.exit(status);
});
