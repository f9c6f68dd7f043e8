// What the runners for tests in other languages share (run-bot.js,
// run-bridge.js, run-flip.js, run-realbot.js): they stop when their
// standard input ends or on a signal, and answer commands one JSON line
// each.
import { createInterface } from "node:readline";

/**
 * Disposes mf and exits once standard input ends or SIGTERM or SIGINT
 * arrives (once, however many of those come).
 * @param {{ dispose(): Promise<void> }} mf
 */
export function stopWhenInputEnds(mf) {
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await mf.dispose();
    process.exit(0);
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
  process.stdin.on("end", stop);
  process.stdin.on("close", stop);
}

/**
 * Answers each non-blank line of standard input, one at a time and in
 * order, with the JSON line of command(JSON.parse(line)), or of failed(e)
 * if that throws.
 * @param {(c: any) => Promise<any>} command
 * @param {(e: any) => any} failed
 */
export function answerLines(command, failed) {
  const lines = createInterface({ input: process.stdin });
  let queue = Promise.resolve();
  lines.on("line", (line) => {
    if (!line.trim()) return;
    queue = queue.then(async () => {
      let answer;
      try {
        answer = await command(JSON.parse(line));
      } catch (e) {
        answer = failed(e);
      }
      process.stdout.write(JSON.stringify(answer) + "\n");
    });
  });
}
