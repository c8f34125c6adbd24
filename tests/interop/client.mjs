// Drives lazytools with the official TypeScript MCP client and prints what it saw as one JSON line.
// Usage: node client.mjs stdio <command> [args...]   |   node client.mjs http <url>
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const [kind, target, ...args] = process.argv.slice(2);
const clientName = process.env.INTEROP_CLIENT_NAME ?? "Visual Studio Code";
// Over HTTP, list_changed travels on the standalone GET stream, which the client opens on its own after the
// handshake; a notification sent before it is open is lost. This resolves once the server has accepted it.
let streamOpened;
const streamOpen = new Promise((resolve) => { streamOpened = resolve; });
const watchingFetch = async (url, init) => {
  const response = await fetch(url, init);
  if ((init?.method ?? "GET") === "GET" && response.ok) streamOpened();
  return response;
};
const transport = kind === "http"
  ? new StreamableHTTPClientTransport(new URL(target), { fetch: watchingFetch })
  : new StdioClientTransport({ command: target, args, stderr: "inherit", cwd: process.env.INTEROP_CWD });

const events = [];
const client = new Client({ name: clientName, version: "1.0.0" });
let changed;
const notified = new Promise((resolve) => { changed = resolve; });
client.setNotificationHandler(ToolListChangedNotificationSchema, () => { events.push("list_changed"); changed(); });

const text = (result) => result.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");
const names = async () => (await client.listTools()).tools.map((t) => t.name);

await client.connect(transport);
if (kind === "http") {
  let timer;
  await Promise.race([streamOpen, new Promise((resolve) => { timer = setTimeout(resolve, 10000); })]);
  clearTimeout(timer);
}
const out = { server: client.getServerVersion(), capabilities: client.getServerCapabilities() };
out.first = await names();
const search = await client.callTool({ name: "search_tools", arguments: { query: process.env.INTEROP_QUERY } });
events.push("result");
out.search = text(search);
if (clientName !== "claude-ai") {
  let timer;
  await Promise.race([notified, new Promise((resolve) => { timer = setTimeout(resolve, 10000); })]);
  clearTimeout(timer); // a pending timer would keep node alive for the rest of the 10 s after the notification
}
out.events = events;
out.relisted = await names();
const tool = process.env.INTEROP_TOOL;
const args_ = JSON.parse(process.env.INTEROP_ARGS);
if (out.relisted.includes(tool)) {
  const direct = await client.callTool({ name: tool, arguments: args_ });
  out.direct = { text: text(direct), isError: direct.isError ?? false, structured: direct.structuredContent ?? null };
}
const bridged = await client.callTool({ name: "invoke_tool", arguments: { tool_name: tool, arguments: args_ } });
out.invoked = { text: text(bridged), isError: bridged.isError ?? false, structured: bridged.structuredContent ?? null };
const bad = await client.callTool({ name: "invoke_tool", arguments: { tool_name: tool + "x", arguments: {} } });
out.unknown = { text: text(bad), isError: bad.isError ?? false };
await client.close();
console.log(JSON.stringify(out));
