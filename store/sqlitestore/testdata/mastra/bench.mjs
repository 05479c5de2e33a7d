// Times Mastra's LibSQLStore saving turns, a user and an assistant message
// each, the way Mastra's memory saves a turn: one saveMessages call (one
// transaction). Driven by BenchmarkTurnVsMastra (../../bench_mastra_test.go):
// it reads "N" lines on stdin, saves N turns for each, and answers with
// the elapsed microseconds and the process's CPU microseconds (user and
// system) on stdout, so that Go can interleave rounds of
// Mastra and of spool's store in one run. Usage: node bench.mjs DBPATH.
import { LibSQLStore } from "@mastra/libsql";
import { createInterface } from "node:readline";

const storage = new LibSQLStore({ id: "bench", url: "file:" + process.argv[2] });
await storage.init();
const memory = await storage.getStore("memory");
const threadId = "thread-bench", resourceId = "user-bench";
const now = new Date();
await memory.saveThread({ thread: { id: threadId, resourceId, title: "bench", createdAt: now, updatedAt: now, metadata: {} } });

let n = 0;
const text = "Where is my order 1042? It was due on Friday and the tracking page says nothing.";
const answer = "Order 1042 shipped from our warehouse on Monday and should arrive by Thursday.";
const message = (role, t) => ({
  id: `m-${process.pid}-${n++}`, threadId, resourceId, role, type: "v2", createdAt: new Date(),
  content: { format: 2, parts: [{ type: "text", text: t }] },
});

process.stdout.write("ready\n");
for await (const line of createInterface({ input: process.stdin })) {
  const turns = parseInt(line, 10);
  if (!(turns > 0)) break;
  const start = process.hrtime.bigint(), cpu = process.cpuUsage();
  for (let i = 0; i < turns; i++) {
    await memory.saveMessages({ messages: [message("user", text), message("assistant", answer)] });
  }
  const used = process.cpuUsage(cpu);
  process.stdout.write(`${(process.hrtime.bigint() - start) / 1000n} ${used.user + used.system}\n`);
}
