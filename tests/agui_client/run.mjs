// Drives one run of POST /ag-ui with @ag-ui/client's HttpAgent and prints every event it applied,
// one JSON object a line. Its one argument is a JSON object: url, token, threadId, messages,
// resume, and killOn (an event type: the process kills itself when it sees one, as a client that
// crashes mid-run would). A run that fails prints {"clientError": message} last.
import { HttpAgent } from "@ag-ui/client";

const spec = JSON.parse(process.argv[2]);
const agent = new HttpAgent({
  url: spec.url,
  headers: spec.token ? { Authorization: `Bearer ${spec.token}` } : {},
  threadId: spec.threadId,
  initialMessages: spec.messages ?? [],
});
const print = (value) => process.stdout.write(JSON.stringify(value) + "\n");

try {
  await agent.runAgent(spec.resume ? { resume: spec.resume } : {}, {
    onEvent({ event }) {
      print(event);
      if (spec.killOn && event.type === spec.killOn) process.kill(process.pid, "SIGKILL");
    },
  });
  print({ pendingInterrupts: agent.pendingInterrupts.map((i) => i.id), messages: agent.messages });
} catch (error) {
  print({ clientError: String(error?.message ?? error) });
}
